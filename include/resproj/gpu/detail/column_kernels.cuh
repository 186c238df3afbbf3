/// @file
/// @brief Non-TOF back projection of whole sinograms by transaxial bins.
///
/// The LORs of one (view, radial) bin of a `[plane][view][radial]`
/// sinogram, one per sinogram plane (ring pair), join the same two
/// transaxial crystals: they lie in one plane parallel to the scanner axis.
/// When their principal axis is transaxial, every one of them samples image
/// plane p at the same transaxial point: the same lower neighbour and
/// weights along the other transaxial axis (u), computed from the same
/// numbers (`joseph_ray::u0`, `du` and the axis depend on the transaxial
/// end points only). Only the axial coordinate (v) differs. So the bin's
/// samples on plane p add up to an axial profile `P_p(z)`, and the image
/// receives `w_u0 * P_p(z)` in row u and `w_u1 * P_p(z)` in row u + 1: two
/// rows of atomic adds per plane for the whole bin instead of two to four
/// per LOR and plane.
///
/// One block per bin (a column of the `[rows][columns]` LOR array). The
/// block takes its first LOR that crosses the image with a transaxial
/// principal axis as the key; LORs with the key's axis, `u0` and `du` are
/// "members", the others (none in a scanner's sinogram) are back-projected
/// one by one, so any LOR set gives the right image and only the speed
/// depends on the structure. Members are stored in shared memory in row
/// order; thread t then owns plane `lo + t % S` of the members' plane span
/// S and adds the members of its group `t / S` into its own profile row in
/// shared memory: no atomics, a fixed order. The profiles are summed over
/// the groups and added into the image with the call's adder.
///
/// The same terms as `math::back_planes` (value * step * w_u * w_v), summed
/// in another order: the result equals the per-LOR kernels' to rounding.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Shared-memory plan of a transaxial-bin back projection (host-made).
struct column_plan {
  int tile_rows = 0;     ///< members held at once (rows per tile)
  int profile_rows = 0;  ///< plane rows of axial profiles (= threads per block)
  int profile_width = 0; ///< voxels along the axial (v) axis
  std::size_t shared_bytes = 0;
};

/// The plan for `rows` LORs per bin on `grid` with at most `budget` bytes
/// of shared memory per block; `profile_rows == 0` when the grid's axial
/// profiles do not fit (the caller then runs the per-LOR kernel).
template <class T>
inline column_plan make_column_plan(const math::image_grid<T> &grid, std::size_t rows,
                                    std::size_t budget, int max_tile_rows = 2048) {
  column_plan p;
  p.profile_width = int(grid.shape[2]);
  const std::size_t entry = 3 * sizeof(T) + 2 * sizeof(int);
  const std::size_t tile = rows < std::size_t(max_tile_rows) ? rows : max_tile_rows;
  const std::size_t row_bytes = std::size_t(p.profile_width) * sizeof(T);
  if (tile * entry >= budget)
    return p;
  std::size_t prof_rows = (budget - tile * entry) / row_bytes;
  if (prof_rows > 256)
    prof_rows = 256;
  prof_rows -= prof_rows % 32;
  if (prof_rows < 128)
    return p; // too few planes at once to keep a block busy
  p.tile_rows = int(tile);
  p.profile_rows = int(prof_rows);
  p.shared_bytes = tile * entry + prof_rows * row_bytes;
  return p;
}

/// The transaxial numbers every member of a bin shares.
template <class T> struct column_key {
  int axis;
  T u0, du;
};

/// Index of this thread's flagged item among the block's flagged items,
/// in thread order; `total` gets their count. Every thread of the block
/// calls it (it synchronises the block).
__device__ inline int block_compact_index(bool flag, int *warp_counts, int &total) {
  const int lane = int(threadIdx.x & 31u), warp = int(threadIdx.x >> 5);
  const int warps = int(blockDim.x >> 5);
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  if (lane == 0)
    warp_counts[warp] = __popc(ballot);
  __syncthreads();
  int before = 0;
  total = 0;
  for (int w = 0; w < warps; ++w) {
    const int n = warp_counts[w];
    before += w < warp ? n : 0;
    total += n;
  }
  __syncthreads(); // warp_counts is reused by the next call
  return before + __popc(ballot & ((1u << lane) - 1u));
}

