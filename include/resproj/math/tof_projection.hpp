/// @file
/// @brief TOF Joseph projection of one LOR (docs/projection.md, "TOF"):
/// sinogram and list-mode, forward and back. The one implementation of the
/// per-LOR TOF loops, called by the CPU backend and the GPU kernels.
///
/// Plane subsets: every `*_planes` function visits the planes
/// `first, first + stride, ...` up to `ray.last_plane` (like
/// `forward_planes`), so several GPU lanes can share a LOR; `first =
/// ray.first_plane, stride = 1` visits all. List-mode functions further skip
/// the planes outside `tof_plane_range` of the event's bin.
///
/// Functors supplied by callers (`emit`, `add`) are called from
/// __host__ __device__ code compiled with nv_exec_check_disable, so host-only
/// functors work on the CPU; use named functors, not lambdas, under nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/plane_pairs.hpp"
#include "resproj/math/tof.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// TOF constants of LOR i of a call (per-LOR sigma/offset if present).
template <class T>
RESPROJ_HD tof_lor<T> tof_lor_of(const tof_params<T> &tof, std::size_t i) noexcept {
  return make_tof_lor(tof.bin_width, tof.num_bins, tof.sigma_of(i),
                      tof.center_offset_of(i), tof.num_sigmas);
}

namespace detail {

/// for_each_tof_weight callback of the sinogram forward: emit(j, v * w_j).
template <class T, class Emit> struct tof_emit_sample {
  T value;
  Emit &emit;
  RESPROJ_EXEC_CHECK_DISABLE
  RESPROJ_HD void operator()(std::int64_t j, T w) const { emit(j, value * w); }
};

/// for_each_tof_weight callback of the sinogram back: sum_j values[j] w_j.
template <class T> struct tof_weighted_sum {
  const T *values;
  std::int64_t stride;
  T sum;
  RESPROJ_HD void operator()(std::int64_t j, T w) noexcept {
    sum += values[j * stride] * w;
  }
};

/// First plane >= lo of the subset `first, first + stride, ...`.
RESPROJ_HD inline std::int64_t first_in_subset(std::int64_t first, std::int64_t stride,
                                               std::int64_t lo) noexcept {
  if (first >= lo)
    return first;
  return first + (lo - first + stride - 1) / stride * stride;
}

/// Adders that scatter a whole sample themselves (e.g. with vector atomics
/// on the GPU) declare `static constexpr bool scatters_samples = true` and
/// a member `template <class I, class T> void scatter_sample(T *image, const
/// joseph_ray<T> &r, std::int64_t p, T value) const` that adds the same
/// amounts as `scatter<I>(image, r, p, value, add)`.
template <class Add, class = void> struct scatters_samples : std::false_type {};
template <class Add>
struct scatters_samples<Add, std::enable_if_t<std::decay_t<Add>::scatters_samples>>
    : std::true_type {};

/// `scatter<I>` of one sample through `add`, or the adder's own sample
/// scatter when it has one.
RESPROJ_EXEC_CHECK_DISABLE
template <class I, class T, class Add>
RESPROJ_HD void tof_scatter(T *image, const joseph_ray<T> &r, std::int64_t p, T value,
                            Add &&add) noexcept {
  if constexpr (scatters_samples<Add>::value)
    add.template scatter_sample<I>(image, r, p, value);
  else
    scatter<I>(image, r, p, value, add);
}

/// Adds into a row `out[j * stride]` (one writer per row).
template <class T> struct row_add {
  T *out;
  std::int64_t stride;
  RESPROJ_HD void operator()(std::int64_t j, T amount) const noexcept {
    out[j * stride] += amount;
  }
};

} // namespace detail

/// TOF sinogram forward, planes `first, first + stride, ...` of `r`: calls
/// `emit(j, sample_p * weight_j(p))` for every visited plane p and every
/// bin j of its window inside [0, N-1] (planes in increasing order, bins in
/// increasing j). Not yet multiplied by `r.step`: the LOR's value at bin j
/// is `r.step * (sum of its emitted amounts)`.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Emit>
RESPROJ_HD void forward_tof_sino_planes(const T *image, const joseph_ray<T> &r,
                                        const tof_lor<T> &tl, std::int64_t first,
                                        std::int64_t stride, Emit &&emit) noexcept {
  for (std::int64_t p = first; p <= r.last_plane; p += stride) {
    const T v = sample<I>(image, r, p);
    if (v == T(0))
      continue; // adds only zeros
    const detail::tof_emit_sample<T, Emit> f{v, emit};
    for_each_tof_weight(tl, tof_position(r, p), f);
  }
}

