/// @file
/// @brief GPU forward and back projection against a resident image, for
/// every operation (`op::non_tof`, `op::tof_sinogram`, `op::tof_listmode`)
/// and every LOR source in device memory. One call shape:
///
///     gpu::forward(operation, image, lors, out, stream[, tuning]);
///     gpu::back(operation, image, lors, values, stream[, tuning]);
///     gpu::back(operation, fixed_point_image, lors, values, stream[, tuning]);
///
/// The last form is the reproducible back projection: bitwise the same
/// result whatever the kernel, the streams and the chunking of the LORs
/// (gpu/fixed_point_image.cuh, docs/projection.md).
///
/// The library picks the kernel from the operation, the source's layout,
/// the chunk size, the precision and the device (gpu/kernel_choice.hpp).
/// Every call checks its arguments, launches on the caller's stream and
/// returns: no allocation, no synchronisation, no stream query, no hidden
/// copy; calls can be captured into a CUDA graph.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/run_projection.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/fixed_point_image.cuh"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// The `operation_kind` of an operation type.
template <class Op> struct kind_of;
template <> struct kind_of<op::non_tof> {
  static constexpr operation_kind value = operation_kind::non_tof;
};
template <class T> struct kind_of<op::tof_sinogram<T>> {
  static constexpr operation_kind value = operation_kind::tof_sinogram;
};
template <class T> struct kind_of<op::tof_listmode<T>> {
  static constexpr operation_kind value = operation_kind::tof_listmode;
};

/// Checks a GPU projection call before anything is enqueued: the shared
/// contract (`resproj::detail::check_projection`), the stream, the image,
/// the tuning, and with `t.check_pointers` that every array is device (or
/// managed) memory on the image's device.
template <class T, class Op, class Lors>
void check_gpu_projection(const Op &o, const device_image_view<const T> &image,
                          const Lors &lors, const void *data, std::size_t data_size,
                          const char *data_name, stream_ref s, const tuning &t) {
  require_explicit_stream(s, "stream");
  if (image.data == nullptr)
    resproj::detail::throw_invalid("image.data", "null pointer");
  resproj::detail::check_projection(o, image.geometry, lors, data_size, data, data_name);
  check_tuning(t);
  if (kind_of<Op>::value != operation_kind::non_tof)
    check_stencil_workspace<T>(t.stencil, image, "tuning.stencil");
  if (!t.check_pointers)
    return;
  require_device_pointer(image.data, image.device, "image.data");
  if (lors.count == 0)
    return;
  const auto on_device = [&](const void *p, const char *name) {
    require_device_pointer(p, image.device, name);
  };
  lors.for_each_region(on_device);
  resproj::detail::for_each_operation_region(o, on_device);
  require_device_pointer(data, image.device, data_name);
}

/// The kernel choice of a call into an image of `image_bytes` (0: one the
/// L2 holds).
template <class T, class Op, class Lors>
kernel_choice choice_for(direction d, const Lors &lors, int device, const tuning &t,
                         std::size_t image_bytes = 0) {
  return choose_kernel(kind_of<Op>::value, d, lors.layout, lors.count,
                       std::is_same_v<T, float>, multiprocessor_count(device), t,
                       image_bytes, image_bytes > 0 ? l2_cache_bytes(device) : 0);
}

/// Bytes of an image of `g` with elements of `bytes` each.
inline std::size_t image_bytes(const image_geometry &g, std::size_t bytes) {
  return std::size_t(g.num_voxels()) * bytes;
}

} // namespace detail

