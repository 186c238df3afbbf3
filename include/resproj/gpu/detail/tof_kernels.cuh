/// @file
/// @brief TOF Joseph kernels (sinogram and list-mode, forward and back):
/// G threads per LOR (G = 1 .. 32), each thread walking every G-th plane,
/// like the non-TOF kernels. The per-LOR loops and every number come
/// from math/tof_projection.hpp (on math/joseph.hpp and math/tof.hpp);
/// these kernels add the thread mapping and memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/math/image_grid.hpp"
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

/// Sinogram forward: `out[lor * N + j]` for every bin j. The group zeroes
/// the LOR's row, every lane adds its planes' `sample * weight_j` into it
/// (math::forward_tof_sino_planes), and the row is scaled by the path
/// length per plane at the end. Every bin of the row is written by this
/// group only.
template <class T, class I, int G, class Lors>
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
  const math::tof_lor<T> tl = math::tof_lor_of(tof, lor);
  row_accumulate<T, (G > 1)> add{row};
  math::forward_tof_sino_planes<I>(image, ray, tl, ray.first_plane + lane, G, add);
  if constexpr (G > 1)
    __syncwarp(group_mask<G>());
  for (std::size_t j = std::size_t(lane); j < n_bins; j += G)
    row[j] *= ray.step;
}

/// Sinogram back: per plane, `sum_j values[lor * N + j] * weight_j`, then
/// one scatter of that times `step` (math::back_tof_sino_planes).
template <class T, class I, int G, class Lors>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_sino_back_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                         T *__restrict__ image, Lors lors, tof_params<T> tof,
                         const T *__restrict__ values) {
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
  const math::tof_lor<T> tl = math::tof_lor_of(tof, lor);
  math::back_tof_sino_planes<I>(image, ray, tl, row, 1, ray.first_plane + lane, G,
                                atomic_add{});
}

/// List-mode forward: `out[i]` = TOF value of event i's LOR at its bin,
/// visiting only the planes of `tof_plane_range` (math::forward_tof_lm_planes).
template <class T, class I, int G, class Lors>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_lm_forward_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                          const T *__restrict__ image, Lors lors,
                          const std::int16_t *__restrict__ bins, tof_params<T> tof,
                          T *__restrict__ out) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return;
  const std::size_t ev = order(thread / G);
  const int lane = int(thread % G);
  T a[3], b[3];
  lors.load(ev, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  const math::tof_lor<T> tl = math::tof_lor_of(tof, ev);
  T acc = math::forward_tof_lm_planes<I>(image, ray, tl, std::int64_t(bins[ev]),
                                         ray.first_plane + lane, G);
  if constexpr (G > 1)
    acc = group_sum<G>(acc);
  if (lane == 0)
    out[ev] = acc;
}

/// List-mode back: transpose of `tof_lm_forward_kernel`
/// (math::back_tof_lm_planes).
template <class T, class I, int G, class Lors>
RESPROJ_KERNEL void __launch_bounds__(256)
    tof_lm_back_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                       T *__restrict__ image, Lors lors,
                       const std::int16_t *__restrict__ bins, tof_params<T> tof,
                       const T *__restrict__ values) {
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
  const math::tof_lor<T> tl = math::tof_lor_of(tof, ev);
  math::back_tof_lm_planes<I>(image, ray, tl, bin, value, ray.first_plane + lane, G,
                              atomic_add{});
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
