/// @file
/// @brief Test-side description of an image grid, independent of the library.
///
/// Standard library only. `grid::from` copies any object that has
/// `shape()`, `voxel_size()` and `origin()` accessors (such as
/// `resproj::image_geometry`) without including the library.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace resproj_test {

/// Shape, voxel size and origin (centre of voxel [0,0,0]) of an image, in
/// double, as docs/projection.md "Image" defines them.
struct grid {
  std::array<std::int64_t, 3> shape{1, 1, 1};
  std::array<double, 3> voxel_size{1, 1, 1};
  std::array<double, 3> origin{0, 0, 0};

  /// Copies a geometry object with shape()/voxel_size()/origin() accessors.
  template <class Geometry> static grid from(const Geometry &g) {
    grid r;
    for (int k = 0; k < 3; ++k) {
      r.shape[k] = std::int64_t(g.shape()[k]);
      r.voxel_size[k] = double(g.voxel_size()[k]);
      r.origin[k] = double(g.origin()[k]);
    }
    return r;
  }

  /// Grid whose box is centred on `centre` (default: the world origin).
  static grid centred(const std::array<std::int64_t, 3> &shape,
                      const std::array<double, 3> &voxel_size,
                      const std::array<double, 3> &centre = {0, 0, 0}) {
    grid r;
    r.shape = shape;
    r.voxel_size = voxel_size;
    for (int k = 0; k < 3; ++k)
      r.origin[k] = centre[k] - (double(shape[k]) - 1.0) * voxel_size[k] / 2.0;
    return r;
  }

  std::int64_t num_voxels() const { return shape[0] * shape[1] * shape[2]; }
  /// C-order linear index of voxel [i0, i1, i2].
  std::int64_t index(std::int64_t i0, std::int64_t i1, std::int64_t i2) const {
    return (i0 * shape[1] + i1) * shape[2] + i2;
  }
  /// Image box along axis k: [box_min(k), box_max(k)].
  double box_min(int k) const { return origin[k] - 0.5 * voxel_size[k]; }
  double box_max(int k) const { return box_min(k) + double(shape[k]) * voxel_size[k]; }
  double extent(int k) const { return double(shape[k]) * voxel_size[k]; }
  double centre(int k) const { return 0.5 * (box_min(k) + box_max(k)); }
  /// Half the length of the box diagonal.
  double half_diagonal() const {
    double s = 0;
    for (int k = 0; k < 3; ++k)
      s += extent(k) * extent(k);
    return 0.5 * std::sqrt(s);
  }
  /// World coordinate of the centre of plane (voxel index) i along axis k.
  double plane_centre(int k, double i) const { return origin[k] + i * voxel_size[k]; }
};

} // namespace resproj_test
