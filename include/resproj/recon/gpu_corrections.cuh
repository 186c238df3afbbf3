/// @file
/// @brief Corrections and the sensitivity image on the GPU:
/// `device_corrections` (mu-map and efficiencies resident), per-event
/// multiplicative and additive corrections of list-mode events (attenuation
/// by forward projection of the mu-map), and the sensitivity image with
/// attenuation and normalisation over a sinogram described by
/// `sinogram_subsets` (no LOR arrays: the sinogram source derives each
/// LOR). Needs nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/support_box.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/gpu_em.cuh"
#include "resproj/scanner/sinogram_lookup.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// `corrections` resident on the GPU: the mu-map as an image and the
/// detector efficiencies, with the scale and background.
struct device_corrections {
  gpu::device_image<float> mu;
  gpu::device_buffer<float> efficiency;
  float scale = 1;
  float background = 0;
  /// Index box of the nonzero voxels of `mu` (math::nonzero_box): the
  /// per-event attenuation walks only the planes that can meet it.
  math::index_box mu_support;

  /// Uploads `c` (queued on `s`, no synchronisation) and finds the support
  /// box of its mu-map (one pass on the host).
  /// @throws invalid_argument ("c.mu", "c.efficiency") for sizes that do not
  ///         match the image or the scanner of `sub`.
  device_corrections(const corrections &c, const sinogram_subsets &sub, gpu::stream_ref s)
      : mu(sub.image, s), efficiency(0, s), scale(c.scale), background(c.background) {
    detail::check_corrections(c, sub);
    mu.upload(span<const float>(c.mu.data(), c.mu.size()), s);
    efficiency = detail::upload(c.efficiency, s);
    const auto &n = sub.image.shape();
    const std::int64_t shape[3] = {n[0], n[1], n[2]};
    mu_support = math::nonzero_box(c.mu.data(), shape);
  }
  /// Additive term per event (see `corrections::background_per_event`).
  float background_per_event(int num_tof_bins) const {
    return num_tof_bins > 0 ? background / float(num_tof_bins) : background;
  }
};

namespace detail {
/// m = scale * eff[da] * eff[db] * exp(-mu_integral) for LOR i.
template <class PairOf> struct correction_op {
  PairOf pair_of;
  const float *eff;
  float scale;
  __device__ float operator()(const thrust::tuple<std::size_t, float> &t) const {
    int da, db;
    pair_of(thrust::get<0>(t), da, db);
    return lor_correction(scale, eff, da, db, thrust::get<1>(t));
  }
};
struct event_pair {
  const std::int32_t *pairs;
  __device__ void operator()(std::size_t i, int &da, int &db) const {
    da = pairs[2 * i];
    db = pairs[2 * i + 1];
  }
};
struct sinogram_pair {
  scanner::sinogram_source<float> src;
  __device__ void operator()(std::size_t i, int &da, int &db) const {
    const std::size_t k = src.first + i, nr = std::size_t(src.geometry.num_radial);
    const std::size_t pv = k / nr;
    src.geometry.detector_pair(src.first_plane + int(pv / std::size_t(src.num_views)),
                               src.views[pv % std::size_t(src.num_views)], int(k % nr),
                               da, db);
  }
};
/// line_integrals[bin of LOR i of `src`] = q[i].
struct store_by_bin {
  scanner::sinogram_source<float> src;
  const float *q;
  float *line_integrals;
  __device__ void operator()(std::size_t i) const {
    const std::size_t k = src.first + i, nr = std::size_t(src.geometry.num_radial);
    const std::size_t pv = k / nr;
    const int plane = src.first_plane + int(pv / std::size_t(src.num_views));
    const int view = src.views[pv % std::size_t(src.num_views)];
    line_integrals[src.geometry.bin_index(plane, view, int(k % nr))] = q[i];
  }
};
/// In place: v[i] = op((i, v[i])).
template <class Op>
void transform_indexed(float *v, std::size_t n, const Op &op, gpu::stream_ref s) {
  auto first = thrust::make_zip_iterator(
      thrust::make_tuple(thrust::counting_iterator<std::size_t>(0), v));
  thrust::transform(on(s), first, first + std::ptrdiff_t(n), v, op);
}
/// The event count of `pairs` (two detector indices per event), checked
/// against the outputs `m` and `a`.
inline std::size_t checked_event_count(span<const std::int32_t> pairs, span<float> m,
                                       span<float> a) {
  const std::size_t n = pairs.size() / 2;
  if (pairs.size() % 2 != 0)
    resproj::detail::throw_invalid("pairs", "size must be even (2 per event)");
  if (m.size() != n)
    resproj::detail::throw_invalid("m", "one value per event needed");
  if (a.size() != n)
    resproj::detail::throw_invalid("a", "one value per event needed");
  return n;
}
} // namespace detail

