/// @file
/// @brief `image_grid<T>`: the image geometry in the value type T, with
/// strides and box edges precomputed once per call on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// Geometry as the per-LOR math uses it. Box edges are computed in double
/// and rounded once to T, so every backend sees identical T values.
template <class T> struct image_grid {
  std::int64_t shape[3];
  std::int64_t stride[3]; ///< element strides of axes 0, 1, 2 (C order)
  T voxel_size[3];
  T origin[3];  ///< centre of voxel [0,0,0]
  T box_min[3]; ///< origin - voxel_size / 2
  T box_max[3]; ///< box_min + shape * voxel_size

  /// Converts a validated geometry. Host only.
  static image_grid from(const image_geometry &g) noexcept {
    image_grid r{};
    for (int k = 0; k < 3; ++k) {
      const std::size_t a = std::size_t(k);
      r.shape[k] = g.shape()[a];
      r.voxel_size[k] = T(g.voxel_size()[a]);
      r.origin[k] = T(g.origin()[a]);
      r.box_min[k] = T(g.box_min(k));
      r.box_max[k] = T(g.box_max(k));
    }
    r.stride[2] = 1;
    r.stride[1] = r.shape[2];
    r.stride[0] = r.shape[1] * r.shape[2];
    return r;
  }
};

static_assert(std::is_trivially_copyable_v<image_grid<float>>);

} // namespace math
RESPROJ_NAMESPACE_END
