/// @file
/// @brief A detector table and random detector pairs for testing
/// detector-indexed LOR sources against explicit end points.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/random.hpp"

namespace resproj_test {

/// Detectors on a cylinder around the origin (radius `radius`, `rings`
/// rings over `length` along axis 2), random pairs between them, and the
/// same LORs as explicit end points.
template <class T> struct detector_lor_set {
  std::vector<T> detectors;        ///< xyz per detector
  std::vector<std::int32_t> pairs; ///< [a b] per LOR
  std::vector<T> starts, ends;     ///< the same LORs, explicit

  detector_lor_set(std::size_t count, double radius, double length, std::uint64_t seed,
                   int per_ring = 72, int rings = 6) {
    const double pi = 3.14159265358979323846;
    for (int r = 0; r < rings; ++r)
      for (int c = 0; c < per_ring; ++c) {
        const double phi = 2 * pi * c / per_ring;
        detectors.push_back(T(radius * std::cos(phi)));
        detectors.push_back(T(radius * std::sin(phi)));
        detectors.push_back(T(-0.5 * length + length * (r + 0.5) / rings));
      }
    const int n = per_ring * rings;
    rng random(seed);
    for (std::size_t i = 0; i < count; ++i) {
      const auto a = std::int32_t(random.uniform() * n) % n;
      auto b = std::int32_t(random.uniform() * n) % n;
      if (b == a)
        b = (b + 1) % n;
      pairs.push_back(a);
      pairs.push_back(b);
      for (int k = 0; k < 3; ++k) {
        starts.push_back(detectors[3 * std::size_t(a) + std::size_t(k)]);
        ends.push_back(detectors[3 * std::size_t(b) + std::size_t(k)]);
      }
    }
  }
  std::size_t size() const { return pairs.size() / 2; }
  std::size_t num_detectors() const { return detectors.size() / 3; }
};

} // namespace resproj_test
