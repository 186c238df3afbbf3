/// @file
/// @brief The sensitivity image with attenuation over every LOR of a
/// polygon scanner on the GPU (docs/all-lor-sensitivity.md): the sum of
/// `recon::all_lor_sensitivity`, one warp per (crystal pair, axial ring
/// family) walking its attenuation, the footprints added to a padded float
/// difference image (those of uniform families per crystal pair in
/// shared-memory tiles, detail/gpu_family_tiles.cuh), then a prefix sum
/// along the axis and the mirror flips. Also the LOR-by-LOR reference
/// `gpu_all_lor_sensitivity_brute_force`. Needs nvcc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/paired_atomics.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/recon/detail/all_lor_plan.hpp"
#include "resproj/recon/detail/gpu_family_tiles.cuh"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {
namespace detail {

constexpr int all_lor_block = 256;
/// Blocks of the family kernel resident per multiprocessor that its
/// register budget is set for.
constexpr int all_lor_min_blocks = 2;

/// Family items per chunk of crystal pairs (their weights: 256 MiB).
constexpr std::size_t family_chunk_items = std::size_t(1) << 26;

/// Blocks for a grid-stride loop over `count` items.
inline std::size_t all_lor_blocks(std::uint64_t count) {
  const std::uint64_t b = (count + all_lor_block - 1) / all_lor_block;
  return std::size_t(b < 0x7fffffffu ? b : 0x7fffffffu);
}

/// The 32 lanes of a warp walking one ray together (math::serial_lanes'
/// interface); every lane of the warp must call each reduction.
struct warp_lanes {
  __device__ int lane() const noexcept { return int(threadIdx.x & 31u); }
  __device__ int size() const noexcept { return 32; }
  template <class V> __device__ V sum(V v) const noexcept {
    for (int d = 16; d > 0; d /= 2)
      v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
  }
  template <class V> __device__ V min(V v) const noexcept {
    for (int d = 16; d > 0; d /= 2) {
      const V o = __shfl_xor_sync(0xffffffffu, v, d);
      v = o < v ? o : v;
    }
    return v;
  }
  template <class V> __device__ V max(V v) const noexcept {
    for (int d = 16; d > 0; d /= 2) {
      const V o = __shfl_xor_sync(0xffffffffu, v, d);
      v = o > v ? o : v;
    }
    return v;
  }
};

/// Warps of a grid-stride loop over `count` items, one item per warp.
inline std::size_t all_lor_warp_blocks(std::uint64_t count) {
  const std::uint64_t b = (count + all_lor_block / 32 - 1) / (all_lor_block / 32);
  return std::size_t(b < (1u << 20) ? b : (1u << 20));
}

/// The family kernel's adder into the float difference image: `scale`
/// times each amount, the two taps of a sample that are neighbours along
/// the contiguous axis with one vector atomic, and for rays along that axis
/// the taps of two consecutive planes in one column (gpu::detail::paired_atomic_add).
struct family_atomic_add {
  static constexpr bool adds_pairs = true;
  float scale;
  gpu::detail::paired_atomic_add paired; ///< extent: the padded image's voxels
  __device__ void operator()(float *voxel, float amount) const {
    atomicAdd(voxel, scale * amount);
  }
  __device__ void pair(float *diff, std::int64_t o_lo, float w_lo, std::int64_t o_hi,
                       float w_hi, float v) const {
    paired.add_pair<std::int64_t>(diff, o_lo, w_lo, o_hi, w_hi, scale * v);
  }
  static constexpr bool scatters_plane_pairs = true;
  template <class I>
  __device__ void scatter_plane_pair(float *diff, const math::joseph_ray<float> &r,
                                     std::int64_t p, float v0, float v1,
                                     std::int64_t delta) const {
    paired.scatter_plane_pair<I>(diff, r, p, v0, v1, delta, scale);
  }
};

/// Work items t = first .. first + count - 1, t = (pair t / num_families,
/// family t % num_families), one per warp, whose lanes share each walk
/// (`math::walk_family_head`). With `weights` (indexed by t - first), a
/// uniform family (`family_head::uniform`) only records its weight there
/// (`all_lor_tile_kernel` adds its footprints) and every other item
/// records 0; without, or for the other families, the footprints go into
/// the float difference image `diff` (on `f.gp`) through `add` (a
/// `family_atomic_add` whose scale the kernel sets per item: the pair's
/// and the family's weight). `walks` (or null) receives the attenuation
/// and scatter walks. (A template, as every kernel defined in a header.)
template <class Add>
RESPROJ_KERNEL void __launch_bounds__(all_lor_block, all_lor_min_blocks)
    all_lor_family_kernel(math::family_grid<float> f, const float *centres, int nc,
                          const crystal_pair *pairs, const ring_family *families,
                          std::uint32_t num_families, std::uint64_t first,
                          std::uint64_t count, float *weights, float *diff, Add add,
                          unsigned long long *walks) {
  const warp_lanes lanes;
  unsigned long long attenuation = 0, scatter = 0;
  const std::uint64_t step = std::uint64_t(gridDim.x) * (blockDim.x / 32);
  for (std::uint64_t i = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       i < count; i += step) {
    const std::uint64_t t = first + i;
    const crystal_pair cp = pairs[t / num_families];
    const ring_family rf = families[t % num_families];
    const family_ends end{centres, std::size_t(nc), cp.c1, cp.c2, rf.r1, rf.r2};
    const math::family_head<float, float> h =
        math::walk_family_head<float, float>(f, rf.K, end, lanes);
    attenuation += h.walked ? 1 : 0;
    const bool tiled = weights != nullptr && h.uniform(rf.K) && !h.ray.empty();
    if (weights != nullptr && lanes.lane() == 0)
      weights[i] = tiled ? h.shared : 0.f;
    if (h.ray.empty())
      continue;
    if (tiled) {
      scatter += h.shared != 0.f ? 2 : 0;
      continue;
    }
    add.scale = float(cp.scale * rf.scale);
    const math::family_work w =
        math::back_project_members(f, rf.K, end, h, diff, add, lanes);
    attenuation += w.attenuation_walks;
    scatter += w.scatter_walks;
  }
  if (walks != nullptr && lanes.lane() == 0) {
    atomicAdd(walks, attenuation);
    atomicAdd(walks + 1, scatter);
  }
}

/// Prefix sums of `d` along the axis of stride `stride` and length `n`,
/// one thread per column of `columns`, accumulated in double.
template <class Acc>
RESPROJ_KERNEL void prefix_along_axis_kernel(Acc *d, std::int64_t columns,
                                             std::int64_t stride, std::int64_t n) {
  const std::int64_t c = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= columns)
    return;
  Acc *p = d + (c / stride) * stride * n + c % stride;
  double acc = 0;
  for (std::int64_t j = 0; j < n; ++j, p += stride) {
    acc += double(*p);
    *p = Acc(acc);
  }
}

