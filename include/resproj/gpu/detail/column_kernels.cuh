/// @file
/// @brief Non-TOF projection of whole sinograms by transaxial bins.
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
/// per LOR and plane. Forward, the other way round: plane p's two rows are
/// blended once into `P_p(z) = w_u0 x(u, z) + w_u1 x(u + 1, z)` in shared
/// memory, and every member interpolates its samples from the profiles.
///
/// One block per bin (a column of the `[rows][columns]` LOR array). The
/// block takes its first LOR that crosses the image with a transaxial
/// principal axis as the key; LORs with the key's axis, `u0` and `du` are
/// "members", the others (none in a scanner's sinogram) are back-projected
/// one by one, so any LOR set gives the right image and only the speed
/// depends on the structure. Members are stored in shared memory in row
/// order. Back: thread t owns plane `lo + t % S` of the members' plane span
/// S and adds the members of its group `t / S` into its own profile row in
/// shared memory (no atomics, a fixed order); the profiles are summed over
/// the groups and added into the image with the call's adder. Forward:
/// thread t sums the samples of members t, t + threads, ... plane by plane.
///
/// The same terms as `math::forward_planes` and `math::back_planes`
/// (w_u w_v x, value * step * w_u * w_v), grouped differently: the results
/// equal the per-LOR kernels' to rounding.
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

/// Shared-memory plan of a transaxial-bin projection (host-made).
struct column_plan {
  int tile_rows = 0;     ///< members held at once (rows per tile)
  int profile_rows = 0;  ///< plane rows of axial profiles (= threads per block)
  int profile_width = 0; ///< voxels along the axial (v) axis
  std::size_t shared_bytes = 0;
};

/// Shared bytes per member: v0, dv, scale, sum (T) and first, last, row.
template <class T>
constexpr std::size_t column_member_bytes = 4 * sizeof(T) + 3 * sizeof(int);

/// Shared bytes of `n` members, rounded up so that the profiles after them
/// stay 16-byte aligned.
template <class T> RESPROJ_HD constexpr std::size_t column_members_bytes(std::size_t n) {
  return (n * column_member_bytes<T> + 15) / 16 * 16;
}

/// The plan for `rows` LORs per bin on `grid` with at most `budget` bytes
/// of shared memory per block; `profile_rows == 0` when the grid's axial
/// profiles do not fit (the caller then runs the per-LOR kernel).
template <class T>
inline column_plan make_column_plan(const math::image_grid<T> &grid, std::size_t rows,
                                    std::size_t budget, int max_tile_rows = 2048) {
  column_plan p;
  p.profile_width = int(grid.shape[2]);
  const std::size_t tile = rows < std::size_t(max_tile_rows) ? rows : max_tile_rows;
  const std::size_t members = column_members_bytes<T>(tile);
  const std::size_t row_bytes = std::size_t(p.profile_width) * sizeof(T);
  if (members >= budget)
    return p;
  std::size_t prof_rows = (budget - members) / row_bytes;
  if (prof_rows > 256)
    prof_rows = 256;
  prof_rows -= prof_rows % 32;
  if (prof_rows < 128)
    return p; // too few planes at once to keep a block busy
  p.tile_rows = int(tile);
  p.profile_rows = int(prof_rows);
  p.shared_bytes = members + prof_rows * row_bytes;
  return p;
}

/// The members of a tile and the profiles, in dynamic shared memory.
template <class T> struct column_shared {
  T *v0, *dv, *scale, *sum;
  int *first, *last, *row;
  T *profile;

  __device__ column_shared(unsigned char *bytes, const column_plan &plan) {
    const int n = plan.tile_rows;
    v0 = reinterpret_cast<T *>(bytes);
    dv = v0 + n;
    scale = dv + n;
    sum = scale + n;
    first = reinterpret_cast<int *>(sum + n);
    last = first + n;
    row = last + n;
    profile = reinterpret_cast<T *>(bytes + column_members_bytes<T>(std::size_t(n)));
  }
};

/// The block's state: the key (the transaxial numbers every member of the
/// bin shares), the members' plane span, scratch for compaction.
template <class T> struct column_state {
  int axis, have_key, lo, hi;
  T u0, du;
  int warp_counts[8];
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

/// The key of `column`: the first row whose LOR crosses the image along a
/// transaxial principal axis (warp 0 looks; the block synchronises).
template <class T, class Lors>
__device__ void find_column_key(const math::image_grid<T> &grid, std::size_t rows,
                                std::size_t columns, std::size_t column, const Lors &lors,
                                column_state<T> &st) {
  const int lane = int(threadIdx.x & 31u);
  if (threadIdx.x < 32) {
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
        if (lane == __ffs(int(ballot)) - 1) {
          st.axis = r.axis;
          st.u0 = r.u0;
          st.du = r.du;
        }
      }
    }
    if (lane == 0)
      st.have_key = found ? 1 : 0;
  }
  __syncthreads();
}

