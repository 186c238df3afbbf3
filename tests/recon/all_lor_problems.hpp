// Small problems for the all-LOR sensitivity tests of every backend: a
// reduced scanner built like "tb" (flat modules, units of rings one voxel
// apart with a gap between units), its image, an elliptic water cylinder
// and the comparison against a reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/core/image_geometry.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace resproj_test {

using resproj::image_geometry;
using resproj::scanner::polygon_scanner;

inline constexpr double pi = 3.14159265358979323846;
inline constexpr double pitch = 2.85;

/// 12 sides of 4 crystals; `units` units of `rings` rings one pitch apart,
/// `gap` extra between units; centred.
inline polygon_scanner small_tb(int units = 3, int rings = 6, double gap = 4.0,
                                double ring_pitch = pitch, int axis = 2) {
  std::vector<double> z;
  for (int r = 0; r < units * rings; ++r)
    z.push_back(ring_pitch * r + gap * (r / rings));
  const double centre = 0.5 * (z.front() + z.back());
  for (double &v : z)
    v -= centre;
  return polygon_scanner(12, 4, 4 * pitch / (2 * std::tan(pi / 12)), pitch, z, axis);
}

inline image_geometry small_image(int axis = 2) {
  std::array<std::int64_t, 3> shape{12, 12, 12};
  shape[std::size_t(axis)] = 22;
  return image_geometry::centred(shape, {pitch, pitch, pitch});
}

/// An elliptic cylinder along `axis` (semi-axes 12 and 8, |z| <= half_length).
inline std::vector<float> cylinder(const image_geometry &g, double half_length, float mu,
                                   int axis = 2) {
  std::vector<float> out(std::size_t(g.num_voxels()), 0.f);
  std::size_t o = 0;
  for (std::int64_t i0 = 0; i0 < g.shape()[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < g.shape()[1]; ++i1)
      for (std::int64_t i2 = 0; i2 < g.shape()[2]; ++i2, ++o) {
        const std::int64_t i[3] = {i0, i1, i2};
        double p[3];
        for (int k = 0; k < 3; ++k)
          p[k] =
              g.origin()[std::size_t(k)] + double(i[k]) * g.voxel_size()[std::size_t(k)];
        const double x = p[(axis + 1) % 3], y = p[(axis + 2) % 3], z = p[axis];
        if ((x / 12) * (x / 12) + (y / 8) * (y / 8) <= 1 && std::fabs(z) <= half_length)
          out[o] = mu;
      }
  return out;
}

inline void expect_close(const std::vector<float> &got, const std::vector<float> &want,
                         float tolerance = 2e-6f) {
  ASSERT_EQ(got.size(), want.size());
  const float peak = *std::max_element(want.begin(), want.end());
  ASSERT_GT(peak, 0.f);
  float worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, tolerance * peak) << "peak " << peak;
}

} // namespace resproj_test
