/// @file
/// @brief TOF Joseph kernels (sinogram and list-mode, forward and back):
/// G threads per LOR (G = 1 .. 32), each thread walking every G-th plane,
/// like the non-TOF kernels. The per-LOR loops and every number come
/// from math/tof_projection.hpp (on math/joseph.hpp and math/tof.hpp);
/// these kernels add the thread mapping and memory.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/gpu/detail/paired_atomics.cuh"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/image_slabs.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/tof.hpp"
#include "resproj/math/tof_projection.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Adds `amount` into bin j of a sinogram row: plainly when one lane owns
/// the row, atomically when G lanes share it.
template <class T, bool Atomic> struct row_accumulate {
  T *row;
  __device__ void operator()(std::int64_t j, T amount) const {
    if constexpr (Atomic)
      atomicAdd(row + j, amount);
    else
      row[j] += amount;
  }
};

/// The atomic adder of the back kernels: vector pairs or plain.
template <bool Paired> struct back_adder {
  template <class T> RESPROJ_HD static atomic_add make(const math::image_grid<T> &) {
    return {};
  }
};
template <> struct back_adder<true> {
  template <class T>
  RESPROJ_HD static paired_atomic_add make(const math::image_grid<T> &g) {
    paired_atomic_add a;
    a.extent = g.shape[0] * g.stride[0];
    return a;
  }
};

/// `tl` with the kernel's choice of erfc for the edge values
/// (`kernel_choice::fast_erfc`; a compile-time constant, so only one
/// erfc is compiled in).
template <bool FastErfc, class T>
__device__ math::tof_lor<T> fast_erfc_lor(math::tof_lor<T> tl) {
  tl.fast_erfc = FastErfc;
  return tl;
}

/// Sinogram forward: `out[lor * N + j]` for every bin j. The group zeroes
/// the LOR's row, every lane adds its planes' `sample * weight_j` into it
/// (math::forward_tof_sino_planes), and the row is scaled by the path
/// length per plane at the end. Every bin of the row is written by this
/// group only.
template <class T, class I, int G, class Lors, bool FastErfc = false>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_sino_forward_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                            const T *__restrict__ image, Lors lors, tof_params<T> tof,
                            T *__restrict__ out) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return; // whole groups leave together
  const std::size_t lor = order(thread / G);
  const int lane = int(thread % G);
  const std::size_t n_bins = std::size_t(tof.num_bins);
  T *row = out + lor * n_bins;
  for (std::size_t j = std::size_t(lane); j < n_bins; j += G)
    row[j] = T(0);
  if constexpr (G > 1)
    __syncwarp(group_mask<G>());
  T a[3], b[3];
  lors.load(lor, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  if (ray.empty())
    return; // uniform over the group: nobody waits below
  const math::tof_lor<T> tl = fast_erfc_lor<FastErfc>(math::tof_lor_of(tof, lor));
  row_accumulate<T, (G > 1)> add{row};
  math::forward_tof_sino_planes<I>(image, ray, tl, ray.first_plane + lane, G, add);
  if constexpr (G > 1)
    __syncwarp(group_mask<G>());
  for (std::size_t j = std::size_t(lane); j < n_bins; j += G)
    row[j] *= ray.step;
}

/// Sinogram back: per plane, `sum_j values[lor * N + j] * weight_j`, then
/// one scatter of that times `step` (math::back_tof_sino_planes) through
/// the atomic adder `add` (`atomic_add`, `paired_atomic_add` or
/// `stencil_atomic_add`). `FastErfc` (every kernel with the parameter):
/// edge values from math::fast_erfc.
template <class T, class I, int G, class Lors, class Add, bool FastErfc = false>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_sino_back_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                         T *__restrict__ image, Lors lors, tof_params<T> tof,
                         const T *__restrict__ values, Add add) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return;
  const std::size_t lor = order(thread / G);
  const int lane = int(thread % G);
  const T *row = values + lor * std::size_t(tof.num_bins);
  T a[3], b[3];
  lors.load(lor, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  if (ray.empty())
    return;
  const math::tof_lor<T> tl = fast_erfc_lor<FastErfc>(math::tof_lor_of(tof, lor));
  math::back_tof_sino_planes<I>(image, ray, tl, row, 1, ray.first_plane + lane, G, add);
}

