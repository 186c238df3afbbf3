/// @file
/// @brief TOF forward and back projection on the GPU (sinogram and
/// list-mode) against a resident image, LORs, TOF bins and per-LOR TOF
/// arrays in device memory. Same conventions as gpu/projector.cuh: every
/// call validates its arguments, launches on the caller's stream and
/// returns; no allocation, no synchronisation; graph-capturable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/stencil_kernels.cuh"
#include "resproj/gpu/detail/tof_kernels.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/image_grid.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Validates a TOF call before anything is enqueued: the common checks of
/// `check_projection` (with `data_size` compared against `needed`), the TOF
/// parameters (`check_tof`), list-mode bins (when `bins` is non-null or
/// `with_bins`), and with `opt.check_pointers` that the per-LOR TOF arrays
/// and bins are device memory on the image's device.
template <class T, class Lors>
void check_tof_projection(const device_image_view<const T> &image, const Lors &lors,
                          const tof_params<T> &tof, const std::int16_t *bins,
                          std::size_t bins_size, bool with_bins, const void *data,
                          std::size_t data_size, std::size_t needed,
                          const char *data_name, const launch_options &opt,
                          stream_ref s) {
  require_explicit_stream(s, "stream");
  if (image.data == nullptr)
    resproj::detail::throw_invalid("image.data", "null pointer");
  lors.check("lors");
  resproj::detail::check_tof(tof, lors.count);
  if (with_bins) {
    if (tof.num_bins > 32767)
      resproj::detail::throw_invalid("tof.num_bins",
                                     "list-mode bins are 16-bit: at most 32767 (got " +
                                         std::to_string(tof.num_bins) + ")");
    if (bins_size < lors.count)
      resproj::detail::throw_invalid(
          "bins", "too small: holds " + std::to_string(bins_size) + " elements, needs " +
                      std::to_string(lors.count));
    if (lors.count > 0 && bins == nullptr)
      resproj::detail::throw_invalid("bins", "null pointer with size " +
                                                 std::to_string(bins_size));
  }
  if (data_size < needed)
    resproj::detail::throw_invalid(data_name,
                                   "too small: holds " + std::to_string(data_size) +
                                       " elements, needs " + std::to_string(needed));
  if (needed > 0 && data == nullptr)
    resproj::detail::throw_invalid(data_name,
                                   "null pointer with size " + std::to_string(data_size));
  // Mapping options are checked before any work, too.
  (void)make_lor_order(opt, lors.count);
  if (!opt.check_pointers)
    return;
  require_device_pointer(image.data, image.device, "image.data");
  if (lors.count == 0)
    return;
  lors.for_each_region([&](const void *p, const char *name) {
    require_device_pointer(p, image.device, name);
  });
  if (!tof.sigmas.empty())
    require_device_pointer(tof.sigmas.data(), image.device, "tof.sigmas");
  if (!tof.center_offsets.empty())
    require_device_pointer(tof.center_offsets.data(), image.device, "tof.center_offsets");
  if (with_bins)
    require_device_pointer(bins, image.device, "bins");
  require_device_pointer(data, image.device, data_name);
}

/// Kernel selectors for `launch_per_lor` (see projector.cuh).
template <class Lors, bool FastErfc = false> struct tof_sino_forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_sino_forward_kernel<T, I, G, Lors, FastErfc>;
  }
};
template <class Lors, class Add, bool FastErfc> struct tof_sino_back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_sino_back_kernel<T, I, G, Lors, Add, FastErfc>;
  }
};
template <class Lors, bool SampleFirst, bool FastErfc, class Src>
struct tof_lm_forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_forward_kernel<T, I, G, Lors, SampleFirst, FastErfc, Src>;
  }
};
template <class Lors, class Add, bool FastErfc> struct tof_lm_back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_back_kernel<T, I, G, Lors, Add, FastErfc>;
  }
};

/// Calls `f(std::bool_constant<b>{})`.
template <class F> void dispatch_bool(bool b, F &&f) {
  if (b)
    f(std::true_type{});
  else
    f(std::false_type{});
}

/// `dispatch_bool` for `tof_kernel_options::fast_erfc`: float only (the
/// double kernels always use the library erfc, which `math::fast_erfc`
/// is for double), so double compiles one kernel.
template <class T, class F> void dispatch_fast_erfc(bool fast, F &&f) {
  if constexpr (std::is_same_v<T, float>)
    dispatch_bool(fast, f);
  else
    f(std::false_type{});
}

