/// @file
/// @brief `device_image_view<T>`: the non-owning view of an image in device
/// memory that every GPU compute call takes, also over caller-owned device
/// memory (CuPy, PyTorch, cudaMalloc). Plain C++: usable from g++.
#pragma once

#include <cstddef>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Non-owning view of an image in device memory: pointer, geometry and the
/// device that holds it. Trivially copyable. `device_image_view<const T>`
/// is constructible from `device_image_view<T>`.
template <class T> struct device_image_view {
  T *data = nullptr;
  image_geometry geometry;
  int device = 0;

  /// @param data_     device (or managed) memory holding
  ///                  `geometry_.num_voxels()` values in C order
  /// @param geometry_ the image's geometry
  /// @param device_   the CUDA device that owns `data_`
  /// Nothing is checked here; compute calls check the pointer.
  device_image_view(T *data_, const image_geometry &geometry_, int device_) noexcept
      : data(data_), geometry(geometry_), device(device_) {}
  template <class U,
            class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  device_image_view(const device_image_view<U> &other) noexcept
      : data(other.data), geometry(other.geometry), device(other.device) {}

  /// The same memory as a plain `image_view` (for kernels).
  image_view<T> image() const noexcept { return image_view<T>(data, geometry); }
  /// All voxels as a span.
  span<T> values() const noexcept {
    return span<T>(data, std::size_t(geometry.num_voxels()));
  }
};

static_assert(std::is_trivially_copyable_v<device_image_view<float>>);

} // namespace gpu
RESPROJ_NAMESPACE_END
