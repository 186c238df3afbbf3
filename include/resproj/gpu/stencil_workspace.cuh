/// @file
/// @brief `stencil_workspace`: caller-owned device memory for the stencil
/// layout of an image (math/stencil_layout.hpp), which the TOF back
/// projections (list-mode and sinogram) use when
/// `tuning::stencil` names one: every sample's four amounts go
/// into it with one or two vector atomics (one memory sector, instead of
/// two to four atomics into the image), and a reduction at the end of the
/// call adds it into the image.
///
/// About 4 x the image's memory with the default width 2 (55 MB for the
/// 215 x 215 x 71 dmi image; width 4: about 8 x). Between calls the
/// workspace holds zeros (every call leaves it so), so one workspace serves
/// any number of calls, on one stream at a time.
///
/// When it pays: list-mode events sorted by `listmode_order`'s TOF key on
/// an image that stays in the L2, most in large calls with lock-step; with
/// width 2 also over OSEM subsets (`recon::gpu_listmode_backend` owns one
/// there). It loses in random order (the working set misses L2), for the
/// sinogram back projection, with width 4 over OSEM subsets, and on images
/// several times the L2 (such as tb's), where the lanes of a sorted warp no
/// longer share the sectors they update. The measurements are in
/// docs/kernel-choices.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/gpu/detail/stencil_kernels.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/stencil_layout.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

namespace detail {
/// `width` if it is a stencil layout width (2 or 4).
/// @throws invalid_argument naming `name` otherwise.
inline int checked_stencil_width(int width, const char *name) {
  if (width != 2 && width != 4)
    resproj::detail::throw_invalid(name, "width must be 2 or 4 (got " +
                                             std::to_string(width) + ")");
  return width;
}
} // namespace detail

/// Device memory for the stencil layout of images of one geometry.
/// RAII (device_buffer); move-only.
template <class T> class stencil_workspace {
public:
  /// Elements of the layout of `geometry` with `width` 2 (about 4 x its
  /// voxels) or 4 (about 8 x).
  static std::size_t elements_for(const image_geometry &geometry, int width = 2) {
    return std::size_t(
        math::make_stencil_layout(math::image_grid<T>::from(geometry), width).size);
  }

  /// Allocates the layout of `geometry` on the current device,
  /// stream-ordered on `s`, and zeroes it there.
  /// @param width  2 (default: 1.5 vector atomics per sample on average) or
  ///               4 (twice the memory, one aligned float4 atomic per
  ///               sample; measured within 2% of width 2 for sorted events
  ///               with lock-step, slower otherwise)
  /// @throws invalid_argument("width") for another width; as device_buffer
  ///         (stream, out of memory).
  /// Asynchronous (the zeroing is queued on `s`).
  stencil_workspace(const image_geometry &geometry, stream_ref s, int width = 2)
      : geometry_(geometry), width_(detail::checked_stencil_width(width, "width")),
        buffer_(elements_for(geometry, width_), s) {
    clear(s);
  }

  const image_geometry &geometry() const noexcept { return geometry_; }
  int width() const noexcept { return width_; }
  std::size_t size() const noexcept { return buffer_.size(); }
  std::size_t bytes() const noexcept { return buffer_.size() * sizeof(T); }
  int device() const noexcept { return buffer_.device(); }

  /// For `tuning::stencil`.
  stencil_workspace_ref ref() noexcept {
    return {buffer_.data(), buffer_.size(), sizeof(T), buffer_.device(), width_};
  }

  /// The memory (zero between calls; for inspection).
  const device_buffer<T> &buffer() const noexcept { return buffer_; }

  /// Zeroes it on `s` (only needed after a failed call left partial sums).
  void clear(stream_ref s) { buffer_.fill(T(0), s); }

private:
  image_geometry geometry_;
  int width_;
  device_buffer<T> buffer_;
};

namespace detail {

/// Checks `ws` for a call on `image` (element type, size, device,
/// alignment) before anything is enqueued.
/// @throws invalid_argument naming `name`.
template <class T>
void check_stencil_workspace(const stencil_workspace_ref &ws,
                             const device_image_view<const T> &image, const char *name) {
  if (!ws)
    return;
  if (ws.element_size != sizeof(T))
    resproj::detail::throw_invalid(
        name, "holds elements of " + std::to_string(ws.element_size) +
                  " bytes, the call's image has " + std::to_string(sizeof(T)));
  detail::checked_stencil_width(ws.width, name);
  const auto layout =
      math::make_stencil_layout(math::image_grid<T>::from(image.geometry), ws.width);
  if (ws.elements < std::size_t(layout.size))
    resproj::detail::throw_invalid(
        name, "too small for the image: holds " + std::to_string(ws.elements) +
                  " elements, needs " + std::to_string(layout.size));
  if (ws.device != image.device)
    resproj::detail::throw_invalid(name, "is on device " + std::to_string(ws.device) +
                                             ", the image on device " +
                                             std::to_string(image.device));
  if (reinterpret_cast<std::uintptr_t>(ws.data) % 16 != 0)
    resproj::detail::throw_invalid(name, "not 16-byte aligned");
}

/// Queues `image += layout` (and the layout's zeroing) on `s`.
template <class T>
void stencil_reduce(const stencil_workspace_ref &ws, const device_image_view<T> &image,
                    stream_ref s) {
  const auto grid = math::image_grid<T>::from(image.geometry);
  const auto layout = math::make_stencil_layout(grid, ws.width);
  const std::size_t voxels = std::size_t(image.geometry.num_voxels());
  launch(stencil_reduce_kernel<T>, (voxels + 255) / 256, 256, s, "stencil_reduce_kernel",
         grid, layout, static_cast<T *>(ws.data), image.data);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