template <class Lors, bool SampleFirst, bool FastErfc, class Src>
struct tof_lm_forward_lockstep_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_forward_lockstep_kernel<T, I, Lors, SampleFirst, FastErfc, Src>;
  }
};
template <class Lors, class Add, bool FastErfc> struct tof_lm_back_lockstep_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_back_lockstep_kernel<T, I, Lors, Add, FastErfc>;
  }
};
template <class Lors, bool FastErfc = false> struct tof_lm_back_aggregated_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_back_aggregated_kernel<T, I, Lors, FastErfc>;
  }
};

/// Threads per event of the list-mode calls: as `threads_per_lor`, except
/// that the automatic choice takes 2 lanes where it would take 4 (list-mode
/// walks only the ~8 bins' worth of planes near the event's bin; measured
/// on an H200 over dmi-tof-lm, 1e7 events: 2 lanes 6% faster forward than
/// 4, back equal).
inline int threads_per_event(const launch_options &opt, std::size_t count, int device) {
  const int g = threads_per_lor(opt, count, device);
  return (opt.threads_per_lor == 0 && g == 4) ? 2 : g;
}

/// The per-LOR TOF arrays of a call, restricted to its LOR count (so that
/// the kernel's element i is LOR i of the chunk).
template <class T>
tof_params<T> tof_for_call(const tof_params<T> &tof, std::size_t count) {
  return tof.subview(0, count);
}

/// Calls `run(add)` with the atomic adder of a back projection: into the
/// stencil workspace `ws` when set (then queues its reduction into `image`
/// on `s`), else vector pairs (`vector_atomics`) or scalar atomics into the
/// image.
template <class T, class Run>
void run_with_back_adder(const stencil_workspace_ref &ws, bool vector_atomics,
                         const device_image_view<T> &image, stream_ref s, Run &&run) {
  const auto grid = math::image_grid<T>::from(image.geometry);
  if (ws) {
    run(stencil_atomic_add<T, paired_atomic_add>{
        static_cast<T *>(ws.data), math::make_stencil_layout(grid, ws.width),
        back_adder<true>::make(grid)});
    stencil_reduce<T>(ws, image, s);
  } else if (vector_atomics) {
    run(back_adder<true>::make(grid));
  } else {
    run(back_adder<false>::make(grid));
  }
}

/// `opt` with 64-bit indices when the stencil layout of `image` (used
/// when `ws` is set) does not fit 32-bit ones.
template <class T>
launch_options with_stencil_index(launch_options opt, const stencil_workspace_ref &ws,
                                  const device_image_view<const T> &image) {
  if (ws && !math::fits_32bit_index(math::make_stencil_layout(
                math::image_grid<T>::from(image.geometry), ws.width)))
    opt.wide_index = true;
  return opt;
}

} // namespace detail

/// Kernel variants of the TOF calls. All but `fast_erfc` change only the
/// work done, not the arithmetic of any value (results equal those of the
/// plain kernels to the rounding order of atomic adds); `fast_erfc` changes
/// the edge values by ~1e-6 (relative). The defaults are the fastest
/// measured on an H200 (benchmarks/bench_gpu_tof.cu, dmi-tof-lm with 1e7
/// events, dmi-tof-subset) among those that need no caller resources;
/// `tof_kernel_options::plain()` turns every lever off (exact erfc).
struct tof_kernel_options {
  /// List-mode back projection of float images: add the two bilinear
  /// neighbours of a sample that are adjacent in memory with one float2 /
  /// float4 atomic (sm_90), i.e. about half the atomic operations. Other
  /// cases: scalar. On by default (random order 1.59x, sorted 1.48x).
  bool vector_atomics = true;
  /// List-mode forward: read the image sample first and evaluate the TOF
  /// weight (4 erfc) only where it is non-zero. On by default: 1.5-1.7x
  /// faster for sorted events, about 5% slower in random order (the
  /// weight's work then no longer overlaps the load).
  bool sample_first = true;
  /// List-mode (forward and back): one thread per event, the lanes of a
  /// warp walking the union of their plane ranges in lock-step (the same
  /// plane index in every lane at a time); meant for sorted events.
  /// `launch_options::threads_per_lor` is then ignored (still validated).
  bool lockstep = false;
  /// Sinogram back projection: vector atomics as `vector_atomics`. Off by
  /// default: with `launch_options::rows` (the fastest sinogram mapping)
  /// it measured 6% slower (with the automatic mapping 1.2x faster, but
  /// still slower than rows without it).
  bool sino_vector_atomics = false;
  /// Lock-step list-mode back only (needs `lockstep`): the lanes of a warp
  /// that add into the same voxel at the same plane step (sorted events
  /// whose windows overlap) first sum their amounts with warp shuffles
  /// (`__match_any_sync` on the voxel offset, a tree sum per group), and
  /// one lane does a single scalar atomic for the group; replaces
  /// `vector_atomics` there.
  bool warp_aggregate = false;
  /// Every float TOF call: bin-edge values from `math::fast_erfc` and the
  /// window's reciprocal from the hardware approximation (about 15
  /// instructions per edge against erfcf's ~40; relative error ~1e-6
  /// against double erfc, so results differ from the exact-erfc kernels by
  /// about that, weights by < 3e-6, well inside the spec's 2e-5). Double:
  /// no effect. On by default: the TOF-sorted list-mode forward 1.15x and
  /// the sinogram back projection (rows) 1.24x faster on an H200, other
  /// calls within 5%; turn it off for erfcf-exact weights.
  bool fast_erfc = true;
  /// List-mode forward of float images: read the two bilinear neighbours
  /// that are adjacent in memory with one 8- or 16-byte load where
  /// alignment allows (same values, same sum order).
  bool vector_loads = false;
  /// Back projections (list-mode, except with `warp_aggregate`, and
  /// sinogram; takes precedence over `sino_vector_atomics`): accumulate in
  /// this stencil workspace (`stencil_workspace<T>::ref()`, on the image's
  /// device, for the image's geometry; see gpu/stencil_workspace.cuh):
  /// every sample is added with one or two vector atomics, and at the end
  /// of the call a reduction adds the workspace into the image (leaving it
  /// zero), on the call's stream. Results equal those without it (to the
  /// rounding order of atomic adds). One call at a time per workspace. For
  /// large calls of sorted events; empty by default.
  stencil_workspace_ref stencil{};