/// out[v] = sum over the subsets S of the axes in `flips` of
/// padded[flip_S(v)], with `padded` the image padded by `pad` slices along
/// `ax` (shape `n` unpadded).
template <class Acc>
RESPROJ_KERNEL void crop_mirrored_kernel(const Acc *padded, float *out, std::int64_t n0,
                                         std::int64_t n1, std::int64_t n2, int ax,
                                         int pad, unsigned flips) {
  const std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t n[3] = {n0, n1, n2};
  if (o >= n0 * n1 * n2)
    return;
  const std::int64_t i[3] = {o / (n1 * n2), (o / n2) % n1, o % n2};
  std::int64_t np[3] = {n0, n1, n2};
  np[ax] += 2 * pad;
  double sum = 0;
  for (unsigned m = 0; m < 8; ++m) {
    if ((m & ~flips) != 0)
      continue;
    std::int64_t j[3];
    for (int k = 0; k < 3; ++k)
      j[k] = ((m >> k) & 1u) != 0 ? n[k] - 1 - i[k] : i[k];
    j[ax] += pad;
    sum += double(padded[(j[0] * np[1] + j[1]) * np[2] + j[2]]);
  }
  out[o] = float(sum);
}

/// LOR by LOR: item t = (pair t / (nr nr), ring r1, ring r2) of the pairs
/// `pairs`, one per thread: its attenuation walked through `mu` (or weight
/// 1 without) and its weight back-projected into `image` (on `g`), in
/// double. (One thread per LOR measured faster than a warp per LOR here.)
template <class Acc>
RESPROJ_KERNEL void __launch_bounds__(all_lor_block)
    all_lor_brute_force_kernel(math::image_grid<float> g, const float *mu,
                               const float *centres, int nc, int nr,
                               const crystal_pair *pairs, std::uint64_t count,
                               Acc *image) {
  const std::uint64_t step = std::uint64_t(gridDim.x) * blockDim.x;
  const std::uint64_t rings = std::uint64_t(nr) * std::uint64_t(nr);
  for (std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < count;
       t += step) {
    const crystal_pair cp = pairs[t / rings];
    const int rr = int(t % rings);
    float a[3], b[3];
    family_ends{centres, std::size_t(nc), cp.c1, cp.c2, rr / nr, rr % nr}(0, a, b);
    const math::joseph_ray<float> r = math::make_joseph_ray(g, a, b);
    if (r.empty())
      continue;
    const Acc w = mu == nullptr
                      ? Acc(1)
                      : Acc(exp(-double(math::forward_planes(mu, r, r.first_plane, 1))));
    const Acc v = w * Acc(r.step);
    for (std::int64_t q = r.first_plane; q <= r.last_plane; ++q) {
      const auto st = math::stencil_at<std::int64_t>(r, q);
      for (int i = 0; i < 4; ++i)
        if (st.weight[i] != 0.f)
          atomicAdd(image + st.offset[i], v * Acc(st.weight[i]));
    }
  }
}