/// The planes `[lo, hi]` of `ray` in the slab of `pass` when `Slabs`
/// (math::slab_plane_range), else every plane.
template <bool Slabs, class T>
__device__ void pass_planes(const math::joseph_ray<T> &ray, const math::slab_pass &pass,
                            std::int64_t &lo, std::int64_t &hi) {
  lo = 0;
  hi = INT64_MAX;
  if constexpr (Slabs)
    math::slab_plane_range(ray, pass, lo, hi);
}

/// List-mode forward: `out[i]` = TOF value of event i's LOR at its bin,
/// visiting only the planes of `tof_plane_range` (math::forward_tof_lm_planes;
/// `SampleFirst` as there). `Slabs`: only the planes in the slab of `pass`;
/// pass 0 writes `out[i]`, later passes add their non-zero parts to it.
/// Float: at least 5 blocks of 256 per multiprocessor (at most 51
/// registers; see docs/kernel-choices.md, "TOF list-mode").
template <class T, class I, int G, class Lors, bool SampleFirst = false,
          bool FastErfc = false, bool Slabs = false>
RESPROJ_KERNEL void __launch_bounds__(256, sizeof(T) == 4 ? 5 : 1)
    tof_lm_forward_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                          const T *image, Lors lors,
                          const std::int16_t *__restrict__ bins, tof_params<T> tof,
                          T *__restrict__ out, math::slab_pass pass) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return;
  const std::size_t ev = order(thread / G);
  const int lane = int(thread % G);
  T a[3], b[3];
  lors.load(ev, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  const math::tof_lor<T> tl = fast_erfc_lor<FastErfc>(math::tof_lor_of(tof, ev));
  std::int64_t lo, hi;
  pass_planes<Slabs>(ray, pass, lo, hi);
  T acc = math::forward_tof_lm_planes<I, SampleFirst>(
      image, ray, tl, std::int64_t(bins[ev]), ray.first_plane + lane, G, lo, hi);
  if constexpr (G > 1)
    acc = group_sum<G>(acc);
  if (lane != 0)
    return;
  if constexpr (Slabs) {
    if (pass.index == 0)
      out[ev] = acc;
    else if (acc != T(0))
      out[ev] += acc;
  } else {
    out[ev] = acc;
  }
}

/// List-mode back: transpose of `tof_lm_forward_kernel`
/// (math::back_tof_lm_planes) through the atomic adder `add`
/// (`atomic_add`, `paired_atomic_add` or `stencil_atomic_add`). `Slabs`:
/// only the planes in the slab of `pass`.
template <class T, class I, int G, class Lors, class Add, bool FastErfc = false,
          bool Slabs = false>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_lm_back_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                       T *__restrict__ image, Lors lors,
                       const std::int16_t *__restrict__ bins, tof_params<T> tof,
                       const T *__restrict__ values, Add add, math::slab_pass pass) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return;
  const std::size_t ev = order(thread / G);
  const T value = values[ev];
  if (value == T(0))
    return;
  const std::int64_t bin = bins[ev];
  if (bin < 0 || bin >= tof.num_bins)
    return;
  const int lane = int(thread % G);
  T a[3], b[3];
  lors.load(ev, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  const math::tof_lor<T> tl = fast_erfc_lor<FastErfc>(math::tof_lor_of(tof, ev));
  std::int64_t lo, hi;
  pass_planes<Slabs>(ray, pass, lo, hi);
  math::back_tof_lm_planes<I>(image, ray, tl, bin, value, ray.first_plane + lane, G, add,
                              lo, hi);
}

/// Plane range of one lane of a lock-step list-mode kernel: event `ev`'s
/// ray, TOF constants and `tof_plane_range` of its bin; empty (lo > hi)
/// for an inactive lane, a bin outside [0, N-1] or an empty ray.
template <class T> struct lockstep_event {
  math::joseph_ray<T> ray;
  math::tof_lor<T> tl{};
  std::int64_t bin = -1, lo = 1, hi = 0;
};

template <bool FastErfc, class T, class Lors>
__device__ lockstep_event<T> lockstep_setup(const math::image_grid<T> &grid, bool active,
                                            std::size_t ev, const Lors &lors,
                                            const std::int16_t *__restrict__ bins,
                                            const tof_params<T> &tof) {
  lockstep_event<T> e;
  if (!active)
    return e;
  e.bin = bins[ev];
  T a[3], b[3];
  lors.load(ev, a, b);
  e.ray = math::make_joseph_ray(grid, a, b);
  e.tl = fast_erfc_lor<FastErfc>(math::tof_lor_of(tof, ev));
  if (e.bin >= 0 && e.bin < tof.num_bins && !e.ray.empty())
    math::tof_plane_range(e.ray, e.tl, e.bin, e.lo, e.hi);
  return e;
}