  /// Every lever off: the original kernels.
  static constexpr tof_kernel_options plain() noexcept {
    tof_kernel_options o;
    o.vector_atomics = false;
    o.sample_first = false;
    o.fast_erfc = false;
    return o;
  }
};

/// TOF sinogram forward projection: `out[i * N + j]` = value of LOR i at
/// TOF bin j (N = `tof.num_bins`), for the `lors.count` LORs of the chunk.
/// Overwrites `out[0 .. count * N)`.
///
/// @param image  resident image (a `device_image` converts implicitly)
/// @param lors   LORs in device memory on the image's device
/// @param tof    TOF parameters; per-LOR `sigmas` / `center_offsets`, when
///               given, are device arrays indexed like the LORs of the call
/// @param out    device output, at least `lors.count * N` values
/// @param opt    thread-to-LOR mapping (rows, threads_per_lor, wide_index)
/// @param variant kernel variant (`tof_kernel_options`; only `fast_erfc`
///               applies here)
/// @param s      stream to launch on (not the legacy default stream)
/// @throws invalid_argument naming the argument ("tof.sigma", "out",
///         "lors.starts", "tof.sigmas", ...) before anything is enqueued;
///         gpu_error if the launch fails.
/// Asynchronous; no allocation; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_sino(device_image_view<const detail::identity_t<T>> image,
                      const Lors &lors, const tof_params<detail::identity_t<T>> &tof,
                      span<T> out, const launch_options &opt,
                      const tof_kernel_options &variant, stream_ref s) {
  const auto src = lors.normalized();
  const std::size_t needed = src.count * std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
  detail::check_tof_projection<T>(image, src, tof, nullptr, 0, false, out.data(),
                                  out.size(), needed, "out", opt, s);
  if (src.count == 0)
    return;
  const int g = detail::threads_per_lor(opt, src.count, image.device);
  const auto tof_call = detail::tof_for_call(tof, src.count);
  detail::dispatch_fast_erfc<T>(variant.fast_erfc, [&](auto fast) {
    detail::launch_per_lor<
        T, detail::tof_sino_forward_kernels<decltype(src), decltype(fast)::value>>(
        image, src.count, g, opt, s, "tof_sino_forward_kernel", image.data, src, tof_call,
        out.data());
  });
}

/// TOF sinogram forward projection with the default kernel variant.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_sino(device_image_view<const detail::identity_t<T>> image,
                      const Lors &lors, const tof_params<detail::identity_t<T>> &tof,
                      span<T> out, const launch_options &opt, stream_ref s) {
  forward_tof_sino<T>(image, lors, tof, out, opt, tof_kernel_options{}, s);
}

/// TOF sinogram forward projection with the library's mapping.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_sino(device_image_view<const detail::identity_t<T>> image,
                      const Lors &lors, const tof_params<detail::identity_t<T>> &tof,
                      span<T> out, stream_ref s) {
  forward_tof_sino<T>(image, lors, tof, out, launch_options{}, s);
}