/// The sensitivity image with attenuation and normalisation, `A^T m` over
/// every LOR of the sinogram of `sub` (m from `c`; attenuation by forward
/// projection of the mu-map), summed over the subsets into `out` (zeroed
/// first); or, with `subset` >= 0, of that subset alone. The sinogram
/// sources carry their layout, so the projections pick their kernels for
/// sinogram order. Queued on `s`; no synchronisation, no allocation.
/// @param work device buffer of at least `sub.max_subset_count()` floats
/// @param out  the image (the library's `device_image` or device memory of
///             the caller's), geometry `sub.image`
/// @param line_integrals empty, or `sub.layout.num_bins()` floats of device
///             memory that receive each projected bin's mu line integral
///             (`[plane][view][radial]`; for the per-event corrections of
///             `gpu_event_corrections_from_sinogram`)
/// @throws invalid_argument ("work") if too small, ("out") for another
///         geometry, ("out.data") if null or not memory of `out.device`,
///         ("line_integrals") for another size.
inline void gpu_sensitivity(const sinogram_subsets &sub,
                            const device_sinogram_subsets &dsub,
                            const device_corrections &c, span<float> work,
                            gpu::device_image_view<float> out, gpu::stream_ref s,
                            int subset = -1, span<float> line_integrals = {}) {
  if (work.size() < sub.max_subset_count())
    resproj::detail::throw_invalid("work", "smaller than the largest subset");
  if (!line_integrals.empty() &&
      std::int64_t(line_integrals.size()) != sub.layout.num_bins())
    resproj::detail::throw_invalid("line_integrals", "one value per sinogram bin needed");
  if (out.geometry != sub.image)
    resproj::detail::throw_invalid("out", "geometry is not the subsets' image");
  if (out.data == nullptr)
    resproj::detail::throw_invalid("out.data", "null");
  gpu::require_device_pointer(out.data, out.device, "out.data");
  RESPROJ_CUDA_TRY(cudaMemsetAsync(
      out.data, 0, std::size_t(out.geometry.num_voxels()) * sizeof(float), s.get()));
  for (int k = subset < 0 ? 0 : subset; k < (subset < 0 ? sub.num_subsets() : subset + 1);
       ++k) {
    const auto src = dsub.source(sub, k);
    const auto q = work.subspan(0, src.count);
    gpu::forward(op::non_tof{}, c.mu.cview(), src, q, s);
    if (!line_integrals.empty() && src.count > 0)
      thrust::for_each_n(detail::on(s), thrust::counting_iterator<std::size_t>(0),
                         src.count,
                         detail::store_by_bin{src, q.data(), line_integrals.data()});
    detail::transform_indexed(
        q.data(), q.size(),
        detail::correction_op<detail::sinogram_pair>{{src}, c.efficiency.data(), c.scale},
        s);
    gpu::back(op::non_tof{}, out, src, span<const float>(q.data(), q.size()), s);
  }
}
/// `gpu_sensitivity` into a `device_image` of the library.
inline void gpu_sensitivity(const sinogram_subsets &sub,
                            const device_sinogram_subsets &dsub,
                            const device_corrections &c, span<float> work,
                            gpu::device_image<float> &out, gpu::stream_ref s,
                            int subset = -1) {
  gpu_sensitivity(sub, dsub, c, work, out.view(), s, subset);
}

namespace detail {
/// m[i] = the attenuation line integral of event i's LOR: the mu-map's
/// forward projection over the planes that meet its support box
/// (math::forward_lor_in_box; the bits of the full walk).
template <class I> struct event_attenuation {
  const std::int32_t *pairs;
  const float *detectors;
  math::image_grid<float> grid;
  const float *mu;
  math::index_box support;
  float *m;
  __device__ void operator()(std::size_t i) const {
    const std::size_t da = std::size_t(pairs[2 * i]), db = std::size_t(pairs[2 * i + 1]);
    const float a[3] = {detectors[3 * da], detectors[3 * da + 1], detectors[3 * da + 2]};
    const float b[3] = {detectors[3 * db], detectors[3 * db + 1], detectors[3 * db + 2]};
    m[i] = math::forward_lor_in_box<I>(grid, mu, support, a, b);
  }
};
} // namespace detail

