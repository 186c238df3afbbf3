/// @file
/// @brief Deterministic random numbers for tests: the same seed gives the
/// same numbers with every compiler and standard library (no
/// std::*_distribution, whose algorithms are implementation-defined).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace resproj_test {

/// xoshiro256** seeded through splitmix64.
class rng {
public:
  explicit rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto &s : state_) {
      x += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      s = z ^ (z >> 31);
    }
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n), n > 0 (negligible modulo bias for small n).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  /// Standard normal (Box-Muller).
  double normal() {
    const double kTwoPi = 6.283185307179586476925286766559;
    double u1 = uniform();
    while (u1 <= 0.0)
      u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  }
  /// Unit vector uniformly distributed on the sphere.
  void unit_vector(double v[3]) {
    for (;;) {
      double n2 = 0;
      for (int k = 0; k < 3; ++k) {
        v[k] = normal();
        n2 += v[k] * v[k];
      }
      if (n2 > 1e-12) {
        const double inv = 1.0 / std::sqrt(n2);
        for (int k = 0; k < 3; ++k)
          v[k] *= inv;
        return;
      }
    }
  }

private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t state_[4];
};

/// `n` values uniform in [lo, hi), rounded to T.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed, double lo = 0.0,
                             double hi = 1.0) {
  rng r(seed);
  std::vector<T> v(n);
  for (auto &x : v)
    x = T(r.uniform(lo, hi));
  return v;
}

} // namespace resproj_test