/// Checks `out` against `g` (geometry, null, device memory of its device).
inline void check_all_lor_output(const image_geometry &g,
                                 const gpu::device_image_view<float> &out) {
  if (out.geometry != g)
    resproj::detail::throw_invalid("out", "geometry is not the image geometry g");
  if (out.data == nullptr)
    resproj::detail::throw_invalid("out.data", "null");
  gpu::require_device_pointer(out.data, out.device, "out.data");
}

/// `v` copied to a new device buffer (queued on `s`).
template <class T>
gpu::device_buffer<T> to_device(const std::vector<T> &v, gpu::stream_ref s) {
  gpu::device_buffer<T> d(v.size(), s);
  if (!v.empty())
    d.copy_from_host(span<const T>(v.data(), v.size()), s);
  return d;
}

/// Queues the LOR-by-LOR sum over `pairs` (device) into `image` (device,
/// double, on `g`, not zeroed here); `mu` (device) on `g` or null.
inline void launch_all_lor_brute_force(const image_geometry &g, const float *mu,
                                       const float *centres, int nc, int nr,
                                       span<const crystal_pair> pairs, double *image,
                                       gpu::stream_ref s) {
  const std::uint64_t count =
      std::uint64_t(pairs.size()) * std::uint64_t(nr) * std::uint64_t(nr);
  gpu::detail::launch(all_lor_brute_force_kernel<double>, all_lor_blocks(count),
                      all_lor_block, s, "all_lor_brute_force_kernel",
                      math::image_grid<float>::from(g), mu, centres, nc, nr, pairs.data(),
                      count, image);
}

} // namespace detail

