/// @file
/// @brief `device_image<T>`: an image resident in device memory.
#pragma once

#include <cstddef>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// An image that stays in device memory until destroyed: geometry plus a
/// stream-ordered `device_buffer<T>`. Allocate once, upload, run any number
/// of compute calls, download, destroy.
///
/// Move-only. Thread safety: distinct objects may be used from distinct
/// threads; one object must not be modified concurrently. Stream safety:
/// the image is allocated and freed on the stream given at construction;
/// using it on another stream is ordered by the caller (events).
template <class T> class device_image {
public:
  /// Allocates (uninitialised) on the current device, ordered on `s`.
  /// @throws gpu_out_of_memory, gpu_error. Does not synchronise.
  device_image(const image_geometry &geometry, stream_ref s)
      : geometry_(geometry), buffer_(std::size_t(geometry.num_voxels()), s) {}

  const image_geometry &geometry() const noexcept { return geometry_; }
  T *data() noexcept { return buffer_.data(); }
  const T *data() const noexcept { return buffer_.data(); }
  std::size_t size() const noexcept { return buffer_.size(); }
  int device() const noexcept { return buffer_.device(); }
  stream_ref stream() const noexcept { return buffer_.stream(); }
  device_buffer<T> &buffer() noexcept { return buffer_; }
  const device_buffer<T> &buffer() const noexcept { return buffer_; }

  device_image_view<T> view() noexcept {
    return device_image_view<T>(buffer_.data(), geometry_, buffer_.device());
  }
  device_image_view<const T> view() const noexcept {
    return device_image_view<const T>(buffer_.data(), geometry_, buffer_.device());
  }
  device_image_view<const T> cview() const noexcept { return view(); }
  operator device_image_view<T>() noexcept { return view(); }
  operator device_image_view<const T>() const noexcept { return view(); }

  /// Copies `host` (all voxels) to the device, asynchronously on `s`.
  /// From pinned memory the call returns at once; from pageable memory the
  /// runtime stages the copy and the call may block.
  /// @throws invalid_argument ("host") if `host.size() != size()`.
  void upload(span<const T> host, stream_ref s) {
    check_size(host.size(), "host");
    buffer_.copy_from_host(host, s);
  }
  void upload(span<const T> host) { upload(host, stream()); }

  /// Copies all voxels to `host`, asynchronously on `s` (synchronise `s`
  /// before reading `host`).
  /// @throws invalid_argument ("host") if `host.size() != size()`.
  void download(span<T> host, stream_ref s) const {
    check_size(host.size(), "host");
    buffer_.copy_to_host(host, s);
  }
  void download(span<T> host) const { download(host, stream()); }

  /// Sets every voxel to `value`, asynchronously on `s`.
  void fill(T value, stream_ref s) { buffer_.fill(value, s); }
  /// Sets every voxel to 0, asynchronously on `s`.
  void zero(stream_ref s) { buffer_.fill(T(0), s); }
  void zero() { zero(stream()); }

private:
  void check_size(std::size_t n, const char *argument) const {
    if (n != buffer_.size())
      resproj::detail::throw_invalid(argument, "holds " + std::to_string(n) +
                                                   " values, the image has " +
                                                   std::to_string(buffer_.size()));
  }

  image_geometry geometry_;
  device_buffer<T> buffer_;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
