/// @file
/// @brief Reproducible non-TOF back projection of whole sinograms by
/// transaxial bins (gpu/detail/column_kernels.cuh) into a fixed-point
/// accumulator. Each sample's four terms are converted to integers exactly
/// as the per-LOR path converts them (`value * step * (w_u * w_v)`, then
/// `math::to_fixed_point`), summed per plane and axial position in shared
/// memory (one thread per plane row, plain adds) and added to the
/// accumulator with integer atomics: the same integers as the per-LOR kernels, summed
/// exactly, so the bits do not depend on the kernel, the chunking or the order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/gpu/detail/column_kernels.cuh"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/math/fixed_point.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// The plan of the fixed-point kernel: `profile_rows` planes per chunk
/// (at most 128), each with two rows (u and u + 1) of 64-bit integers, and
/// one thread per row (`fixed_column_threads`). `profile_rows == 0` when
/// fewer than 16 planes fit. The defaults (72 KB, tiles of 432 members:
/// three blocks per multiprocessor) were the fastest of a sweep on
/// dmi-subset (docs/kernel-choices.md, "Transaxial bins").
template <class T>
inline column_plan
make_fixed_column_plan(const math::image_grid<T> &grid, std::size_t rows,
                       std::size_t budget = 72 * 1024, int max_tile_rows = 432) {
  column_plan p;
  p.profile_width = int(grid.shape[2]);
  const std::size_t tile = rows < std::size_t(max_tile_rows) ? rows : max_tile_rows;
  const std::size_t members = column_members_bytes<T>(tile);
  const std::size_t plane_bytes = 2 * std::size_t(p.profile_width) * sizeof(std::int64_t);
  if (members >= budget)
    return p;
  std::size_t planes = (budget - members) / plane_bytes;
  if (planes > 128)
    planes = 128;
  if (planes < 16)
    return p;
  p.tile_rows = int(tile);
  p.profile_rows = int(planes);
  p.shared_bytes = members + planes * plane_bytes;
  return p;
}

/// Threads per block of `back_columns_fixed_kernel`: one per profile row,
/// in whole warps.
inline int fixed_column_threads(const column_plan &plan) {
  return (2 * plan.profile_rows + 31) / 32 * 32;
}

/// Reproducible back projection by transaxial bins: as
/// `back_columns_kernel`, with `add` the fixed-point adder of the
/// accumulator (`base` + integer `accumulator`, scale 2^e),
/// `fixed_column_threads(plan)` threads per block and `plan` from
/// `make_fixed_column_plan`. Thread t owns row t / S (u or u + 1) of plane
/// t % S of the chunk (S = `plan.profile_rows`) and adds every member's
/// integers into it with plain shared-memory adds.
template <class T, class I, class Lors, class Add>
RESPROJ_KERNEL void __launch_bounds__(256)
    back_columns_fixed_kernel(math::image_grid<T> grid, std::size_t rows,
                              std::size_t columns, column_plan plan, T *base, Lors lors,
                              const T *__restrict__ values, Add add) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const column_shared<T> m(shared_bytes, plan);
  auto *profile = reinterpret_cast<unsigned long long *>(m.profile);
  __shared__ column_state<T> st;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int width = plan.profile_width, span = plan.profile_rows;
  for_each_column_tile(
      grid, rows, columns, plan, lors, st, m, column_values<T>{values},
      column_back_other<T, I, Add>{base, values, add}, [&](std::size_t, int members) {
        const int lo = st.lo, hi = st.hi;
        for (int c0 = lo; c0 <= hi; c0 += span) {
          const int c1 = c0 + span - 1 < hi ? c0 + span - 1 : hi;
          for (int i = tid; i < (c1 - c0 + 1) * 2 * width; i += threads)
            profile[i] = 0ull;
          __syncthreads();
          const int k = tid / span, q = tid % span, p = c0 + q;
          if (k < 2 && p <= c1) {
            const math::axis_point<I, T> u = column_u<I>(grid, st, p);
            const bool in_u = k == 0 ? u.in0 : u.in1;
            const T wu = k == 0 ? u.w0 : u.w1;
            unsigned long long *row =
                profile + (std::size_t(q) * 2 + std::size_t(k)) * std::size_t(width);
            // bilinear_at's terms of this row, amount * (w_u * w_v), each
            // rounded as the per-LOR path rounds it.
            if (in_u)
              for_each_member_on_plane(
                  m, members, 0, 1, p, width,
                  [&](const math::axis_point<int, T> &v, T amount) {
                    if (v.in0)
                      row[v.i] += static_cast<unsigned long long>(
                          math::to_fixed_point(amount * (wu * v.w0), add.scale));
                    if (v.in1)
                      row[v.i + 1] += static_cast<unsigned long long>(
                          math::to_fixed_point(amount * (wu * v.w1), add.scale));
                  });
          }
          __syncthreads();
          // Add the chunk's integer rows into the accumulator.
          const I stride_u = I(grid.stride[st.axis == 0 ? 1 : 0]);
          for (int i = tid; i < (c1 - c0 + 1) * 2 * width; i += threads) {
            const unsigned long long sum = profile[i];
            if (sum == 0ull)
              continue;
            const int plane = i / (2 * width), rest = i - plane * 2 * width;
            const int kk = rest / width, z = rest - kk * width;
            const math::axis_point<I, T> u = column_u<I>(grid, st, c0 + plane);
            const I offset =
                column_base<I>(grid, st, c0 + plane, z) + (u.i + I(kk)) * stride_u;
            add.sink(add.accumulator + offset, static_cast<std::int64_t>(sum));
          }
          __syncthreads();
        }
      });
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