/// Per-event corrections on the GPU: `m[i]` = scale x efficiencies x
/// attenuation along event i's LOR (Joseph forward projection of the
/// mu-map, one thread per event, walking only the planes that meet the
/// mu-map's support box: the same value as the whole walk), `a[i]` =
/// `c.background_per_event(num_tof_bins)`. Queued on `s`; no
/// synchronisation, no allocation.
/// @param detectors detector table (device, xyz per detector)
/// @param pairs detector pairs of the events (device, 2 per event, indices
///        into `detectors`)
/// @param m, a outputs, one per event (device)
/// @throws invalid_argument ("pairs", "m", "a") for sizes that do not
///         match, ("detectors", "pairs", "m", "a") for host memory or
///         memory of another device than the mu-map's.
inline void gpu_event_corrections(span<const float> detectors,
                                  span<const std::int32_t> pairs,
                                  const device_corrections &c, int num_tof_bins,
                                  span<float> m, span<float> a, gpu::stream_ref s) {
  const std::size_t n = detail::checked_event_count(pairs, m, a);
  if (n == 0)
    return;
  const auto mu = c.mu.cview();
  gpu::require_device_pointer(detectors.data(), mu.device, "detectors");
  gpu::require_device_pointer(pairs.data(), mu.device, "pairs");
  gpu::require_device_pointer(m.data(), mu.device, "m");
  gpu::require_device_pointer(a.data(), mu.device, "a");
  const auto grid = math::image_grid<float>::from(mu.geometry);
  const auto first = thrust::counting_iterator<std::size_t>(0);
  if (math::fits_32bit_index(grid))
    thrust::for_each_n(
        detail::on(s), first, n,
        detail::event_attenuation<std::int32_t>{pairs.data(), detectors.data(), grid,
                                                mu.data, c.mu_support, m.data()});
  else
    thrust::for_each_n(
        detail::on(s), first, n,
        detail::event_attenuation<std::int64_t>{pairs.data(), detectors.data(), grid,
                                                mu.data, c.mu_support, m.data()});
  detail::transform_indexed(m.data(), n,
                            detail::correction_op<detail::event_pair>{
                                {pairs.data()}, c.efficiency.data(), c.scale},
                            s);
  thrust::fill_n(detail::on(s), a.data(), n, c.background_per_event(num_tof_bins));
}

namespace detail {
/// m[i] for event i from the sinogram's line integral of its bin, or, for
/// an event in no bin of the sinogram, from its own forward projection.
struct event_correction_from_bins {
  const std::int32_t *pairs;
  const float *detectors;
  scanner::sinogram_lookup_view lookup;
  const float *line_integrals;
  math::image_grid<float> grid;
  const float *mu;
  math::index_box support;
  const float *eff;
  float scale;
  float *m;
  __device__ void operator()(std::size_t i) const {
    const int da = pairs[2 * i], db = pairs[2 * i + 1];
    int plane, view, radial;
    bool swapped;
    float integral;
    if (lookup.find(da, db, plane, view, radial, swapped)) {
      integral = line_integrals[lookup.bin_index(plane, view, radial)];
    } else {
      float a[3], b[3];
      for (int k = 0; k < 3; ++k) {
        a[k] = detectors[3 * std::size_t(da) + std::size_t(k)];
        b[k] = detectors[3 * std::size_t(db) + std::size_t(k)];
      }
      integral = math::forward_lor_in_box(grid, mu, support, a, b);
    }
    m[i] = lor_correction(scale, eff, da, db, integral);
  }
};
} // namespace detail

/// `gpu_event_corrections` with each event's attenuation read from the
/// line integrals of its sinogram bin (`gpu_sensitivity`'s
/// `line_integrals`, the same LOR or the same LOR reversed) instead of a
/// forward projection per event; an event in no bin of the sinogram gets
/// its own forward projection. The same values to float rounding (a
/// reversed LOR and the sinogram's projection kernel round differently).
/// Queued on `s`, after the line integrals; no synchronisation, no
/// allocation.
/// @param lookup the sinogram's detector-pair map with device tables
/// @param line_integrals `sinogram_layout::num_bins()` floats (device)
/// @throws invalid_argument ("pairs", "m", "a") for sizes that do not match.
inline void gpu_event_corrections_from_sinogram(
    span<const float> detectors, span<const std::int32_t> pairs,
    const scanner::sinogram_lookup_view &lookup, span<const float> line_integrals,
    const device_corrections &c, int num_tof_bins, span<float> m, span<float> a,
    gpu::stream_ref s) {
  const std::size_t n = detail::checked_event_count(pairs, m, a);
  if (n == 0)
    return;
  const auto mu = c.mu.cview();
  thrust::for_each_n(detail::on(s), thrust::counting_iterator<std::size_t>(0), n,
                     detail::event_correction_from_bins{
                         pairs.data(), detectors.data(), lookup, line_integrals.data(),
                         math::image_grid<float>::from(mu.geometry), mu.data,
                         c.mu_support, c.efficiency.data(), c.scale, m.data()});
  thrust::fill_n(detail::on(s), a.data(), n, c.background_per_event(num_tof_bins));
}

} // namespace recon
RESPROJ_NAMESPACE_END
