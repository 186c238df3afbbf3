/// @file
/// @brief Non-TOF Joseph kernels: G threads per LOR (G = 1 .. 32), each
/// thread walking every G-th plane, the group's partial sums combined with
/// warp shuffles. The numbers come from math/joseph.hpp only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Mask of the G lanes of the calling thread's group within its warp.
template <int G> __device__ inline unsigned group_mask() {
  if constexpr (G == 32) {
    return 0xffffffffu;
  } else {
    const unsigned lane = threadIdx.x & 31u;
    return ((1u << G) - 1u) << (lane & ~unsigned(G - 1));
  }
}

/// Sum of `v` over the G lanes of a group (all lanes get the result).
template <int G, class T> __device__ inline T group_sum(T v) {
  const unsigned mask = group_mask<G>();
#pragma unroll
  for (int offset = G / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(mask, v, offset, G);
  return v;
}

/// Order in which threads take the LORs of a chunk. With `rows > 1` the
/// chunk is read as a [rows][count / rows] array and consecutive threads
/// take consecutive rows (e.g. sinogram planes), so a warp walks LORs that
/// are neighbours in z; `rows <= 1` keeps memory order.
struct lor_order {
  std::size_t rows = 1;
  std::size_t columns = 0;
  __device__ std::size_t operator()(std::size_t j) const {
    if (rows <= 1)
      return j;
    return (j % rows) * columns + j / rows;
  }
};

/// Atomic accumulation into device memory (float and double are native on
/// sm_60 and later).
struct atomic_add {
  template <class T> __device__ void operator()(T *voxel, T amount) const {
    atomicAdd(voxel, amount);
  }
};

template <class T, class I, int G, class Lors>
RESPROJ_KERNEL void __launch_bounds__(256)
    forward_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                   const T *__restrict__ image, Lors lors, T *__restrict__ out) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return; // whole groups leave together
  const std::size_t lor = order(thread / G);
  const int lane = int(thread % G);
  T a[3], b[3];
  lors.load(lor, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  T acc = math::forward_planes<I>(image, ray, ray.first_plane + lane, G);
  if constexpr (G > 1)
    acc = group_sum<G>(acc);
  if (lane == 0)
    out[lor] = acc;
}

/// Integer atomic add into a fixed-point accumulator (the `Sink` of
/// math::fixed_point_add): unsigned 64-bit, so negative amounts wrap as
/// two's complement and the sum is exact modulo 2^64 in any order.
struct fixed_point_atomic_sink {
  __device__ void operator()(std::int64_t *element, std::int64_t q) const {
    atomicAdd(reinterpret_cast<unsigned long long *>(element),
              static_cast<unsigned long long>(q));
  }
};

/// Non-TOF back: `value * step * weight` into the four neighbours of every
/// sampled plane through the adder `add` (`atomic_add`, or the fixed-point
/// adder of the reproducible back projection).
template <class T, class I, int G, class Lors, class Add = atomic_add>
RESPROJ_KERNEL void __launch_bounds__(256)
    back_kernel(math::image_grid<T> grid, std::size_t count, lor_order order,
                T *__restrict__ image, Lors lors, const T *__restrict__ values, Add add) {
  const std::size_t thread = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread / G >= count)
    return;
  const std::size_t lor = order(thread / G);
  const T value = values[lor];
  if (value == T(0))
    return; // adds nothing; sparse data skip the walk
  const int lane = int(thread % G);
  T a[3], b[3];
  lors.load(lor, a, b);
  const math::joseph_ray<T> ray = math::make_joseph_ray(grid, a, b);
  math::back_planes<I>(image, ray, value, ray.first_plane + lane, G, add);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
