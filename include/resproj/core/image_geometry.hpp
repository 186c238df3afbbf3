/// @file
/// @brief `image_geometry`: shape, voxel size and origin of a voxel image,
/// validated on construction.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Voxel grid of an image (see docs/projection.md, "Image").
///
/// - `shape = (n0, n1, n2)`, C-ordered: voxel `[i0,i1,i2]` is at
///   `(i0 * n1 + i1) * n2 + i2`.
/// - `voxel_size = (s0, s1, s2)` in any length unit (mm in examples).
/// - `origin`: world coordinates of the centre of voxel `[0,0,0]`.
///
/// Trivially copyable; an instance always holds validated values
/// (use the constructor or `centred`, which throw on bad input).
class image_geometry {
public:
  /// @param shape       number of voxels along each axis, all > 0
  /// @param voxel_size  voxel edge lengths, all finite and > 0
  /// @param origin      centre of voxel [0,0,0], all finite
  /// @throws invalid_argument naming the first bad component.
  image_geometry(const std::array<std::int64_t, 3> &shape,
                 const std::array<double, 3> &voxel_size,
                 const std::array<double, 3> &origin)
      : shape_(shape), voxel_size_(voxel_size), origin_(origin) {
    for (std::size_t k = 0; k < 3; ++k) {
      const std::string idx = "[" + std::to_string(k) + "]";
      if (shape[k] <= 0)
        detail::throw_invalid("shape" + idx,
                              "must be > 0 (got " + std::to_string(shape[k]) + ")");
      if (!std::isfinite(voxel_size[k]) || !(voxel_size[k] > 0))
        detail::throw_invalid("voxel_size" + idx, "must be finite and > 0 (got " +
                                                      std::to_string(voxel_size[k]) +
                                                      ")");
      if (!std::isfinite(origin[k]))
        detail::throw_invalid("origin" + idx,
                              "must be finite (got " + std::to_string(origin[k]) + ")");
    }
    // The voxel count must fit in a signed 64-bit index.
    const double n = double(shape[0]) * double(shape[1]) * double(shape[2]);
    if (n > 9.0e18)
      detail::throw_invalid("shape", "too many voxels for 64-bit indexing");
  }

  /// Geometry whose image box is centred on (0,0,0):
  /// `origin_k = -(n_k - 1) * s_k / 2`.
  /// @throws invalid_argument as the constructor.
  static image_geometry centred(const std::array<std::int64_t, 3> &shape,
                                const std::array<double, 3> &voxel_size) {
    std::array<double, 3> origin{};
    for (std::size_t k = 0; k < 3; ++k)
      origin[k] = -(double(shape[k]) - 1.0) * voxel_size[k] / 2.0;
    return image_geometry(shape, voxel_size, origin);
  }

  const std::array<std::int64_t, 3> &shape() const noexcept { return shape_; }
  const std::array<double, 3> &voxel_size() const noexcept { return voxel_size_; }
  const std::array<double, 3> &origin() const noexcept { return origin_; }
  /// n0 * n1 * n2.
  std::int64_t num_voxels() const noexcept { return shape_[0] * shape_[1] * shape_[2]; }
  /// Lower edge of the image box along axis k: `origin_k - s_k / 2`.
  double box_min(int k) const noexcept {
    return origin_[std::size_t(k)] - 0.5 * voxel_size_[std::size_t(k)];
  }
  /// Upper edge of the image box along axis k.
  double box_max(int k) const noexcept {
    return box_min(k) + double(shape_[std::size_t(k)]) * voxel_size_[std::size_t(k)];
  }

  friend bool operator==(const image_geometry &a, const image_geometry &b) {
    return a.shape_ == b.shape_ && a.voxel_size_ == b.voxel_size_ &&
           a.origin_ == b.origin_;
  }
  friend bool operator!=(const image_geometry &a, const image_geometry &b) {
    return !(a == b);
  }

private:
  std::array<std::int64_t, 3> shape_;
  std::array<double, 3> voxel_size_;
  std::array<double, 3> origin_;
};

static_assert(std::is_trivially_copyable_v<image_geometry>);

namespace detail {

/// Checks that `g` holds in the value type T of a projection (projections
/// in T round it to T once; a geometry valid in double may not hold in
/// float): voxel sizes finite, > 0 and not subnormal in T, the origin and
/// both box edges finite in T.
/// @throws invalid_argument naming the component, as
///         "<name>.voxel_size[k]", "<name>.origin[k]", "<name>.box_min[k]"
///         or "<name>.box_max[k]".
template <class T>
void check_geometry_in(const image_geometry &g, const std::string &name) {
  static_assert(std::is_floating_point_v<T>, "a floating-point value type");
  const char *type = std::is_same_v<T, float>    ? "float"
                     : std::is_same_v<T, double> ? "double"
                                                 : "the value type";
  const auto finite = [](double v) {
    return std::isfinite(v) && std::fabs(v) <= double(std::numeric_limits<T>::max());
  };
  const auto fail = [&](const char *component, int k, double v, const char *rule) {
    char got[32];
    std::snprintf(got, sizeof got, "%.6g", v);
    throw_invalid(name + "." + component + "[" + std::to_string(k) + "]",
                  std::string(rule) + " in " + type + " (got " + got + ")");
  };
  for (int k = 0; k < 3; ++k) {
    const double s = g.voxel_size()[std::size_t(k)];
    if (!finite(s) || !(T(s) >= std::numeric_limits<T>::min()))
      fail("voxel_size", k, s, "must be finite, > 0 and not subnormal");
    const double o = g.origin()[std::size_t(k)];
    if (!finite(o))
      fail("origin", k, o, "must be finite");
    if (!finite(g.box_min(k)))
      fail("box_min", k, g.box_min(k), "must be finite");
    if (!finite(g.box_max(k)))
      fail("box_max", k, g.box_max(k), "must be finite");
  }
}

} // namespace detail

RESPROJ_NAMESPACE_END