/// Back projection of `values` along the LORs of a `[rows][columns]`
/// array, one block per column (transaxial bin), `plan.profile_rows`
/// threads per block and `plan.shared_bytes` of dynamic shared memory.
/// `add(T* voxel, T amount)` adds into the image (atomically).
template <class T, class I, class Lors, class Add>
RESPROJ_KERNEL void __launch_bounds__(256)
    back_columns_kernel(math::image_grid<T> grid, std::size_t rows, std::size_t columns,
                        column_plan plan, T *__restrict__ image, Lors lors,
                        const T *__restrict__ values, Add add) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const int tile_rows = plan.tile_rows, width = plan.profile_width;
  T *m_v0 = reinterpret_cast<T *>(shared_bytes);
  T *m_dv = m_v0 + tile_rows;
  T *m_amount = m_dv + tile_rows;
  int *m_first = reinterpret_cast<int *>(m_amount + tile_rows);
  int *m_last = m_first + tile_rows;
  T *profile = reinterpret_cast<T *>(m_last + tile_rows);
  __shared__ column_key<T> key;
  __shared__ int have_key, lo, hi;
  __shared__ int warp_counts[8];

  const std::size_t column = blockIdx.x;
  const int tid = int(threadIdx.x), lane = tid & 31;
  const int threads = int(blockDim.x);

  // The key: the first row whose LOR crosses the image along a
  // transaxial principal axis.
  if (tid < 32) {
    bool found = false;
    for (std::size_t base = 0; base < rows && !found; base += 32) {
      const std::size_t row = base + std::size_t(lane);
      math::joseph_ray<T> r;
      if (row < rows) {
        T a[3], b[3];
        lors.load(row * columns + column, a, b);
        r = math::make_joseph_ray(grid, a, b);
      }
      const bool good = row < rows && !r.empty() && r.axis != 2;
      const unsigned ballot = __ballot_sync(0xffffffffu, good);
      if (ballot != 0u) {
        found = true;
        if (lane == __ffs(int(ballot)) - 1)
          key = column_key<T>{r.axis, r.u0, r.du};
      }
    }
    if (lane == 0)
      have_key = found ? 1 : 0;
  }
  __syncthreads();

  for (std::size_t tile = 0; tile < rows; tile += std::size_t(tile_rows)) {
    const std::size_t tile_end =
        rows - tile < std::size_t(tile_rows) ? rows : tile + std::size_t(tile_rows);
    if (tid == 0) {
      lo = INT_MAX;
      hi = INT_MIN;
    }
    // Members into shared memory (row order); other LORs one by one.
    int members = 0;
    for (std::size_t base = tile; base < tile_end; base += std::size_t(threads)) {
      const std::size_t row = base + std::size_t(tid);
      math::joseph_ray<T> r;
      T value = T(0);
      if (row < tile_end) {
        const std::size_t lor = row * columns + column;
        value = values[lor];
        if (value != T(0)) {
          T a[3], b[3];
          lors.load(lor, a, b);
          r = math::make_joseph_ray(grid, a, b);
        }
      }
      const bool live = value != T(0) && !r.empty();
      const bool member =
          live && have_key && r.axis == key.axis && r.u0 == key.u0 && r.du == key.du;
      if (live && !member)
        math::back_planes<I>(image, r, value, r.first_plane, 1, add);
      int count;
      const int slot = members + block_compact_index(member, warp_counts, count);
      if (member) {
        m_v0[slot] = r.v0;
        m_dv[slot] = r.dv;
        m_amount[slot] = value * r.step;
        m_first[slot] = int(r.first_plane);
        m_last[slot] = int(r.last_plane);
        atomicMin(&lo, int(r.first_plane));
        atomicMax(&hi, int(r.last_plane));
      }
      members += count;
    }
    __syncthreads();
    if (members == 0)
      continue;
    const int plo = lo, phi = hi; // reset by the next tile after this one's syncs

    // Planes [plo, phi] in chunks of `span` planes; `groups` copies of the
    // profiles share the members when the chunk is short.
    const int total_span = phi - plo + 1;
    const int span = total_span < plan.profile_rows ? total_span : plan.profile_rows;
    const int groups = plan.profile_rows / span;
    for (int c0 = plo; c0 <= phi; c0 += span) {
      for (int i = tid; i < groups * span * width; i += threads)
        profile[i] = T(0);
      __syncthreads();
      const int group = tid / span, p = c0 + tid % span;
      if (group < groups && p <= phi) {
        T *row = profile + std::size_t(tid) * std::size_t(width);
        for (int e = group; e < members; e += groups) {
          if (p < m_first[e] || p > m_last[e])
            continue;
          const math::axis_point<int, T> v =
              math::axis_point_at<int>(m_v0[e], m_dv[e], p, width);
          const T amount = m_amount[e];
          if (v.in0)
            row[v.i] += amount * v.w0;
          if (v.in1)
            row[v.i + 1] += amount * v.w1;
        }
      }
      __syncthreads();
      // Add the chunk's profiles into rows u and u + 1 of each plane.
      const int c1 = c0 + span - 1 < phi ? c0 + span - 1 : phi;
      const int au = key.axis == 0 ? 1 : 0;
      const I stride_plane = I(grid.stride[key.axis]), stride_u = I(grid.stride[au]);
      const I stride_v = I(grid.stride[2]);
      for (int i = tid; i < (c1 - c0 + 1) * width; i += threads) {
        const int q = i / width, z = i - q * width;
        T sum = profile[std::size_t(q) * std::size_t(width) + std::size_t(z)];
        for (int g = 1; g < groups; ++g)
          sum += profile[(std::size_t(g) * std::size_t(span) + std::size_t(q)) *
                             std::size_t(width) +
                         std::size_t(z)];
        if (sum == T(0))
          continue;
        const int pl = c0 + q;
        const math::axis_point<I, T> u =
            math::axis_point_at<I>(key.u0, key.du, pl, grid.shape[au]);
        const I base = I(pl) * stride_plane + u.i * stride_u + I(z) * stride_v;
        if (u.in0)
          add(image + base, sum * u.w0);
        if (u.in1)
          add(image + base + stride_u, sum * u.w1);
      }
      __syncthreads();
    }
  }
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