/// TOF sinogram forward of LOR a -> b: writes its N values to
/// `out_row[j * out_stride]`, j = 0..N-1 (overwrites them).
template <class I = std::int64_t, class T>
RESPROJ_HD void forward_tof_sino_lor(const image_grid<T> &g, const T *image, const T a[3],
                                     const T b[3], const tof_lor<T> &tl, T *out_row,
                                     std::int64_t out_stride = 1) noexcept {
  for (std::int64_t j = 0; j < tl.num_bins; ++j)
    out_row[j * out_stride] = T(0);
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  if (r.empty())
    return;
  detail::row_add<T> add{out_row, out_stride};
  forward_tof_sino_planes<I>(image, r, tl, r.first_plane, 1, add);
  for (std::int64_t j = 0; j < tl.num_bins; ++j)
    out_row[j * out_stride] *= r.step;
}

/// TOF sinogram back projection, planes `first, first + stride, ...`: for
/// each plane adds `r.step * sum_j values_row[j * values_stride] *
/// weight_j(p)` times the bilinear weights through `add(T* voxel, T amount)`
/// (one scatter per plane).
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void back_tof_sino_planes(T *image, const joseph_ray<T> &r,
                                     const tof_lor<T> &tl, const T *values_row,
                                     std::int64_t values_stride, std::int64_t first,
                                     std::int64_t stride, Add &&add) noexcept {
  for (std::int64_t p = first; p <= r.last_plane; p += stride) {
    detail::tof_weighted_sum<T> f{values_row, values_stride, T(0)};
    for_each_tof_weight(tl, tof_position(r, p), f);
    if (f.sum != T(0))
      detail::tof_scatter<I>(image, r, p, f.sum * r.step, add);
  }
}

/// TOF sinogram back projection of LOR a -> b with bin values
/// `values_row[j * values_stride]` (exact transpose of
/// `forward_tof_sino_lor`).
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void back_tof_sino_lor(const image_grid<T> &g, T *image, const T a[3],
                                  const T b[3], const tof_lor<T> &tl, const T *values_row,
                                  Add &&add, std::int64_t values_stride = 1) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  if (r.empty())
    return;
  back_tof_sino_planes<I>(image, r, tl, values_row, values_stride, r.first_plane, 1, add);
}

/// One plane of the list-mode forward: `acc += sample_p * weight_bin(p)`
/// where the weight is non-zero (bin inside [0, N-1]). `SampleFirst`: read
/// the image sample first and evaluate the TOF weight only where the sample
/// is non-zero; the same terms are added, so the result is identical and
/// only the work differs (cheaper where the image has zeros).
template <class I = std::int64_t, bool SampleFirst = false, class T>
RESPROJ_HD void accumulate_tof_lm_plane(T &acc, const T *image, const joseph_ray<T> &r,
                                        const tof_lor<T> &tl, std::int64_t bin,
                                        std::int64_t p) noexcept {
  if constexpr (SampleFirst) {
    const T v = sample<I>(image, r, p);
    if (v != T(0)) {
      const T w = tof_weight(tl, tof_position(r, p), bin);
      if (w != T(0))
        acc += v * w;
    }
  } else {
    const T w = tof_weight(tl, tof_position(r, p), bin);
    if (w != T(0))
      acc += sample<I>(image, r, p) * w;
  }
}

/// TOF list-mode forward, planes `first, first + stride, ...` limited to
/// `tof_plane_range` of `bin` and to `[clip_lo, clip_hi]` (a pass's slab,
/// math/image_slabs.hpp; by default every plane): `r.step * sum_p
/// sample_p * weight_bin(p)` over the visited planes (0 for a bin outside
/// [0, N-1]). With all planes visited, equals the sinogram value at `bin`
/// to float rounding. `SampleFirst` as in `accumulate_tof_lm_plane`.
template <class I = std::int64_t, bool SampleFirst = false, class T>
RESPROJ_HD T forward_tof_lm_planes(const T *image, const joseph_ray<T> &r,
                                   const tof_lor<T> &tl, std::int64_t bin,
                                   std::int64_t first, std::int64_t stride,
                                   std::int64_t clip_lo = 0,
                                   std::int64_t clip_hi = INT64_MAX) noexcept {
  if (bin < 0 || bin >= tl.num_bins || r.empty())
    return T(0);
  std::int64_t lo, hi;
  tof_plane_range(r, tl, bin, lo, hi);
  lo = clip_lo > lo ? clip_lo : lo;
  hi = clip_hi < hi ? clip_hi : hi;
  T acc = 0;
  for (std::int64_t p = detail::first_in_subset(first, stride, lo); p <= hi; p += stride)
    accumulate_tof_lm_plane<I, SampleFirst>(acc, image, r, tl, bin, p);
  return acc * r.step;
}

