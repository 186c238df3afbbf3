/// @file
/// @brief Kernel variants for the GPU benchmarks' tuned rows. The plain
/// rows call `gpu::forward` / `gpu::back`, which pick their kernel from the
/// table (gpu/kernel_choice.hpp); a variant row builds a `gpu::kernel_choice`
/// (usually the table's choice for some layout, then levers changed) and
/// launches it through `gpu::detail::run_forward` / `run_back`, which check
/// nothing: check the call once with `check_call` before timing it. Needs
/// nvcc.
#pragma once

#include <cstddef>

#include <benchmark/benchmark.h>

#include "resproj/core/lor_layout.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/run_projection.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"

namespace resproj_bench {

/// What the plain call (`gpu::forward` for `gpu::direction::forward`,
/// `gpu::back` otherwise) runs for operation `op` over `lors` on `device`
/// with overrides `t`, into an image the L2 holds (no slab passes).
template <class Op, class Lors>
resproj::gpu::kernel_choice plain_choice(const Op &, resproj::gpu::direction d,
                                         const Lors &lors, int device,
                                         const resproj::gpu::tuning &t = {}) {
  using T = typename Lors::value_type;
  return resproj::gpu::detail::choice_for<T, Op>(d, lors.normalized(), device, t);
}

/// The table's choice for a call of `op` over `count` float LORs on
/// `device` as if their layout were `layout` (e.g. `lor_layout{}`: the
/// memory-order mapping), with overrides `t`.
template <class Op>
resproj::gpu::kernel_choice
choice_as(const Op &, resproj::gpu::direction d, const resproj::lor_layout &layout,
          std::size_t count, int device, const resproj::gpu::tuning &t = {}) {
  namespace gpu = resproj::gpu;
  return gpu::choose_kernel(gpu::detail::kind_of<Op>::value, d, layout, count, true,
                            gpu::detail::multiprocessor_count(device), t);
}

/// Lanes per LOR as the table counts them: `lanes` for a call that fills
/// `device`, doubled (up to 32) while `count` LORs would leave it idle.
inline int filling_lanes(int lanes, std::size_t count, int device) {
  const std::size_t wanted =
      std::size_t(resproj::gpu::detail::multiprocessor_count(device)) * 512;
  while (lanes < 32 && count * std::size_t(lanes) < wanted)
    lanes *= 2;
  return lanes;
}

/// The argument checks of the plain forward call (sizes, residency, the
/// tuning's stencil), for a variant run that skips them.
template <class Op, class T, class Lors>
void check_forward(const Op &op, resproj::gpu::device_image_view<const T> image,
                   const Lors &lors, resproj::span<T> out, resproj::gpu::stream_ref s,
                   const resproj::gpu::tuning &t = {}) {
  resproj::gpu::detail::check_gpu_projection<T>(op, image, lors.normalized(), out.data(),
                                                out.size(), "out", s, t);
}
/// The argument checks of the plain back call.
template <class Op, class T, class Lors>
void check_back(const Op &op, resproj::gpu::device_image_view<T> image, const Lors &lors,
                resproj::span<const T> values, resproj::gpu::stream_ref s,
                const resproj::gpu::tuning &t = {}) {
  resproj::gpu::detail::check_gpu_projection<T>(
      op, resproj::gpu::device_image_view<const T>(image), lors.normalized(),
      values.data(), values.size(), "values", s, t);
}

/// Forward projection with the kernel `c` (no checks).
template <class Op, class T, class Lors>
void forward_as(const resproj::gpu::kernel_choice &c, const Op &op,
                resproj::gpu::device_image_view<const T> image, const Lors &lors,
                resproj::span<T> out, resproj::gpu::stream_ref s) {
  resproj::gpu::detail::run_forward(op, image, lors.normalized(), out, c, s);
}
/// Back projection with the kernel `c` (no checks).
template <class Op, class T, class Lors>
void back_as(const resproj::gpu::kernel_choice &c, const Op &op,
             resproj::gpu::device_image_view<T> image, const Lors &lors,
             resproj::span<const T> values, resproj::gpu::stream_ref s) {
  resproj::gpu::detail::run_back(op, image, lors.normalized(), values, c, s);
}

/// Counters of the kernel a row ran: "threads_per_lor" (1 for lock-step
/// warps) and "rows" (sinogram planes taken by neighbouring lanes; 0:
/// memory order).
inline void choice_counters(benchmark::State &state,
                            const resproj::gpu::kernel_choice &c) {
  state.counters["threads_per_lor"] = c.lockstep ? 1 : c.threads_per_lor;
  state.counters["rows"] = double(c.rows);
}

} // namespace resproj_bench
