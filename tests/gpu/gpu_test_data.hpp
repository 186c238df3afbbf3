/// @file
/// @brief Random test data shared by the GPU test files (plain C++).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "resproj/core/image_geometry.hpp"
#include "resproj/core/tof.hpp"

namespace resproj_test_gpu {

/// Random LORs whose end points lie on a sphere enclosing the image box
/// (radius `outer`), plus some with end points inside the box.
template <class T>
void random_lors(std::size_t n, const resproj::image_geometry &g, std::uint32_t seed,
                 std::vector<T> &starts, std::vector<T> &ends) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  double radius = 0;
  for (int k = 0; k < 3; ++k)
    radius += std::pow(g.box_max(k) - g.box_min(k), 2);
  radius = 0.6 * std::sqrt(radius);
  starts.resize(3 * n);
  ends.resize(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool inside = i % 5 == 0;
    for (T *p : {&starts[3 * i], &ends[3 * i]}) {
      if (inside) {
        for (int k = 0; k < 3; ++k)
          p[k] = T(g.box_min(k) + uni(rng) * (g.box_max(k) - g.box_min(k)));
      } else {
        double d[3] = {normal(rng), normal(rng), normal(rng)};
        const double norm = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        for (int k = 0; k < 3; ++k)
          p[k] = T(radius * d[k] / norm);
      }
    }
  }
}

/// LORs between detectors of a small cylindrical scanner around the image.
template <class T>
void cylinder_lors(const resproj::image_geometry &g, std::vector<T> &starts,
                   std::vector<T> &ends, int rings = 6) {
  const int per_ring = 48;
  const double radius =
      0.8 * std::hypot(g.box_max(0) - g.box_min(0), g.box_max(1) - g.box_min(1));
  const double z_extent = g.box_max(2) - g.box_min(2);
  starts.clear();
  ends.clear();
  const double pi = 3.14159265358979323846;
  auto pos = [&](int ring, int c, std::vector<T> &out) {
    const double phi = 2 * pi * c / per_ring;
    out.push_back(T(radius * std::cos(phi)));
    out.push_back(T(radius * std::sin(phi)));
    out.push_back(T(-0.5 * z_extent + z_extent * (ring + 0.5) / rings));
  };
  for (int r1 = 0; r1 < rings; ++r1)
    for (int r2 = 0; r2 < rings; ++r2)
      for (int c1 = 0; c1 < per_ring; ++c1)
        for (int c2 = c1 + 1; c2 < per_ring; ++c2) {
          pos(r1, c1, starts);
          pos(r2, c2, ends);
        }
}

/// n values uniform in [lo, hi).
template <class T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, double lo = 0.0,
                             double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = T(uni(rng));
  return v;
}

/// Dot product accumulated in double.
template <class T> double dot(const std::vector<T> &a, const std::vector<T> &b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += double(a[i]) * double(b[i]);
  return s;
}

/// ||a - b|| / ||b|| over entries, skipping at most `max_flips` entries
/// whose relative difference exceeds 1e-3 (decision flips); returns +inf
/// if there are more.
template <class T>
double relative_error(const std::vector<T> &a, const std::vector<T> &b,
                      std::size_t max_flips) {
  double num = 0, den = 0;
  std::size_t flips = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    if (std::abs(d) > 1e-3 * std::abs(double(b[i])) + 1e-30 && std::abs(d) > 1e-6) {
      ++flips;
      continue;
    }
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (flips > max_flips)
    return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// A small TOF model for the reconstruction tests: 9 bins of 12 mm,
/// sigma 10 mm.
inline resproj::tof_params<float> small_tof() {
  resproj::tof_params<float> tof;
  tof.num_bins = 9;
  tof.bin_width = 12.f;
  tof.sigma = 10.f;
  return tof;
}

} // namespace resproj_test_gpu