/// The union of the plane ranges of the warp's lanes: [first, last]
/// (first > last if all are empty). Every lane of the warp must call it.
template <class T>
__device__ void warp_plane_span(const lockstep_event<T> &e, int &first, int &last) {
  const bool any = e.lo <= e.hi;
  first = __reduce_min_sync(0xffffffffu, any ? int(e.lo) : INT_MAX);
  last = __reduce_max_sync(0xffffffffu, any ? int(e.hi) : INT_MIN);
}

/// List-mode forward, warp lock-step (one thread per event): the lanes of
/// a warp walk the union of their plane ranges together, every lane at
/// the same plane index at the same time, each adding only its own planes
/// (math::accumulate_tof_lm_plane, in increasing plane order: the same
/// value as the one-thread-per-event `tof_lm_forward_kernel`). With events
/// sorted by direction and TOF position, a warp's loads of one plane then
/// fall into a few cache lines. Needs blocks of whole warps.
template <class T, class I, class Lors, bool SampleFirst, bool FastErfc = false>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_lm_forward_lockstep_kernel(math::image_grid<T> grid, std::size_t count,
                                   lor_order order, const T *image, Lors lors,
                                   const std::int16_t *__restrict__ bins,
                                   tof_params<T> tof, T *__restrict__ out) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool active = thread < count; // no early return: the warp reduces below
  const std::size_t ev = active ? order(thread) : 0;
  const lockstep_event<T> e = lockstep_setup<FastErfc>(grid, active, ev, lors, bins, tof);
  int first, last;
  warp_plane_span(e, first, last);
  T acc = 0;
  for (int p = first; p <= last; ++p)
    if (p >= e.lo && p <= e.hi)
      math::accumulate_tof_lm_plane<I, SampleFirst>(acc, image, e.ray, e.tl, e.bin, p);
  if (active)
    out[ev] = e.lo <= e.hi ? acc * e.ray.step : T(0);
}

/// List-mode back, warp lock-step: transpose of
/// `tof_lm_forward_lockstep_kernel` (a warp's atomics of one plane fall
/// into few cache lines for sorted events). With an adder of plane pairs
/// the warp steps two planes at a time.
template <class T, class I, class Lors, class Add, bool FastErfc = false>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_lm_back_lockstep_kernel(math::image_grid<T> grid, std::size_t count,
                                lor_order order, T *__restrict__ image, Lors lors,
                                const std::int16_t *__restrict__ bins, tof_params<T> tof,
                                const T *__restrict__ values, Add add) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t ev = thread < count ? order(thread) : 0;
  const T value = thread < count ? values[ev] : T(0);
  const bool active = thread < count && value != T(0);
  const lockstep_event<T> e = lockstep_setup<FastErfc>(grid, active, ev, lors, bins, tof);
  int first, last;
  warp_plane_span(e, first, last);
  const T v = value * e.ray.step;
  if constexpr (math::detail::scatters_plane_pairs<Add>::value) {
    // Two planes per step; a ray along the contiguous axis adds both
    // planes' taps of a column with one vector atomic.
    for (int p = first & ~1; p <= last; p += 2) {
      const bool in0 = p >= e.lo && p <= e.hi, in1 = p + 1 >= e.lo && p + 1 <= e.hi;
      if (math::planes_contiguous(e.ray)) {
        math::scatter_tof_lm_plane_pair<I>(image, e.ray, e.tl, e.bin, v, p, in0, in1,
                                           add);
        continue;
      }
      if (in0)
        math::scatter_tof_lm_plane<I>(image, e.ray, e.tl, e.bin, v, p, add);
      if (in1)
        math::scatter_tof_lm_plane<I>(image, e.ray, e.tl, e.bin, v, p + 1, add);
    }
  } else {
    for (int p = first; p <= last; ++p)
      if (p >= e.lo && p <= e.hi)
        math::scatter_tof_lm_plane<I>(image, e.ray, e.tl, e.bin, v, p, add);
  }
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