/// TOF sinogram back projection: adds the transpose of `forward_tof_sino`
/// applied to `values` (`values[i * N + j]`) into the image (accumulates:
/// zero the image first for a plain back projection). Atomic adds.
/// `variant` selects a kernel variant (`tof_kernel_options`; only
/// `sino_vector_atomics`, `fast_erfc` and `stencil` apply here).
/// @throws as `forward_tof_sino` ("values" instead of "out"), and
///         "variant.stencil" as `back_tof_lm`.
/// Asynchronous; no allocation; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(device_image_view<T> image, const Lors &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, const launch_options &opt,
                   const tof_kernel_options &variant, stream_ref s) {
  const auto src = lors.normalized();
  const device_image_view<const T> cimage(image);
  const std::size_t needed = src.count * std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
  detail::check_tof_projection<T>(cimage, src, tof, nullptr, 0, false, values.data(),
                                  values.size(), needed, "values", opt, s);
  detail::check_stencil_workspace<T>(variant.stencil, cimage, "variant.stencil");
  if (src.count == 0)
    return;
  const launch_options opt_call =
      detail::with_stencil_index(opt, variant.stencil, cimage);
  const int g = detail::threads_per_lor(opt_call, src.count, image.device);
  const auto tof_call = detail::tof_for_call(tof, src.count);
  const auto run = [&](auto add) {
    detail::dispatch_fast_erfc<T>(variant.fast_erfc, [&](auto fast) {
      detail::launch_per_lor<T, detail::tof_sino_back_kernels<
                                    decltype(src), decltype(add), decltype(fast)::value>>(
          cimage, src.count, g, opt_call, s, "tof_sino_back_kernel", image.data, src,
          tof_call, values.data(), add);
    });
  };
  detail::run_with_back_adder(variant.stencil, variant.sino_vector_atomics, image, s,
                              run);
}

