/// @file
/// @brief `gpu::fixed_point_image<T>`: the device accumulator of the
/// reproducible back projection (`gpu::back` with a fixed-point image,
/// gpu/projector.cuh). One 64-bit integer per voxel with exponent e
/// (core/fixed_point.hpp), added with integer atomics: the sum of any
/// number of back projections into it is bitwise the same whatever the
/// kernel, the launch configuration, the number of streams and the way the
/// LORs were split into calls. The same integers give the same image on
/// the CPU (`cpu::fixed_point_image`).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/fixed_point.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/fixed_point.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// `image[v] = (Accumulate ? image[v] : 0) + T(acc[v]) * inverse`,
/// grid-stride over the voxels.
template <class T, bool Accumulate>
RESPROJ_KERNEL void __launch_bounds__(256)
    fixed_point_convert_kernel(const std::int64_t *__restrict__ acc, std::size_t count,
                               T inverse, T *__restrict__ image) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t v = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; v < count;
       v += stride) {
    const T value = math::from_fixed_point(acc[v], inverse);
    image[v] = Accumulate ? image[v] + value : value;
  }
}

} // namespace detail

/// A fixed-point image in device memory: `geometry().num_voxels()` signed
/// 64-bit integers (a stream-ordered `device_buffer`), voxel value
/// `acc * 2^-exponent()`.
///
/// Move-only. Thread safety: as `device_image`. Stream safety: allocated
/// and freed on the stream given at construction; back projections on
/// several streams may add into it concurrently (integer atomics: the
/// result does not depend on their interleaving), but ordering them
/// against `clear`, `add_to`, `to_image` and the destruction is the
/// caller's job (events).
template <class T> class fixed_point_image {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "fixed_point_image<T> needs T = float or double");

public:
  using value_type = T;

  /// Allocates on the current device, ordered on `s`, and queues its
  /// zeroing on `s`. Does not synchronise.
  /// @param geometry  the image's geometry (must hold in T)
  /// @param s         stream of the allocation (not the legacy default stream)
  /// @param exponent  e in [fixed_point_min_exponent, fixed_point_max_exponent]:
  ///                  resolution 2^-e, range +-2^(63 - e)
  /// @throws invalid_argument naming "exponent", "geometry.<component>" or
  ///         "stream", before anything is allocated; gpu_out_of_memory,
  ///         gpu_error.
  fixed_point_image(const image_geometry &geometry, stream_ref s,
                    int exponent = fixed_point_default_exponent)
      : geometry_(checked(geometry, exponent)), exponent_(exponent),
        buffer_(std::size_t(geometry.num_voxels()), s) {
    buffer_.zero(s);
  }

  const image_geometry &geometry() const noexcept { return geometry_; }
  int exponent() const noexcept { return exponent_; }
  std::size_t size() const noexcept { return buffer_.size(); }
  int device() const noexcept { return buffer_.device(); }
  stream_ref stream() const noexcept { return buffer_.stream(); }
  /// The raw integers in device memory (voxel value = integer * 2^-e).
  std::int64_t *data() noexcept { return buffer_.data(); }
  const std::int64_t *data() const noexcept { return buffer_.data(); }
  const device_buffer<std::int64_t> &buffer() const noexcept { return buffer_; }

  /// Queues "every voxel = 0" on `s`. Does not synchronise.
  /// @throws invalid_argument("stream"); gpu_error.
  void clear(stream_ref s) { buffer_.zero(s); }
  void clear() { clear(stream()); }

  /// Queues `image[v] += T(acc[v]) * 2^-e` on `s` (one rounding per voxel,
  /// the same as `cpu::fixed_point_image::add_to`). Does not synchronise.
  /// @param image  device image of the accumulator's geometry and device
  /// @throws invalid_argument naming "stream", "image.data" (null, host
  ///         memory, another device) or "image.geometry", before anything is
  ///         queued; gpu_error if the launch fails.
  void add_to(device_image_view<T> image, stream_ref s) const { convert(image, s, true); }

  /// Queues `out[v] = T(acc[v]) * 2^-e` on `s` (overwrites). Does not
  /// synchronise.
  /// @throws as `add_to`, naming "out.data" / "out.geometry".
  void to_image(device_image_view<T> out, stream_ref s) const { convert(out, s, false); }

  /// Queues a copy of the raw integers to `host` on `s` (synchronise `s`
  /// before reading; pageable memory blocks, see `device_buffer`).
  /// @throws invalid_argument("host") if it holds fewer than `size()`.
  void download(span<std::int64_t> host, stream_ref s) const {
    if (host.size() < size())
      resproj::detail::throw_invalid("host",
                                     "too small: holds " + std::to_string(host.size()) +
                                         " elements, needs " + std::to_string(size()));
    buffer_.copy_to_host(host, s);
  }

private:
  static const image_geometry &checked(const image_geometry &geometry, int exponent) {
    resproj::detail::check_fixed_point_exponent(exponent, "exponent");
    resproj::detail::check_geometry_in<T>(geometry, "geometry");
    return geometry;
  }

  void convert(const device_image_view<T> &image, stream_ref s, bool accumulate) const {
    const char *data_name = accumulate ? "image.data" : "out.data";
    detail::require_explicit_stream(s, "stream");
    if (image.data == nullptr)
      resproj::detail::throw_invalid(data_name, "null pointer");
    resproj::detail::check_same_geometry(geometry_, image.geometry,
                                         accumulate ? "image.geometry" : "out.geometry");
    require_device_pointer(image.data, device(), data_name);
    const device_guard guard(device());
    const T inverse = T(1) / math::exact_power_of_two<T>(exponent_);
    const std::size_t count = size();
    const std::size_t blocks = std::min<std::size_t>((count + 255) / 256, 65535);
    if (accumulate)
      detail::launch(detail::fixed_point_convert_kernel<T, true>, blocks, 256, s,
                     "fixed_point_convert_kernel", data(), count, inverse, image.data);
    else
      detail::launch(detail::fixed_point_convert_kernel<T, false>, blocks, 256, s,
                     "fixed_point_convert_kernel", data(), count, inverse, image.data);
  }

  image_geometry geometry_;
  int exponent_;
  device_buffer<std::int64_t> buffer_;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