/// Stores the members among rows [tile, tile_end) of `column` in `m`, in
/// row order, with `scale = weight(lor) * step`, and their plane span in
/// `st.lo`, `st.hi`; returns their count. A LOR whose weight is 0 is
/// skipped; `other(lor, ray)` handles every other LOR that is not a
/// member (including those that miss the image).
template <class T, class Lors, class Weight, class Other>
__device__ int collect_members(const math::image_grid<T> &grid, std::size_t tile,
                               std::size_t tile_end, std::size_t columns,
                               std::size_t column, const Lors &lors, column_state<T> &st,
                               const column_shared<T> &m, Weight &&weight,
                               Other &&other) {
  if (threadIdx.x == 0) {
    st.lo = INT_MAX;
    st.hi = INT_MIN;
  }
  int members = 0;
  for (std::size_t base = tile; base < tile_end; base += blockDim.x) {
    const std::size_t row = base + threadIdx.x;
    const std::size_t lor = row * columns + column;
    math::joseph_ray<T> r;
    const T w = row < tile_end ? weight(lor) : T(0);
    if (w != T(0)) {
      T a[3], b[3];
      lors.load(lor, a, b);
      r = math::make_joseph_ray(grid, a, b);
    }
    const bool member = w != T(0) && !r.empty() && st.have_key && r.axis == st.axis &&
                        r.u0 == st.u0 && r.du == st.du;
    if (w != T(0) && !member)
      other(lor, r);
    int count;
    const int slot = members + block_compact_index(member, st.warp_counts, count);
    if (member) {
      m.v0[slot] = r.v0;
      m.dv[slot] = r.dv;
      m.scale[slot] = w * r.step;
      m.sum[slot] = T(0);
      m.first[slot] = int(r.first_plane);
      m.last[slot] = int(r.last_plane);
      m.row[slot] = int(row - tile);
      atomicMin(&st.lo, int(r.first_plane));
      atomicMax(&st.hi, int(r.last_plane));
    }
    members += count;
  }
  __syncthreads();
  return members;
}

/// The tile loop of the column kernels: finds the key of column
/// `blockIdx.x`, then for each tile of at most `plan.tile_rows` rows
/// collects its members into `m` (as `collect_members`, with `weight` and
/// `other`) and calls `body(tile, members)` when there are any. Every
/// thread of the block calls it.
template <class T, class Lors, class Weight, class Other, class Body>
__device__ void for_each_column_tile(const math::image_grid<T> &grid, std::size_t rows,
                                     std::size_t columns, const column_plan &plan,
                                     const Lors &lors, column_state<T> &st,
                                     const column_shared<T> &m, Weight &&weight,
                                     Other &&other, Body &&body) {
  const std::size_t column = blockIdx.x;
  find_column_key(grid, rows, columns, column, lors, st);
  for (std::size_t tile = 0; tile < rows; tile += std::size_t(plan.tile_rows)) {
    const std::size_t tile_end = rows - tile < std::size_t(plan.tile_rows)
                                     ? rows
                                     : tile + std::size_t(plan.tile_rows);
    const int members = collect_members(grid, tile, tile_end, columns, column, lors, st,
                                        m, weight, other);
    if (members > 0)
      body(tile, members);
  }
}

/// Calls `f(v, amount)` for members e0, e0 + step, ... (in that order)
/// that sample plane p: `v` the member's axial point on p, `amount` its
/// scale.
template <class T, class F>
__device__ void for_each_member_on_plane(const column_shared<T> &m, int members, int e0,
                                         int step, int p, int width, F &&f) {
  for (int e = e0; e < members; e += step) {
    if (p < m.first[e] || p > m.last[e])
      continue;
    f(math::axis_point_at<int>(m.v0[e], m.dv[e], p, width), m.scale[e]);
  }
}

/// The transaxial interpolation of plane p shared by a bin's members.
template <class I, class T>
__device__ math::axis_point<I, T> column_u(const math::image_grid<T> &grid,
                                           const column_state<T> &st, int p) {
  return math::axis_point_at<I>(st.u0, st.du, p, grid.shape[st.axis == 0 ? 1 : 0]);
}

/// Offset of voxel (u = 0, v = z) of plane p along the key's axis.
template <class I, class T>
__device__ I column_base(const math::image_grid<T> &grid, const column_state<T> &st,
                         int p, int z) {
  return I(p) * I(grid.stride[st.axis]) + I(z) * I(grid.stride[2]);
}

