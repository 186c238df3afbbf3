/// @file
/// @brief Non-TOF forward and back projection on the GPU against a resident
/// image and LORs in device memory. Every call launches on the caller's
/// stream and returns: no allocation, no synchronisation, no stream query,
/// no hidden copy; calls can be captured into a CUDA graph.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/image_grid.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

template <class T> struct identity { using type = T; };
template <class T> using identity_t = typename identity<T>::type;

/// Validates the arguments shared by every projection call, before any
/// work is enqueued. Pointers must be device (or managed) memory on the
/// image's device.
template <class T, class Lors>
void check_projection(const device_image_view<const T> &image, const Lors &lors,
                      const void *data, std::size_t data_size, const char *data_name,
                      const launch_options &opt, stream_ref s) {
  require_explicit_stream(s, "stream");
  if (image.data == nullptr)
    resproj::detail::throw_invalid("image.data", "null pointer");
  lors.check("lors");
  if (data_size < lors.count)
    resproj::detail::throw_invalid(data_name,
                                   "too small: holds " + std::to_string(data_size) +
                                       " elements, needs " + std::to_string(lors.count));
  if (lors.count > 0 && data == nullptr)
    resproj::detail::throw_invalid(data_name,
                                   "null pointer with size " + std::to_string(data_size));
  (void)make_lor_order(opt, lors.count); // mapping options, before any work
  if (!opt.check_pointers)
    return;
  require_device_pointer(image.data, image.device, "image.data");
  if (lors.count == 0)
    return;
  lors.for_each_region([&](const void *p, const char *name) {
    require_device_pointer(p, image.device, name);
  });
  require_device_pointer(data, image.device, data_name);
}

/// Calls `f(std::integral_constant<int, G>{})` for the runtime value g.
template <class F> void dispatch_group(int g, F &&f) {
  switch (g) {
  case 1:
    f(std::integral_constant<int, 1>{});
    break;
  case 2:
    f(std::integral_constant<int, 2>{});
    break;
  case 4:
    f(std::integral_constant<int, 4>{});
    break;
  case 8:
    f(std::integral_constant<int, 8>{});
    break;
  case 16:
    f(std::integral_constant<int, 16>{});
    break;
  default:
    f(std::integral_constant<int, 32>{});
    break;
  }
}

/// Selects the forward kernel for (T, index type I, lanes per LOR G) and
/// the LOR source type.
template <class Lors> struct forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return forward_kernel<T, I, G, Lors>;
  }
};

/// Selects the back projection kernel.
template <class Lors> struct back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return back_kernel<T, I, G, Lors>;
  }
};

/// Launches a per-LOR kernel `Kernels::get<T, I, G>()` over `count` LORs,
/// with `lanes` (G) threads per LOR, 32-bit voxel indices where they fit,
/// on the image's device. Kernel parameters are `(grid, count, order,
/// args...)`.
template <class T, class Kernels, class... Args>
void launch_per_lor(const device_image_view<const T> &image, std::size_t count, int lanes,
                    const launch_options &opt, stream_ref s, const char *name,
                    Args... args) {
  const int g = lanes;
  const lor_order order = make_lor_order(opt, count);
  const device_guard guard(image.device);
  const auto grid = math::image_grid<T>::from(image.geometry);
  const bool narrow = !opt.wide_index && math::fits_32bit_index(grid);
  dispatch_group(g, [&](auto group) {
    constexpr int G = decltype(group)::value;
    const std::size_t block = std::size_t(opt.block_size);
    const std::size_t blocks = (count * std::size_t(G) + block - 1) / block;
    if (narrow)
      launch(Kernels::template get<T, std::int32_t, G>(), blocks, opt.block_size, s, name,
             grid, count, order, args...);
    else
      launch(Kernels::template get<T, std::int64_t, G>(), blocks, opt.block_size, s, name,
             grid, count, order, args...);
  });
}

} // namespace detail

/// Forward projection: `out[i]` = Joseph line integral of `image` along LOR
/// i, for the `lors.count` LORs of the chunk. Overwrites `out[0..count)`.
///
/// @param image  resident image (a `device_image` converts implicitly)
/// @param lors   any LOR source in device memory on the image's device:
///               `lor_view` (explicit end points; any `subview` of a larger
///               resident array) or `detector_pairs` (indices into a
///               detector table)
/// @param out    device output, at least `lors.count` values (any
///               `subspan` of a larger buffer)
/// @param opt    thread-to-LOR mapping (default: chosen by the library)
/// @param s      stream to launch on (not the legacy default stream)
/// @throws invalid_argument for null or host pointers, memory on another
///         device, a too-small output or the legacy default stream, before
///         anything is enqueued; gpu_error if the launch fails.
/// Asynchronous: returns after enqueueing; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward(device_image_view<const detail::identity_t<T>> image, const Lors &lors,
             span<T> out, const launch_options &opt, stream_ref s) {
  const auto src = lors.normalized();
  detail::check_projection<T>(image, src, out.data(), out.size(), "out", opt, s);
  if (src.count == 0)
    return;
  detail::launch_per_lor<T, detail::forward_kernels<decltype(src)>>(
      image, src.count, detail::threads_per_lor(opt, src.count, image.device), opt, s,
      "forward_kernel", image.data, src, out.data());
}

/// Forward projection with the library's thread-to-LOR mapping.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward(device_image_view<const detail::identity_t<T>> image, const Lors &lors,
             span<T> out, stream_ref s) {
  forward<T>(image, lors, out, launch_options{}, s);
}

/// Back projection: adds `values[i]` times the weights of LOR i into the
/// image (exact transpose of `forward`; accumulates, so zero the image
/// first for a plain back projection). Uses atomic adds: calls on several
/// streams into one image are safe, but the sum's rounding order varies.
///
/// @param image   resident image, updated in place
/// @param lors    any LOR source in device memory on the image's device
/// @param values  device values, at least `lors.count`
/// @param opt     thread-to-LOR mapping
/// @param s       stream to launch on (not the legacy default stream)
/// @throws as `forward` ("values" instead of "out").
/// Asynchronous: returns after enqueueing; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(device_image_view<T> image, const Lors &lors,
          span<const detail::identity_t<T>> values, const launch_options &opt,
          stream_ref s) {
  const auto src = lors.normalized();
  const device_image_view<const T> cimage(image);
  detail::check_projection<T>(cimage, src, values.data(), values.size(), "values", opt,
                              s);
  if (src.count == 0)
    return;
  detail::launch_per_lor<T, detail::back_kernels<decltype(src)>>(
      cimage, src.count, detail::threads_per_lor(opt, src.count, image.device), opt, s,
      "back_kernel", image.data, src, values.data());
}

/// Back projection with the library's thread-to-LOR mapping.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(device_image_view<T> image, const Lors &lors,
          span<const detail::identity_t<T>> values, stream_ref s) {
  back<T>(image, lors, values, launch_options{}, s);
}

/// Back projection into an owning `device_image` (same contract).
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(device_image<T> &image, const Lors &lors,
          span<const detail::identity_t<T>> values, const launch_options &opt,
          stream_ref s) {
  back<T>(image.view(), lors, values, opt, s);
}

/// Back projection into an owning `device_image` (same contract).
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(device_image<T> &image, const Lors &lors,
          span<const detail::identity_t<T>> values, stream_ref s) {
  back<T>(image.view(), lors, values, launch_options{}, s);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