/// TOF sinogram back projection with the default kernel variant
/// (`tof_kernel_options{}`).
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(device_image_view<T> image, const Lors &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, const launch_options &opt,
                   stream_ref s) {
  back_tof_sino<T>(image, lors, tof, values, opt, tof_kernel_options{}, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(device_image_view<T> image, const Lors &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, stream_ref s) {
  back_tof_sino<T>(image, lors, tof, values, launch_options{}, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(device_image<T> &image, const Lors &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, const launch_options &opt,
                   stream_ref s) {
  back_tof_sino<T>(image.view(), lors, tof, values, opt, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(device_image<T> &image, const Lors &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, stream_ref s) {
  back_tof_sino<T>(image.view(), lors, tof, values, launch_options{}, s);
}

/// TOF list-mode forward projection: `out[i]` = TOF sinogram value of event
/// i's LOR at its bin `bins[i]` (0 for a bin outside [0, N-1]); only the
/// planes within reach of the bin are visited.
///
/// @param bins  device array of at least `lors.count` signed 16-bit bins
/// @param variant  kernel variant (`tof_kernel_options`; same results;
///               `stencil` is for the back projection and ignored here)
/// @throws as `forward_tof_sino`, and "bins" for a null, host or too small
///         bin array.
/// Asynchronous; no allocation; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_lm(device_image_view<const detail::identity_t<T>> image,
                    const Lors &lors, span<const std::int16_t> bins,
                    const tof_params<detail::identity_t<T>> &tof, span<T> out,
                    const launch_options &opt, const tof_kernel_options &variant,
                    stream_ref s) {
  const auto src = lors.normalized();
  detail::check_tof_projection<T>(image, src, tof, bins.data(), bins.size(), true,
                                  out.data(), out.size(), src.count, "out", opt, s);
  if (src.count == 0)
    return;
  const int g = detail::threads_per_event(opt, src.count, image.device);
  const auto tof_call = detail::tof_for_call(tof, src.count);
  const auto run = [&](auto source) {
    using Src = decltype(source);
    detail::dispatch_bool(variant.sample_first, [&](auto first) {
      detail::dispatch_fast_erfc<T>(variant.fast_erfc, [&](auto fast) {
        constexpr bool sf = decltype(first)::value, fe = decltype(fast)::value;
        if (variant.lockstep)
          detail::launch_per_lor<
              T, detail::tof_lm_forward_lockstep_kernels<decltype(src), sf, fe, Src>>(
              image, src.count, 1, opt, s, "tof_lm_forward_lockstep_kernel", source, src,
              bins.data(), tof_call, out.data());
        else
          detail::launch_per_lor<
              T, detail::tof_lm_forward_kernels<decltype(src), sf, fe, Src>>(
              image, src.count, g, opt, s, "tof_lm_forward_kernel", source, src,
              bins.data(), tof_call, out.data());
      });
    });
  };
  if constexpr (std::is_same_v<T, float>) {
    if (variant.vector_loads) {
      run(detail::paired_image_source{image.data, image.geometry.num_voxels()});
      return;
    }
  }
  run(image.data);
}

/// TOF list-mode forward projection with the default kernel variant.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_lm(device_image_view<const detail::identity_t<T>> image,
                    const Lors &lors, span<const std::int16_t> bins,
                    const tof_params<detail::identity_t<T>> &tof, span<T> out,
                    const launch_options &opt, stream_ref s) {
  forward_tof_lm<T>(image, lors, bins, tof, out, opt, tof_kernel_options{}, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_lm(device_image_view<const detail::identity_t<T>> image,
                    const Lors &lors, span<const std::int16_t> bins,
                    const tof_params<detail::identity_t<T>> &tof, span<T> out,
                    stream_ref s) {
  forward_tof_lm<T>(image, lors, bins, tof, out, launch_options{}, s);
}

/// TOF list-mode back projection: transpose of `forward_tof_lm` (adds into
/// the image; atomic adds); `variant` as in `forward_tof_lm` (with
/// `variant.stencil`, the amounts go through the workspace and are added
/// into the image by a reduction at the end of the call).
/// @throws as `forward_tof_lm` ("values" instead of "out"), and
///         "variant.stencil" for a workspace of another element type, too
///         small for the image or on another device.
/// Asynchronous; no allocation; graph-capturable.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(device_image_view<T> image, const Lors &lors,
                 span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, const launch_options &opt,
                 const tof_kernel_options &variant, stream_ref s) {
  const auto src = lors.normalized();
  const device_image_view<const T> cimage(image);
  detail::check_tof_projection<T>(cimage, src, tof, bins.data(), bins.size(), true,
                                  values.data(), values.size(), src.count, "values", opt,
                                  s);
  const bool use_stencil =
      variant.stencil && !(variant.lockstep && variant.warp_aggregate);
  if (use_stencil)
    detail::check_stencil_workspace<T>(variant.stencil, cimage, "variant.stencil");
  if (src.count == 0)
    return;
  const launch_options opt_call = detail::with_stencil_index(
      opt, use_stencil ? variant.stencil : stencil_workspace_ref{}, cimage);
  const int g = detail::threads_per_event(opt_call, src.count, image.device);
  const auto tof_call = detail::tof_for_call(tof, src.count);
  const auto run = [&](auto add) {
    using Add = decltype(add);
    detail::dispatch_fast_erfc<T>(variant.fast_erfc, [&](auto fast) {
      constexpr bool fe = decltype(fast)::value;
      if (variant.lockstep)
        detail::launch_per_lor<
            T, detail::tof_lm_back_lockstep_kernels<decltype(src), Add, fe>>(
            cimage, src.count, 1, opt_call, s, "tof_lm_back_lockstep_kernel", image.data,
            src, bins.data(), tof_call, values.data(), add);
      else
        detail::launch_per_lor<T, detail::tof_lm_back_kernels<decltype(src), Add, fe>>(
            cimage, src.count, g, opt_call, s, "tof_lm_back_kernel", image.data, src,
            bins.data(), tof_call, values.data(), add);
    });
  };
  if (variant.lockstep && variant.warp_aggregate) {
    detail::dispatch_fast_erfc<T>(variant.fast_erfc, [&](auto fast) {
      detail::launch_per_lor<T, detail::tof_lm_back_aggregated_kernels<
                                    decltype(src), decltype(fast)::value>>(
          cimage, src.count, 1, opt_call, s, "tof_lm_back_aggregated_kernel", image.data,
          src, bins.data(), tof_call, values.data());
    });
  } else {
    detail::run_with_back_adder(variant.stencil, variant.vector_atomics, image, s, run);
  }
}

/// TOF list-mode back projection with the default kernel variant.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(device_image_view<T> image, const Lors &lors,
                 span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, const launch_options &opt,
                 stream_ref s) {
  back_tof_lm<T>(image, lors, bins, tof, values, opt, tof_kernel_options{}, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(device_image_view<T> image, const Lors &lors,
                 span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, stream_ref s) {
  back_tof_lm<T>(image, lors, bins, tof, values, launch_options{}, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(device_image<T> &image, const Lors &lors, span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, const launch_options &opt,
                 stream_ref s) {
  back_tof_lm<T>(image.view(), lors, bins, tof, values, opt, s);
}

template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(device_image<T> &image, const Lors &lors, span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, stream_ref s) {
  back_tof_lm<T>(image.view(), lors, bins, tof, values, launch_options{}, s);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