namespace detail {
/// `gpu_all_lor_sensitivity` with the tiles' window capped at `max_window`
/// slices (0: as many as fit), so that tests can cut small images into
/// several windows.
inline void run_all_lor_sensitivity(const scanner::polygon_scanner &s,
                                    const image_geometry &g, span<const float> mu,
                                    gpu::device_image_view<float> out, gpu::stream_ref st,
                                    all_lor_sensitivity_stats *stats, int max_window) {
  check_all_lor_output(g, out);
  const all_lor_plan plan = make_all_lor_plan(s, g, mu);
  const gpu::device_guard guard(out.device);
  const std::int64_t voxels = plan.p.gp.num_voxels();
  gpu::device_buffer<float> diff(std::size_t(voxels), st);
  RESPROJ_CUDA_TRY(
      cudaMemsetAsync(diff.data(), 0, std::size_t(voxels) * sizeof(float), st.get()));
  const auto dmu = to_device(plan.p.mu, st);
  const auto support = to_device(plan.p.support, st);
  const auto run_first = to_device(plan.p.run_first, st);
  const auto run_last = to_device(plan.p.run_last, st);
  const auto centres = to_device(plan.centres, st);
  const auto pairs = to_device(plan.pairs, st);
  const auto families = to_device(plan.families, st);
  gpu::device_buffer<unsigned long long> walks(2, st);
  RESPROJ_CUDA_TRY(
      cudaMemsetAsync(walks.data(), 0, 2 * sizeof(unsigned long long), st.get()));
  const math::family_grid<float> f =
      plan.grid(dmu.data(), support.data(), run_first.data(), run_last.data());
  const std::uint64_t count =
      std::uint64_t(plan.pairs.size()) * std::uint64_t(plan.families.size());
  family_atomic_add add{};
  add.paired.extent = voxels;
  const std::uint32_t nf = std::uint32_t(plan.families.size());
  const family_tile_shape tiles = plan_family_tiles(
      f.gp, plan.ax, std::uint32_t(plan.families.size()), out.device, max_window);
  if (tiles.window == 0) { // no tile fits: every footprint by atomics
    gpu::detail::launch(all_lor_family_kernel<family_atomic_add>,
                        all_lor_warp_blocks(count), all_lor_block, st,
                        "all_lor_family_kernel", f, centres.data(), s.crystals_per_ring(),
                        pairs.data(), families.data(), nf, std::uint64_t(0), count,
                        static_cast<float *>(nullptr), diff.data(), add, walks.data());
  } else if (nf > 0) {
    // Chunks of pairs: the families' weights, then the pairs' tiles.
    const std::size_t chunk = std::max<std::size_t>(1, family_chunk_items / nf);
    gpu::device_buffer<float> weights(std::min(chunk, plan.pairs.size()) * nf, st);
    for (std::size_t p0 = 0; p0 < plan.pairs.size(); p0 += chunk) {
      const std::size_t np = std::min(chunk, plan.pairs.size() - p0);
      const std::uint64_t items = std::uint64_t(np) * nf;
      gpu::detail::launch(
          all_lor_family_kernel<family_atomic_add>, all_lor_warp_blocks(items),
          all_lor_block, st, "all_lor_family_kernel", f, centres.data(),
          s.crystals_per_ring(), pairs.data(), families.data(), nf,
          std::uint64_t(p0) * nf, items, weights.data(), diff.data(), add, walks.data());
      gpu::detail::launch_shared(
          all_lor_tile_kernel<>, np * std::size_t(tiles.windows), family_tile_block,
          tiles.bytes, st, "all_lor_tile_kernel", f, centres.data(),
          s.crystals_per_ring(), pairs.data() + p0, families.data(), nf,
          weights.cview().data(), tiles.window, tiles.windows, tiles.unit, diff.data());
    }
  }
  const int ax = plan.ax;
  const std::int64_t n = plan.p.gp.shape()[std::size_t(ax)];
  const std::int64_t columns = voxels / n;
  gpu::detail::launch(prefix_along_axis_kernel<float>,
                      all_lor_blocks(std::uint64_t(columns)), all_lor_block, st,
                      "prefix_along_axis_kernel", diff.data(), columns,
                      std::int64_t(f.gp.stride[ax]), n);
  const auto &shape = g.shape();
  const unsigned flips = (plan.sym.flip[0] ? 1u : 0u) | (plan.sym.flip[1] ? 2u : 0u) |
                         (plan.sym.flip[2] ? 4u : 0u);
  gpu::detail::launch(crop_mirrored_kernel<float>,
                      all_lor_blocks(std::uint64_t(g.num_voxels())), all_lor_block, st,
                      "crop_mirrored_kernel", diff.cview().data(), out.data, shape[0],
                      shape[1], shape[2], ax, plan.pad, flips);
  unsigned long long w[2] = {0, 0};
  RESPROJ_CUDA_TRY(
      cudaMemcpyAsync(w, walks.data(), sizeof(w), cudaMemcpyDeviceToHost, st.get()));
  RESPROJ_CUDA_TRY(cudaStreamSynchronize(st.get()));
  plan_stats(plan, s, w[0], w[1], stats);
}

} // namespace detail