template <class T, class I, class Add> struct column_back_other {
  T *image;
  const T *values;
  Add add;
  __device__ void operator()(std::size_t lor, const math::joseph_ray<T> &r) const {
    if (!r.empty())
      math::back_planes<I>(image, r, values[lor], r.first_plane, 1, add);
  }
};
template <class T> struct column_values {
  const T *values;
  __device__ T operator()(std::size_t lor) const { return values[lor]; }
};

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
  const column_shared<T> m(shared_bytes, plan);
  __shared__ column_state<T> st;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int width = plan.profile_width;
  for_each_column_tile(
      grid, rows, columns, plan, lors, st, m, column_values<T>{values},
      column_back_other<T, I, Add>{image, values, add}, [&](std::size_t, int members) {
        const int lo = st.lo, hi = st.hi; // reset by the next tile after this one's syncs
        // Planes [lo, hi] in chunks of `span` planes; `groups` copies of the
        // profiles share the members when the chunk is short.
        const int total_span = hi - lo + 1;
        const int span = total_span < plan.profile_rows ? total_span : plan.profile_rows;
        const int groups = plan.profile_rows / span;
        for (int c0 = lo; c0 <= hi; c0 += span) {
          for (int i = tid; i < groups * span * width; i += threads)
            m.profile[i] = T(0);
          __syncthreads();
          const int group = tid / span, p = c0 + tid % span;
          if (group < groups && p <= hi) {
            T *row = m.profile + std::size_t(tid) * std::size_t(width);
            for_each_member_on_plane(m, members, group, groups, p, width,
                                     [&](const math::axis_point<int, T> &v, T amount) {
                                       if (v.in0)
                                         row[v.i] += amount * v.w0;
                                       if (v.in1)
                                         row[v.i + 1] += amount * v.w1;
                                     });
          }
          __syncthreads();
          // Add the chunk's profiles into rows u and u + 1 of each plane.
          const int c1 = c0 + span - 1 < hi ? c0 + span - 1 : hi;
          for (int i = tid; i < (c1 - c0 + 1) * width; i += threads) {
            const int q = i / width, z = i - q * width;
            T sum = m.profile[std::size_t(q) * std::size_t(width) + std::size_t(z)];
            for (int g = 1; g < groups; ++g)
              sum += m.profile[(std::size_t(g) * std::size_t(span) + std::size_t(q)) *
                                   std::size_t(width) +
                               std::size_t(z)];
            if (sum == T(0))
              continue;
            const math::axis_point<I, T> u = column_u<I>(grid, st, c0 + q);
            const I stride_u = I(grid.stride[st.axis == 0 ? 1 : 0]);
            const I base = column_base<I>(grid, st, c0 + q, z) + u.i * stride_u;
            if (u.in0)
              add(image + base, sum * u.w0);
            if (u.in1)
              add(image + base + stride_u, sum * u.w1);
          }
          __syncthreads();
        }
      });
}

template <class T, class I> struct column_forward_other {
  const T *image;
  T *out;
  __device__ void operator()(std::size_t lor, const math::joseph_ray<T> &r) const {
    out[lor] = math::forward_planes<I>(image, r, r.first_plane, 1); // 0 if r is empty
  }
};
template <class T> struct column_unit {
  __device__ T operator()(std::size_t) const { return T(1); }
};

/// Forward projection of the LORs of a `[rows][columns]` array into
/// `out`, one block per column, as `back_columns_kernel`.
template <class T, class I, class Lors>
RESPROJ_KERNEL void __launch_bounds__(256)
    forward_columns_kernel(math::image_grid<T> grid, std::size_t rows,
                           std::size_t columns, column_plan plan,
                           const T *__restrict__ image, Lors lors, T *__restrict__ out) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  const column_shared<T> m(shared_bytes, plan);
  __shared__ column_state<T> st;
  const std::size_t column = blockIdx.x;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int width = plan.profile_width;
  for_each_column_tile(
      grid, rows, columns, plan, lors, st, m, column_unit<T>{},
      column_forward_other<T, I>{image, out}, [&](std::size_t tile, int members) {
        const int lo = st.lo, hi = st.hi;
        for (int c0 = lo; c0 <= hi; c0 += plan.profile_rows) {
          const int c1 =
              c0 + plan.profile_rows - 1 < hi ? c0 + plan.profile_rows - 1 : hi;
          // Blend each plane's two rows into its profile.
          for (int i = tid; i < (c1 - c0 + 1) * width; i += threads) {
            const int q = i / width, z = i - q * width;
            const math::axis_point<I, T> u = column_u<I>(grid, st, c0 + q);
            const I stride_u = I(grid.stride[st.axis == 0 ? 1 : 0]);
            const I base = column_base<I>(grid, st, c0 + q, z) + u.i * stride_u;
            T v = T(0);
            if (u.in0)
              v += u.w0 * image[base];
            if (u.in1)
              v += u.w1 * image[base + stride_u];
            m.profile[i] = v;
          }
          __syncthreads();
          for (int e = tid; e < members; e += threads) {
            const int p_lo = m.first[e] > c0 ? m.first[e] : c0;
            const int p_hi = m.last[e] < c1 ? m.last[e] : c1;
            const T v0 = m.v0[e], dv = m.dv[e];
            T acc = m.sum[e];
            for (int p = p_lo; p <= p_hi; ++p) {
              const math::axis_point<int, T> v =
                  math::axis_point_at<int>(v0, dv, p, width);
              const T *row = m.profile + std::size_t(p - c0) * std::size_t(width);
              if (v.in0)
                acc += v.w0 * row[v.i];
              if (v.in1)
                acc += v.w1 * row[v.i + 1];
            }
            m.sum[e] = acc;
          }
          __syncthreads();
        }
        for (int e = tid; e < members; e += threads)
          out[(tile + std::size_t(m.row[e])) * columns + column] = m.sum[e] * m.scale[e];
        __syncthreads();
      });
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