/// TOF list-mode forward of LOR a -> b at bin `bin`.
template <class I = std::int64_t, class T>
RESPROJ_HD T forward_tof_lm_lor(const image_grid<T> &g, const T *image, const T a[3],
                                const T b[3], const tof_lor<T> &tl,
                                std::int64_t bin) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  return forward_tof_lm_planes<I>(image, r, tl, bin, r.first_plane, 1);
}

/// One plane of the list-mode back projection: scatters `v * weight_bin(p)`
/// (v = value * r.step) where the weight is non-zero.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void scatter_tof_lm_plane(T *image, const joseph_ray<T> &r,
                                     const tof_lor<T> &tl, std::int64_t bin, T v,
                                     std::int64_t p, Add &&add) noexcept {
  const T w = tof_weight(tl, tof_position(r, p), bin);
  if (w != T(0))
    detail::tof_scatter<I>(image, r, p, v * w, add);
}

/// Planes p (if `in0`) and p + 1 (if `in1`) of the list-mode back
/// projection through an adder of plane pairs
/// (`detail::scatters_plane_pairs`), for a ray with `planes_contiguous`:
/// the amounts of two `scatter_tof_lm_plane` calls.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void scatter_tof_lm_plane_pair(T *image, const joseph_ray<T> &r,
                                          const tof_lor<T> &tl, std::int64_t bin, T v,
                                          std::int64_t p, bool in0, bool in1,
                                          Add &&add) noexcept {
  const T w0 = in0 ? tof_weight(tl, tof_position(r, p), bin) : T(0);
  const T w1 = in1 ? tof_weight(tl, tof_position(r, p + 1), bin) : T(0);
  if (w0 != T(0) || w1 != T(0))
    add.template scatter_plane_pair<I>(image, r, p, v * w0, v * w1);
}

/// TOF list-mode back projection of `value` at bin `bin`, planes as in
/// `forward_tof_lm_planes` (clipped to `[clip_lo, clip_hi]` likewise),
/// through `add(T* voxel, T amount)`. With an adder of plane pairs
/// (`detail::scatters_plane_pairs`) and a ray along the contiguous axis,
/// lane `first - r.first_plane` of `stride` lanes takes the plane pairs
/// (p, p + 1), p even, number lane, lane + stride, ... instead: together
/// the lanes visit the same planes.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void back_tof_lm_planes(T *image, const joseph_ray<T> &r, const tof_lor<T> &tl,
                                   std::int64_t bin, T value, std::int64_t first,
                                   std::int64_t stride, Add &&add,
                                   std::int64_t clip_lo = 0,
                                   std::int64_t clip_hi = INT64_MAX) noexcept {
  if (bin < 0 || bin >= tl.num_bins || r.empty())
    return;
  std::int64_t lo, hi;
  tof_plane_range(r, tl, bin, lo, hi);
  lo = clip_lo > lo ? clip_lo : lo;
  hi = clip_hi < hi ? clip_hi : hi;
  const T v = value * r.step;
  if constexpr (detail::scatters_plane_pairs<Add>::value) {
    if (planes_contiguous(r)) {
      // Lane (first - first_plane) of `stride` takes every stride-th pair.
      const std::int64_t lane = first - r.first_plane;
      for (std::int64_t p = pair_start(lo, 0) + 2 * lane; p <= hi; p += 2 * stride)
        scatter_tof_lm_plane_pair<I>(image, r, tl, bin, v, p, p >= lo, p + 1 <= hi, add);
      return;
    }
  }
  for (std::int64_t p = detail::first_in_subset(first, stride, lo); p <= hi; p += stride)
    scatter_tof_lm_plane<I>(image, r, tl, bin, v, p, add);
}

/// TOF list-mode back projection of `value` along LOR a -> b at bin `bin`
/// (exact transpose of `forward_tof_lm_lor`).
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void back_tof_lm_lor(const image_grid<T> &g, T *image, const T a[3],
                                const T b[3], const tof_lor<T> &tl, std::int64_t bin,
                                T value, Add &&add) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  back_tof_lm_planes<I>(image, r, tl, bin, value, r.first_plane, 1, add);
}

} // namespace math
RESPROJ_NAMESPACE_END
