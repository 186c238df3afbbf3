/// @file
/// @brief `cpu::fixed_point_image<T>`: the host accumulator of the
/// reproducible back projection (`cpu::back` with a fixed-point image,
/// cpu/projector.hpp). It holds one 64-bit integer per voxel with exponent
/// e (core/fixed_point.hpp) and persists across calls, so the sum of any
/// number of back projections into it is bitwise the same whatever the
/// thread count, the accumulation strategy and the way the LORs were split
/// into calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/fixed_point.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/math/fixed_point.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace cpu {

/// A fixed-point image in host memory: `geometry().num_voxels()` signed
/// 64-bit integers, voxel value `acc * 2^-exponent()`.
///
/// Copyable and movable like a std::vector; every member is synchronous
/// (host memory only). Thread safety: const members may be called
/// concurrently; calls that modify one accumulator (`cpu::back`, `clear`)
/// must not overlap (`cpu::back` parallelises itself: `options`).
template <class T> class fixed_point_image {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "fixed_point_image<T> needs T = float or double");

public:
  using value_type = T;

  /// A zeroed accumulator.
  /// @param geometry  the image's geometry (must hold in T)
  /// @param exponent  e in [fixed_point_min_exponent, fixed_point_max_exponent]:
  ///                  resolution 2^-e, range +-2^(63 - e)
  /// @throws invalid_argument naming "exponent" or "geometry.<component>".
  explicit fixed_point_image(const image_geometry &geometry,
                             int exponent = fixed_point_default_exponent)
      : geometry_(geometry), exponent_(exponent) {
    resproj::detail::check_fixed_point_exponent(exponent, "exponent");
    resproj::detail::check_geometry_in<T>(geometry, "geometry");
    values_.assign(std::size_t(geometry.num_voxels()), 0);
  }

  const image_geometry &geometry() const noexcept { return geometry_; }
  int exponent() const noexcept { return exponent_; }
  std::size_t size() const noexcept { return values_.size(); }
  /// The raw integers (voxel value = integer * 2^-exponent()).
  std::int64_t *data() noexcept { return values_.data(); }
  const std::int64_t *data() const noexcept { return values_.data(); }
  span<const std::int64_t> values() const noexcept {
    return span<const std::int64_t>(values_.data(), values_.size());
  }

  /// Sets every voxel to 0.
  void clear() noexcept { std::fill(values_.begin(), values_.end(), std::int64_t(0)); }

  /// `image[v] += T(acc[v]) * 2^-e` for every voxel (one rounding per
  /// voxel, the same as `gpu::fixed_point_image::add_to`).
  /// @throws invalid_argument naming "image.data" (null) or
  ///         "image.geometry" (differs from the accumulator's).
  void add_to(image_view<T> image) const { convert(image, true); }

  /// `out[v] = T(acc[v]) * 2^-e` for every voxel (overwrites).
  /// @throws invalid_argument naming "out.data" or "out.geometry".
  void to_image(image_view<T> out) const { convert(out, false); }

private:
  void convert(const image_view<T> &image, bool accumulate) const {
    const char *data_name = accumulate ? "image.data" : "out.data";
    const char *geometry_name = accumulate ? "image.geometry" : "out.geometry";
    if (image.data == nullptr)
      resproj::detail::throw_invalid(data_name, "null pointer");
    resproj::detail::check_same_geometry(geometry_, image.geometry, geometry_name);
    const T inverse = T(1) / math::exact_power_of_two<T>(exponent_);
    for (std::size_t v = 0; v < values_.size(); ++v) {
      const T value = math::from_fixed_point(values_[v], inverse);
      image.data[v] = accumulate ? image.data[v] + value : value;
    }
  }

  image_geometry geometry_;
  int exponent_;
  std::vector<std::int64_t> values_;
};

} // namespace cpu
RESPROJ_NAMESPACE_END