/// `recon::all_lor_sensitivity` on the GPU that owns `out`: the sensitivity
/// image `sum_L a_L exp(-(A mu)_L)` over every LOR of `s` (all unordered
/// detector pairs of distinct transaxial crystals, every ring difference),
/// by axial families and the scanner's mirror flips, written to `out` as
/// float. The same sum as the CPU call up to the rounding of a float
/// difference image (atomics in any order; within 2e-5 of the peak on the
/// tested scanners, docs/all-lor-sensitivity.md).
///
/// Device memory while it runs: the image padded by 2 slices at both ends
/// along the axis and `mu` padded, both in float (with `tb`'s image of
/// 240 x 240 x 682: 158 MB each), the weights of one chunk of families
/// (at most 2^26 floats, 256 MiB), plus the crystal centres and the tables
/// of pairs and families.
///
/// @param s     the scanner; every ring inside the image box along its axis
/// @param g     the image geometry
/// @param mu    attenuation per voxel on the host (1/length unit),
///              `g.num_voxels()` values, or empty for no attenuation
/// @param out   the image (device memory of `out.device`), geometry `g`
/// @param st    stream the work is queued on
/// @param stats if not null, receives what was walked
/// @throws invalid_argument naming "g", "mu" (as `all_lor_sensitivity`),
///         "out" (another geometry), "out.data" (null, host memory, memory
///         of another device), before anything is written; gpu_error on a
///         runtime failure. Synchronises with `st` before returning.
inline void gpu_all_lor_sensitivity(const scanner::polygon_scanner &s,
                                    const image_geometry &g, span<const float> mu,
                                    gpu::device_image_view<float> out, gpu::stream_ref st,
                                    all_lor_sensitivity_stats *stats = nullptr) {
  detail::run_all_lor_sensitivity(s, g, mu, out, st, stats, 0);
}

/// `gpu_all_lor_sensitivity` computed LOR by LOR on the GPU: every LOR's
/// attenuation walked and its weight back-projected (atomic adds in
/// double). The reference for tests and benchmarks; takes every LOR's two
/// walks. Device memory: the image in double, `mu`, the crystal centres
/// and the crystal pairs.
/// @throws invalid_argument as `gpu_all_lor_sensitivity`. Synchronises with
///         `st` before returning.
inline void gpu_all_lor_sensitivity_brute_force(const scanner::polygon_scanner &s,
                                                const image_geometry &g,
                                                span<const float> mu,
                                                gpu::device_image_view<float> out,
                                                gpu::stream_ref st) {
  detail::check_all_lor_output(g, out);
  detail::check_all_lor_inputs(s, g, mu);
  const gpu::device_guard guard(out.device);
  const int nc = s.crystals_per_ring();
  std::vector<detail::crystal_pair> all;
  all.reserve(std::size_t(nc) * std::size_t(nc - 1) / 2);
  for (int c1 = 0; c1 < nc; ++c1)
    for (int c2 = c1 + 1; c2 < nc; ++c2)
      all.push_back({c1, c2, 1.0});
  const auto pairs = detail::to_device(all, st);
  const auto centres = detail::to_device(s.detector_centres(), st);
  const auto dmu = detail::to_device(std::vector<float>(mu.begin(), mu.end()), st);
  const std::int64_t voxels = g.num_voxels();
  gpu::device_buffer<double> image(std::size_t(voxels), st);
  RESPROJ_CUDA_TRY(
      cudaMemsetAsync(image.data(), 0, std::size_t(voxels) * sizeof(double), st.get()));
  detail::launch_all_lor_brute_force(g, mu.empty() ? nullptr : dmu.data(), centres.data(),
                                     nc, s.num_rings(), pairs.cspan(), image.data(), st);
  gpu::detail::launch(
      detail::crop_mirrored_kernel<double>, detail::all_lor_blocks(std::uint64_t(voxels)),
      detail::all_lor_block, st, "crop_mirrored_kernel", image.cview().data(), out.data,
      g.shape()[0], g.shape()[1], g.shape()[2], 0, 0, 0u);
  RESPROJ_CUDA_TRY(cudaStreamSynchronize(st.get()));
}

} // namespace recon
RESPROJ_NAMESPACE_END