/// Forward projection: for every LOR of `lors`, the operation's values
/// (`op::non_tof`, `op::tof_listmode`: one per LOR; `op::tof_sinogram`:
/// `tof.num_bins` per LOR, `[lor][bin]`). Overwrites
/// `out[0 .. count * values_per_lor)`.
///
/// @param operation  `op::non_tof{}`, `op::tof_sinogram{tof}` or
///                   `op::tof_listmode{tof, bins}`; per-LOR TOF arrays and
///                   bins in device memory on the image's device
/// @param image      resident image (a `device_image` or a
///                   `device_image_view` of caller-owned memory)
/// @param lors       a LOR source in device memory on the image's device:
///                   `lor_view`, `detector_pairs` or
///                   `scanner::sinogram_source` (any `subview`)
/// @param out        device output (any `subspan` of a larger buffer)
/// @param s          stream to launch on (not the legacy default stream)
/// @param t          expert overrides (never needed for speed)
/// @throws invalid_argument naming the argument ("out", "lors.starts",
///         "tof.sigma", "bins", "stream", "tuning.block_size", ...) for null,
///         host or other-device pointers, too-small arrays, bad TOF
///         parameters or overrides, before anything is enqueued; gpu_error
///         if the launch fails.
/// Asynchronous: returns after enqueueing; graph-capturable.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void forward(const Op &operation,
             device_image_view<const resproj::detail::value_of<Lors>> image,
             const Lors &lors, span<resproj::detail::value_of<Lors>> out, stream_ref s,
             const tuning &t = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto src = lors.normalized();
  detail::check_gpu_projection<T>(operation, image, src, out.data(), out.size(), "out", s,
                                  t);
  if (src.count == 0)
    return;
  const kernel_choice c =
      detail::choice_for<T, Op>(direction::forward, src, image.device, t,
                                detail::image_bytes(image.geometry, sizeof(T)));
  detail::run_forward(operation, image, src, out, c, s);
}

/// Back projection: adds the transpose of `forward` applied to `values`
/// into the image (accumulates: zero the image first for a plain back
/// projection). Atomic adds: calls on several streams into one image are
/// safe, but the sum's rounding order varies.
///
/// @param operation  as `forward`
/// @param image      resident image, updated in place
/// @param lors       as `forward`
/// @param values     device values, `count * values_per_lor`
/// @param s          stream to launch on (not the legacy default stream)
/// @param t          expert overrides; `t.stencil` applies to TOF operations
/// @throws as `forward` ("values" instead of "out"; "tuning.stencil" for a
///         workspace of another element type, too small or on another
///         device).
/// Asynchronous: returns after enqueueing; graph-capturable.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const Op &operation, device_image_view<resproj::detail::value_of<Lors>> image,
          const Lors &lors, span<const resproj::detail::value_of<Lors>> values,
          stream_ref s, const tuning &t = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto src = lors.normalized();
  detail::check_gpu_projection<T>(operation, device_image_view<const T>(image), src,
                                  values.data(), values.size(), "values", s, t);
  if (src.count == 0)
    return;
  const kernel_choice c =
      detail::choice_for<T, Op>(direction::back, src, image.device, t,
                                detail::image_bytes(image.geometry, sizeof(T)));
  detail::run_back(operation, image, src, values, c, s);
}

/// Reproducible back projection: adds the transpose of `forward` applied
/// to `values` into the fixed-point accumulator `image` with integer
/// atomics. Every contribution is the amount the plain `back` adds,
/// rounded to the accumulator's resolution (2^-e), so the result is bitwise
/// the same whatever the kernel and its tuning (lanes per LOR, block size),
/// the LOR layout, the number of streams adding into `image` and how the
/// LORs are split into calls. Read it with `image.add_to` / `to_image`.
/// Each voxel (and each contribution) must stay within +-2^(63 - e):
/// nothing checks it. The same contributions give the same bits as
/// `cpu::back` into a `cpu::fixed_point_image`; float TOF operations use
/// the fast erfc here unless `t.exact_erfc` (docs/kernel-choices.md).
///
/// @param operation  as `forward`
/// @param image      fixed-point accumulator, updated in place
/// @param lors       as `forward`, on the accumulator's device
/// @param values     device values, `count * values_per_lor`
/// @param s          stream to launch on (not the legacy default stream)
/// @param t          expert overrides; `t.stencil` is not used (ignored)
/// @throws as `forward` ("values" instead of "out", "image.data" for the
///         accumulator's memory).
/// Asynchronous: returns after enqueueing; graph-capturable.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const Op &operation, fixed_point_image<resproj::detail::value_of<Lors>> &image,
          const Lors &lors, span<const resproj::detail::value_of<Lors>> values,
          stream_ref s, const tuning &t = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto src = lors.normalized();
  tuning checked = t;
  checked.stencil = {};
  // The accumulator's storage viewed as T (its pointer and device are
  // checked like an image's).
  const device_image_view<const T> base(reinterpret_cast<const T *>(image.data()),
                                        image.geometry(), image.device());
  detail::check_gpu_projection<T>(operation, base, src, values.data(), values.size(),
                                  "values", s, checked);
  if (src.count == 0)
    return;
  // No automatic slab passes (not measured with integer atomics);
  // `t.slabs` still applies.
  const kernel_choice c =
      detail::choice_for<T, Op>(direction::back, src, image.device(), checked);
  detail::run_back(operation, image, src, values, c, s);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
