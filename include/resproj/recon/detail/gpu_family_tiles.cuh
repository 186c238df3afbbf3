/// @file
/// @brief The footprints of the all-LOR sensitivity's uniform families
/// (every member with the middle member's weight) added in shared memory:
/// one block per transaxial crystal pair and window of slices along the
/// scanner axis accumulates the footprints of all the pair's families in a
/// tile of the voxel columns around the pair's line, then adds the tile to
/// the difference image once (docs/all-lor-sensitivity.md, "Tiles"). Needs
/// nvcc.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "resproj/core/config.hpp"
#include "resproj/gpu/error.cuh"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/recon/detail/all_lor_plan.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {
namespace detail {

constexpr int family_tile_block = 1024;
/// Voxel columns of the band per index along the line's dominant axis.
constexpr int family_tile_rows = 4;

/// The tile of a block: for each index `im` along the dominant transaxial
/// axis `m` of the pair's line (the one along which it moves more voxels),
/// the `family_tile_rows` columns from `band_base[im]` on along the other
/// transaxial axis `o` (the line's neighbourhood: every tap of a sample on
/// the line lies there), times `window` slices along the scanner axis;
/// pitch `window + 1` (odd, so that lanes on neighbouring `im` use other
/// banks). Taps outside the band (rounding, anisotropic voxels) go to the
/// difference image directly.
///
/// The tile holds 32-bit fixed-point numbers (`unit` per value 1), whose
/// shared-memory atomic adds the GPU executes natively (a float add there
/// is a compare-and-swap loop). Every tap a footprint adds to a cell is at
/// most `max_tap` in magnitude and a footprint adds at most one tap to a
/// cell, so a cell never holds more than `2 * families * (max_tap * unit +
/// 1/2)`: `unit` is the largest power of two that keeps this below 2^31.
struct family_tile_shape {
  int window = 0;  ///< slices per window (a multiple of 4); 0: tiles unused
  int windows = 0; ///< windows covering the padded axis
  int nm_max = 0;  ///< the larger transaxial extent, which the tile holds
  std::size_t bytes = 0;
  float unit = 0; ///< fixed-point units per value 1
};

/// Picks the largest window (a multiple of 4, at most the padded axis
/// rounded up, and at most `max_window` if positive) whose tile fits the
/// shared memory a block of `device` may opt into; `window` 0 where fewer
/// than 8 slices fit.
inline family_tile_shape plan_family_tiles(const math::image_grid<float> &gp, int ax,
                                           std::uint32_t families, int device,
                                           int max_window = 0) {
  int optin = 0;
  RESPROJ_CUDA_TRY(
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  family_tile_shape t;
  const int t0 = ax == 0 ? 1 : 0, t1 = ax == 2 ? 1 : 2;
  const std::int64_t n0 = gp.shape[t0], n1 = gp.shape[t1];
  const std::int64_t nm = n0 > n1 ? n0 : n1;
  const std::int64_t per_slice = 4 * family_tile_rows * nm;
  const std::int64_t fit = (std::int64_t(optin) - 4 * nm) / per_slice - 1;
  const std::int64_t nz = gp.shape[ax], cap = (nz + 3) / 4 * 4;
  std::int64_t window = (fit < cap ? fit : cap) / 4 * 4;
  if (max_window > 0 && window > max_window)
    window = max_window / 4 * 4;
  if (window < 8 || gp.shape[0] * gp.stride[0] > 0x7fffffffLL)
    return t; // too few slices fit, or offsets need 64 bits
  t.window = int(window);
  t.windows = int((nz + window - 1) / window);
  t.nm_max = int(nm);
  t.bytes = std::size_t(per_slice * (window + 1) + 4 * nm);
  // A tap: scale (<= 1) * weight (<= 1) * bilinear weight (<= 1) * step,
  // the step at most sqrt(3) voxels along the principal axis.
  float vmax = 0;
  for (int k = 0; k < 3; ++k)
    vmax = gp.voxel_size[k] > vmax ? gp.voxel_size[k] : vmax;
  const double max_tap = 1.7320508075688772 * double(vmax) * (1 + 1e-6);
  const double adds = 2.0 * double(families > 0 ? families : 1);
  const double room = (2147483647.0 / adds - 0.5) / max_tap;
  if (!(room >= 1.0))
    return family_tile_shape{};
  t.unit = float(std::ldexp(1.0, int(std::floor(std::log2(room)))));
  return t;
}

/// What a lane keeps of a ray until the warp walks it (the rest follows
/// from the axis and the grid): fewer registers than a `joseph_ray`.
struct packed_ray {
  float u0 = 0, du = 0, v0 = 0, dv = 0, step = 0;
  int first = 1, last = 0, axis = 0;
};

__device__ inline packed_ray pack(const math::joseph_ray<float> &r) {
  return {r.u0, r.du, r.v0, r.dv, r.step, int(r.first_plane), int(r.last_plane), r.axis};
}

/// The ray `r` of lane `src`, rebuilt on every lane of the warp (grid `g`).
__device__ inline math::joseph_ray<float> shuffle_ray(const packed_ray &r, int src,
                                                      const math::image_grid<float> &g) {
  constexpr unsigned all = 0xffffffffu;
  math::joseph_ray<float> s;
  s.axis = __shfl_sync(all, r.axis, src);
  s.first_plane = __shfl_sync(all, r.first, src);
  s.last_plane = __shfl_sync(all, r.last, src);
  s.u0 = __shfl_sync(all, r.u0, src);
  s.du = __shfl_sync(all, r.du, src);
  s.v0 = __shfl_sync(all, r.v0, src);
  s.dv = __shfl_sync(all, r.dv, src);
  s.step = __shfl_sync(all, r.step, src);
  const int au = s.axis == 0 ? 1 : 0, av = s.axis == 2 ? 1 : 2;
  s.stride_plane = math::axis_value(g.stride, s.axis);
  s.stride_u = math::axis_value(g.stride, au);
  s.stride_v = math::axis_value(g.stride, av);
  s.size_u = math::axis_value(g.shape, au);
  s.size_v = math::axis_value(g.shape, av);
  return s;
}

/// What a block knows of its pair and window.
struct family_tile_frame {
  int *tile;
  float unit;
  const int *band_base;
  int nm, no;         ///< extents along the line's axes m and o
  int m, o, ax;       ///< the axes
  int z0, window;     ///< the window's first slice and its length
  int s_ax, s_m, s_o; ///< strides of the padded image (< 2^31 voxels)
};

/// Adds `value` (fixed-point units) at tile cell (`row`, `im`, slice
/// `zz` of the window) where `row` lies in the band; otherwise `real`
/// (the same amount as a float) at the padded image's voxel (`z`, `im`,
/// `io`) in `diff`.
__device__ inline void tile_add(const family_tile_frame &fr, int row, int im, int zz,
                                int io, float fixed, float real, float *diff) {
  const int P = fr.window + 1;
  if (unsigned(row) < unsigned(family_tile_rows))
    atomicAdd(fr.tile + (row * fr.nm + im) * P + zz, __float2int_rn(fixed));
  else
    atomicAdd(diff + (fr.z0 + zz) * fr.s_ax + im * fr.s_m + io * fr.s_o, real);
}

/// Adds `amount` times the footprint of `r` shifted by `shift` slices,
/// times `scale`, where its taps fall in the block's window: into the tile
/// where they lie in the band, into `diff` otherwise. Lane `lane` of 32
/// takes the planes lane, lane + 32, ... of those that can reach the
/// window. The amounts are those of `math::scatter_shifted` through
/// `family_atomic_add`.
__device__ inline void tile_footprint(const family_tile_frame &fr,
                                      const math::joseph_ray<float> &r, int shift,
                                      float amount, float scale, float *diff, int lane) {
  const float v = scale * (amount * r.step), vf = v * fr.unit;
  const int pa = r.axis, au = pa == 0 ? 1 : 0;
  // Which of (plane, u, v) is the scanner axis and which is m.
  const int zr = pa == fr.ax ? 0 : (au == fr.ax ? 1 : 2);
  const int mr = pa == fr.m ? 0 : (au == fr.m ? 1 : 2);
  int plo = int(r.first_plane), phi = int(r.last_plane);
  const int zlo = fr.z0 - shift, zhi = fr.z0 + fr.window - 1 - shift; // unshifted
  if (zr == 0) {
    // Planes along the axis: plane p's four taps lie in slice p + shift.
    plo = plo > zlo ? plo : zlo;
    phi = phi < zhi ? phi : zhi;
    const bool m_is_u = mr == 1;
    for (int p = plo + lane; p <= phi; p += 32) {
      const math::bilinear_point<int, float> q = math::bilinear_at<int>(r, p);
      const int zz = p + shift - fr.z0;
      const int im0 = m_is_u ? q.iu : q.iv, io0 = m_is_u ? q.iv : q.iu;
      // Weight of the tap (im0 + a, io0 + b).
      const float w00 = q.weight[0], w11 = q.weight[3];
      const float w10 = m_is_u ? q.weight[1] : q.weight[2];
      const float w01 = m_is_u ? q.weight[2] : q.weight[1];
      if (w00 != 0.f || w01 != 0.f) {
        const int row = io0 - fr.band_base[im0];
        if (w00 != 0.f)
          tile_add(fr, row, im0, zz, io0, vf * w00, v * w00, diff);
        if (w01 != 0.f)
          tile_add(fr, row + 1, im0, zz, io0 + 1, vf * w01, v * w01, diff);
      }
      if (w10 != 0.f || w11 != 0.f) {
        const int row = io0 - fr.band_base[im0 + 1];
        if (w10 != 0.f)
          tile_add(fr, row, im0 + 1, zz, io0, vf * w10, v * w10, diff);
        if (w11 != 0.f)
          tile_add(fr, row + 1, im0 + 1, zz, io0 + 1, vf * w11, v * w11, diff);
      }
    }
    return;
  }
  // Planes across the axis: the taps of plane p lie in slices floor(c) +
  // shift and + 1, c = c0 + p dc, which must meet the window: c in
  // [zlo - 1, zhi + 1). The planes found are widened by one each side; the
  // slice test below is the exact one.
  const float c0 = zr == 1 ? r.u0 : r.v0, dc = zr == 1 ? r.du : r.dv;
  if (dc == 0.f) {
    if (!(c0 >= float(zlo - 1) && c0 < float(zhi + 1)))
      return;
  } else {
    const float pA = (float(zlo - 1) - c0) / dc, pB = (float(zhi + 1) - c0) / dc;
    const float lo = fmaxf(fminf(pA, pB), float(plo - 1));
    const float hi = fminf(fmaxf(pA, pB), float(phi + 1));
    if (!(lo <= hi))
      return;
    const int l = int(floorf(lo)) - 1, h = int(ceilf(hi)) + 1;
    plo = plo > l ? plo : l;
    phi = phi < h ? phi : h;
  }
  const bool z_is_u = zr == 1, plane_is_m = mr == 0;
  for (int p = plo + lane; p <= phi; p += 32) {
    const math::bilinear_point<int, float> q = math::bilinear_at<int>(r, p);
    const int zz = (z_is_u ? q.iu : q.iv) + shift - fr.z0;
    const int it = z_is_u ? q.iv : q.iu; // the transaxial neighbour
    const bool in0 = zz >= 0 && zz < fr.window, in1 = zz + 1 >= 0 && zz + 1 < fr.window;
    if (!in0 && !in1)
      continue;
    for (int d = 0; d < 2; ++d) {
      // Weights of slices zz and zz + 1 at transaxial neighbour it + d.
      const float wa = z_is_u ? q.weight[2 * d] : q.weight[d];
      const float wb = z_is_u ? q.weight[2 * d + 1] : q.weight[d + 2];
      if (wa == 0.f && wb == 0.f)
        continue;
      const int im = plane_is_m ? p : it + d, io = plane_is_m ? it + d : p;
      const int row = io - fr.band_base[im];
      if (in0 && wa != 0.f)
        tile_add(fr, row, im, zz, io, vf * wa, v * wa, diff);
      if (in1 && wb != 0.f)
        tile_add(fr, row, im, zz + 1, io, vf * wb, v * wb, diff);
    }
  }
}

/// Adds `a[0..3]` at `d[0..3]` (contiguous): one float4 atomic at a 16-byte
/// aligned address, two float2 at an 8-byte aligned one, scalars
/// otherwise (zeros skipped).
__device__ inline void add_quad(float *d, const float a[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const auto addr = reinterpret_cast<std::uintptr_t>(d);
  if ((addr & 15u) == 0) {
    atomicAdd(reinterpret_cast<float4 *>(d), make_float4(a[0], a[1], a[2], a[3]));
    return;
  }
  if ((addr & 7u) == 0) {
    if (a[0] != 0.f || a[1] != 0.f)
      atomicAdd(reinterpret_cast<float2 *>(d), make_float2(a[0], a[1]));
    if (a[2] != 0.f || a[3] != 0.f)
      atomicAdd(reinterpret_cast<float2 *>(d + 2), make_float2(a[2], a[3]));
    return;
  }
#endif
  for (int j = 0; j < 4; ++j)
    if (a[j] != 0.f)
      atomicAdd(d + j, a[j]);
}

/// Whether a footprint of family `rf` of pair `cp` (at shift -kr or K -
/// kr) can have a tap in slices [z0, z0 + window): the slices of the
/// middle member's end points, widened by the interpolation.
__device__ inline bool family_reaches_window(const ring_family &rf,
                                             const crystal_pair &cp, const float *centres,
                                             int nc, int ax, float org_ax, float vox_ax,
                                             int z0, int window) {
  const int K = rf.K, kr = K / 2;
  const float za =
      centres[3 * (std::size_t(rf.r1 + kr) * std::size_t(nc) + std::size_t(cp.c1)) +
              std::size_t(ax)];
  const float zb =
      centres[3 * (std::size_t(rf.r2 + kr) * std::size_t(nc) + std::size_t(cp.c2)) +
              std::size_t(ax)];
  const float sa = (za - org_ax) / vox_ax, sb = (zb - org_ax) / vox_ax;
  const int lo = int(floorf(fminf(sa, sb))) - 1, hi = int(floorf(fmaxf(sa, sb))) + 2;
  const int zlast = z0 + window - 1;
  return (lo - kr <= zlast && hi - kr >= z0) ||
         (lo + K - kr <= zlast && hi + K - kr >= z0);
}

/// Block (pair b / windows of `pairs`, window b % windows): the footprints
/// of the pair's families whose weight `weights[pair * num_families +
/// family]` is nonzero (uniform families, `family_head::uniform`: the
/// weight added at shift -kr and subtracted at shift K - kr), accumulated
/// in the tile (`family_tile_shape`, dynamic shared memory) and added to
/// the float difference image `diff` (on `f.gp`).
/// (A template, as every kernel defined in a header.)
template <class Unused = void>
RESPROJ_KERNEL void __launch_bounds__(family_tile_block, 1)
    all_lor_tile_kernel(math::family_grid<float> f, const float *centres, int nc,
                        const crystal_pair *pairs, const ring_family *families,
                        std::uint32_t num_families, const float *weights, int window,
                        int windows, float unit, float *diff) {
  extern __shared__ int shared[];
  const math::image_grid<float> &g = f.gp;
  const int ax = f.ax;
  const int t0 = ax == 0 ? 1 : 0, t1 = ax == 2 ? 1 : 2;
  const std::uint32_t pi = blockIdx.x / std::uint32_t(windows);
  const crystal_pair cp = pairs[pi];
  const float *ca = centres + 3 * std::size_t(cp.c1),
              *cb = centres + 3 * std::size_t(cp.c2);
  // The pair's line in fractional voxel indices; m moves more voxels.
  const float a0 = (math::axis_value(ca, t0) - math::axis_value(g.origin, t0)) /
                   math::axis_value(g.voxel_size, t0);
  const float a1 = (math::axis_value(ca, t1) - math::axis_value(g.origin, t1)) /
                   math::axis_value(g.voxel_size, t1);
  const float d0 = (math::axis_value(cb, t0) - math::axis_value(ca, t0)) /
                   math::axis_value(g.voxel_size, t0);
  const float d1 = (math::axis_value(cb, t1) - math::axis_value(ca, t1)) /
                   math::axis_value(g.voxel_size, t1);
  const bool m1 = fabsf(d1) >= fabsf(d0);
  family_tile_frame fr;
  fr.ax = ax;
  fr.m = m1 ? t1 : t0;
  fr.o = m1 ? t0 : t1;
  fr.nm = int(math::axis_value(g.shape, fr.m));
  fr.no = int(math::axis_value(g.shape, fr.o));
  fr.z0 = int(blockIdx.x % std::uint32_t(windows)) * window;
  fr.window = window;
  fr.s_ax = int(math::axis_value(g.stride, ax));
  fr.s_m = int(math::axis_value(g.stride, fr.m));
  fr.s_o = int(math::axis_value(g.stride, fr.o));
  const int P = window + 1, cells = family_tile_rows * fr.nm * P;
  fr.tile = shared;
  fr.unit = unit;
  int *band = shared + cells;
  fr.band_base = band;
  const float fm = m1 ? a1 : a0, fo = m1 ? a0 : a1;
  const float slope = m1 ? d0 / d1 : d1 / d0;
  for (int i = int(threadIdx.x); i < fr.nm; i += int(blockDim.x))
    band[i] = int(floorf(fo + (float(i) - fm) * slope)) - 1;
  const float *w_pair = weights + std::size_t(pi) * num_families;
  const float org_ax = math::axis_value(g.origin, ax),
              vox_ax = math::axis_value(g.voxel_size, ax);
  // A window no footprint of the pair reaches has nothing to add.
  bool any = false;
  for (std::uint32_t fi = threadIdx.x; fi < num_families && !any; fi += blockDim.x)
    any = w_pair[fi] != 0.f && family_reaches_window(families[fi], cp, centres, nc, ax,
                                                     org_ax, vox_ax, fr.z0, window);
  if (__syncthreads_or(any) == 0)
    return;
  for (int i = int(threadIdx.x); i < cells; i += int(blockDim.x))
    shared[i] = 0;
  __syncthreads();

  const int lane = int(threadIdx.x & 31u);
  const std::uint32_t warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (std::uint32_t fb = warp * 32; fb < num_families; fb += warps * 32) {
    const std::uint32_t fi = fb + std::uint32_t(lane);
    bool hit = false;
    float w = 0.f, scale = 0.f;
    int K = 0;
    packed_ray r;
    if (fi < num_families) {
      w = w_pair[fi];
      if (w != 0.f) {
        const ring_family rf = families[fi];
        K = rf.K;
        hit =
            family_reaches_window(rf, cp, centres, nc, ax, org_ax, vox_ax, fr.z0, window);
        const int kr = K / 2;
        if (hit) {
          const family_ends end{centres, std::size_t(nc), cp.c1, cp.c2, rf.r1, rf.r2};
          float a[3], b[3];
          end(kr, a, b);
          const math::joseph_ray<float> full = math::make_joseph_ray(g, a, b);
          hit = !full.empty();
          r = pack(full);
          scale = float(cp.scale * rf.scale);
        }
      }
    }
    unsigned mask = __ballot_sync(0xffffffffu, hit);
    while (mask != 0u) {
      const int src = __ffs(int(mask)) - 1;
      mask &= mask - 1u;
      const math::joseph_ray<float> rs = shuffle_ray(r, src, g);
      const float ws = __shfl_sync(0xffffffffu, w, src);
      const float sc = __shfl_sync(0xffffffffu, scale, src);
      const int Ks = __shfl_sync(0xffffffffu, K, src), kr = Ks / 2;
      tile_footprint(fr, rs, -kr, ws, sc, diff, lane);
      tile_footprint(fr, rs, Ks - kr, -ws, sc, diff, lane);
    }
  }
  __syncthreads();

  // The tile into the difference image, four slices per thread.
  const int quads = window / 4;
  const int nz = int(math::axis_value(g.shape, ax));
  for (int e = int(threadIdx.x); e < family_tile_rows * fr.nm * quads;
       e += int(blockDim.x)) {
    const int slot = e / quads, zz = 4 * (e - slot * quads);
    const int row = slot / fr.nm, im = slot - row * fr.nm;
    const int io = band[im] + row;
    const int z = fr.z0 + zz;
    if (io < 0 || io >= fr.no || z >= nz)
      continue; // no tap lies there
    const int *t = shared + slot * P + zz;
    if (t[0] == 0 && t[1] == 0 && t[2] == 0 && t[3] == 0)
      continue;
    const float inv = 1.f / unit; // a power of two: exact
    const float a[4] = {float(t[0]) * inv, float(t[1]) * inv, float(t[2]) * inv,
                        float(t[3]) * inv};
    float *d = diff + z * fr.s_ax + im * fr.s_m + io * fr.s_o;
    if (fr.s_ax == 1 && z + 3 < nz) {
      add_quad(d, a);
    } else {
      for (int j = 0; j < 4; ++j)
        if (z + j < nz && a[j] != 0.f)
          atomicAdd(d + j * fr.s_ax, a[j]);
    }
  }
}

} // namespace detail
} // namespace recon
RESPROJ_NAMESPACE_END
