/// @file
/// @brief GPU backends of `osem` (osem.hpp): the data, the image, the
/// sensitivity and the work buffers are resident; every step of a subset
/// is queued on one stream (projections from resproj::gpu, the ratio and
/// the update as Thrust transforms with the formulas of osem.hpp), so
/// nothing leaves the GPU between subsets. Also the GPU sensitivity image
/// (sinogram-described LORs, attenuation by forward projection), the
/// per-event corrections of list-mode data, the one-time reorder per subset
/// and `gpu_listmode_problem`, the list-mode loader (file -> device ->
/// validated, grouped, reordered events with corrections and sensitivity)
/// with a phase-by-phase timing table. Needs nvcc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include "osem.hpp"
#include "phases.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "synthetic.hpp"

namespace resproj_examples {
namespace gpu = resproj::gpu;

namespace detail {
/// Thrust policy: asynchronous on `s`, no synchronisation after the call.
inline auto on(gpu::stream_ref s) { return thrust::cuda::par_nosync.on(s.get()); }

template <class T>
gpu::device_buffer<T> upload(const std::vector<T> &v, gpu::stream_ref s) {
  return gpu::make_device_buffer(resproj::span<const T>(v.data(), v.size()), s);
}

struct ratio_lm {
  __device__ float operator()(const thrust::tuple<float, float, float> &t) const {
    return em_ratio{}(thrust::get<0>(t), thrust::get<1>(t), thrust::get<2>(t), 1.f);
  }
};
struct ratio_sino {
  __device__ float operator()(const thrust::tuple<float, float, float, float> &t) const {
    return em_ratio{}(thrust::get<0>(t), thrust::get<1>(t), thrust::get<2>(t),
                      thrust::get<3>(t));
  }
};
struct scale_op {
  float factor;
  __device__ float operator()(float v) const { return v * factor; }
};
struct update_op {
  __device__ float operator()(const thrust::tuple<float, float, float> &t) const {
    return em_update{}(thrust::get<0>(t), thrust::get<1>(t), thrust::get<2>(t));
  }
};
/// m = scale * eff[da] * eff[db] * exp(-mu_integral) for LOR i.
template <class PairOf> struct correction_op {
  PairOf pair_of;
  const float *eff;
  float scale;
  __device__ float operator()(const thrust::tuple<std::size_t, float> &t) const {
    int da, db;
    pair_of(thrust::get<0>(t), da, db);
    return scale * eff[da] * eff[db] * expf(-thrust::get<1>(t));
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
  resproj::scanner::sinogram_source<float> src;
  __device__ void operator()(std::size_t i, int &da, int &db) const {
    const std::size_t k = src.first + i, nr = std::size_t(src.geometry.num_radial);
    const std::size_t pv = k / nr;
    src.geometry.detector_pair(src.first_plane + int(pv / std::size_t(src.num_views)),
                               src.views[pv % std::size_t(src.num_views)], int(k % nr),
                               da, db);
  }
};
/// End points of event i from its detector pair.
struct event_end_points {
  const float *det;
  const std::int32_t *pairs;
  float *starts, *ends;
  __device__ void operator()(std::size_t i) const {
    const std::size_t da = std::size_t(pairs[2 * i]), db = std::size_t(pairs[2 * i + 1]);
    for (int k = 0; k < 3; ++k) {
      starts[3 * i + k] = det[3 * da + k];
      ends[3 * i + k] = det[3 * db + k];
    }
  }
};
/// In place: v[i] = op((i, v[i])).
template <class Op>
void transform_indexed(float *v, std::size_t n, const Op &op, gpu::stream_ref s) {
  auto first = thrust::make_zip_iterator(
      thrust::make_tuple(thrust::counting_iterator<std::size_t>(0), v));
  thrust::transform(on(s), first, first + n, v, op);
}
} // namespace detail

/// The scan's tables in device memory.
struct device_scan {
  gpu::device_buffer<float> detectors;
  gpu::device_buffer<std::int32_t> planes;
  std::vector<gpu::device_buffer<std::int32_t>> views;

  device_scan(const scan &sc, gpu::stream_ref s)
      : detectors(detail::upload(sc.detectors, s)), planes(detail::upload(sc.planes, s)) {
    for (const auto &v : sc.views)
      views.push_back(detail::upload(v, s));
  }
  resproj::scanner::sinogram_source<float> source(const scan &sc, int subset) const {
    return sc.source(subset, detectors.data(), planes.data(),
                     views[std::size_t(subset)].data());
  }
};

/// Sensitivity images on the GPU, one per subset of `sc` (or their sum):
/// for each subset, m = scale * eff * eff * exp(-A mu) over its LORs
/// (derived from the sinogram description, no LOR arrays; the source's
/// sinogram layout gives a warp's lanes neighbouring planes), back
/// projected. `work` must hold the largest subset's LOR count. Queued on
/// `s`; no synchronisation.
inline void gpu_sensitivity(const scan &sc, const device_scan &ds,
                            const gpu::device_image<float> &mu,
                            const gpu::device_buffer<float> &efficiency, float scale,
                            gpu::device_buffer<float> &work,
                            std::vector<gpu::device_image<float> *> out,
                            gpu::stream_ref s) {
  for (auto *img : out)
    img->buffer().zero(s);
  for (int k = 0; k < sc.num_subsets(); ++k) {
    const auto src = ds.source(sc, k);
    const auto q = work.span().subspan(0, src.count);
    gpu::forward(resproj::op::non_tof{}, mu.cview(), src, q, s);
    detail::transform_indexed(
        q.data(), q.size(),
        detail::correction_op<detail::sinogram_pair>{{src}, efficiency.data(), scale}, s);
    gpu::device_image<float> &target = *out[out.size() == 1 ? 0 : std::size_t(k)];
    gpu::back(resproj::op::non_tof{}, target.view(), src,
              resproj::span<const float>(q.data(), q.size()), s);
  }
}

/// Per-event multiplicative corrections on the GPU: m = scale * eff * eff *
/// exp(-A mu) along each event's LOR. Queued on `s`.
inline void gpu_event_corrections(const gpu::device_buffer<float> &detectors,
                                  const gpu::device_buffer<std::int32_t> &pairs,
                                  const gpu::device_image<float> &mu,
                                  const gpu::device_buffer<float> &efficiency,
                                  float scale, gpu::device_buffer<float> &m,
                                  gpu::stream_ref s) {
  const std::size_t n = pairs.size() / 2;
  const resproj::detector_pairs<float> lors(detectors.data(), detectors.size() / 3,
                                            pairs.data(), n);
  gpu::forward(resproj::op::non_tof{}, mu.cview(), lors, m.span().subspan(0, n), s);
  detail::transform_indexed(
      m.data(), n,
      detail::correction_op<detail::event_pair>{{pairs.data()}, efficiency.data(), scale},
      s);
}

/// Reorders the events of every subset once, on the GPU, for memory
/// locality of the projections (gpu/listmode_order.cuh; the TOF-aware key
/// when `tof.num_bins > 0`): pairs and bins are permuted in place within
/// each subset `[offset[k], offset[k+1])`; `permutation[offset[k] + j]` is
/// the position within the subset that event j of the reordered subset
/// came from (for mapping per-event results back with gpu::scatter_back).
/// The reordered events are `lor_layout::sorted_events()` (pass it to
/// `gpu_listmode_backend`). Per-event corrections are computed after the
/// reorder. One-time set-up: allocates its workspace (stream-ordered, freed
/// in stream order); queued on `s`, no synchronisation.
inline void order_subsets(
    const resproj::image_geometry &geometry, const resproj::tof_params<float> &tof,
    const std::vector<std::size_t> &offset, const gpu::device_buffer<float> &detectors,
    gpu::device_buffer<std::int32_t> &pairs, gpu::device_buffer<std::int16_t> &bins,
    gpu::device_buffer<std::uint32_t> &permutation, gpu::stream_ref s) {
  std::size_t nmax = 0;
  for (std::size_t k = 0; k + 1 < offset.size(); ++k)
    nmax = std::max(nmax, offset[k + 1] - offset[k]);
  if (nmax == 0)
    return;
  const std::size_t bytes = gpu::listmode_order_workspace_bytes(nmax);
  gpu::device_buffer<unsigned char> work(bytes, s);
  gpu::device_buffer<float> starts(3 * nmax, s), ends(3 * nmax, s);
  gpu::device_buffer<std::uint64_t> tp(nmax, s);
  gpu::device_buffer<std::int16_t> tb(nmax, s);
  auto copy = [&](void *dst, const void *src, std::size_t n) {
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s.get()));
  };
  for (std::size_t k = 0; k + 1 < offset.size(); ++k) {
    const std::size_t o = offset[k], n = offset[k + 1] - o;
    if (n == 0)
      continue;
    thrust::for_each_n(detail::on(s), thrust::counting_iterator<std::size_t>(0), n,
                       detail::event_end_points{detectors.data(), pairs.data() + 2 * o,
                                                starts.data(), ends.data()});
    const auto perm = permutation.span().subspan(o, n);
    const resproj::lor_view<const float> lors(starts.data(), ends.data(), n);
    const resproj::span<const std::int16_t> kbins(bins.data() + o, n);
    if (tof.num_bins > 0)
      gpu::listmode_order<float>(geometry, lors, kbins, tof, perm, work.data(), bytes, s);
    else
      gpu::listmode_order<float>(geometry, lors, perm, work.data(), bytes, s);
    const resproj::span<const std::uint32_t> cperm(perm.data(), n);
    // Pairs as one 64-bit element per event (offset 8 * o bytes: aligned).
    auto *p64 = reinterpret_cast<std::uint64_t *>(pairs.data() + 2 * o);
    gpu::gather<std::uint64_t>({p64, n}, cperm, tp.span().subspan(0, n), s);
    copy(p64, tp.data(), n * sizeof(std::uint64_t));
    gpu::gather<std::int16_t>(kbins, cperm, tb.span().subspan(0, n), s);
    copy(bins.data() + o, tb.data(), n * sizeof(std::int16_t));
  }
}

/// GPU backend of `osem` for (TOF) list-mode data grouped by subset. The
/// caller provides the events, their corrections and the total
/// sensitivity (all device, sizes checked) and says how the events of each
/// subset are ordered (`lor_layout::sorted_events()` after `order_subsets`:
/// the projections then pick their kernels for sorted events, e.g.
/// lock-step back projection); the backend keeps references and owns the
/// image and work buffers.
struct gpu_listmode_backend {
  const scan &sc;
  std::vector<std::size_t> offset;
  const gpu::device_buffer<float> &detectors;
  const gpu::device_buffer<std::int32_t> &pairs;
  const gpu::device_buffer<std::int16_t> &bins;
  const gpu::device_buffer<float> &m, &a;
  resproj::tof_params<float> tof;
  gpu::stream_ref s;
  gpu::device_image<float> x, g, sens;
  gpu::device_buffer<float> q;
  resproj::lor_layout events_layout; ///< order of each subset's events
  gpu::tuning opt;                   ///< expert overrides of the projections

  /// @param sensitivity total sensitivity (device); each subset uses 1/S of it
  /// @param x0 start image (host)
  /// @param events order of each subset's events (`sorted_events()` after
  ///               `order_subsets`; default: nothing known)
  /// @throws resproj::invalid_argument for sizes that do not match.
  gpu_listmode_backend(const scan &scan_, std::vector<std::size_t> offsets,
                       const gpu::device_buffer<float> &det,
                       const gpu::device_buffer<std::int32_t> &pairs_,
                       const gpu::device_buffer<std::int16_t> &bins_,
                       const gpu::device_buffer<float> &m_,
                       const gpu::device_buffer<float> &a_,
                       const resproj::tof_params<float> &tof_,
                       const gpu::device_image<float> &sensitivity,
                       const std::vector<float> &x0, gpu::stream_ref stream,
                       resproj::lor_layout events = {})
      : sc(scan_), offset(std::move(offsets)), detectors(det), pairs(pairs_), bins(bins_),
        m(m_), a(a_), tof(tof_), s(stream), x(sc.image, s), g(sc.image, s),
        sens(sc.image, s), q(max_count(), s), events_layout(events) {
    const std::size_t n = offset.empty() ? 0 : offset.back();
    if (offset.size() < 2)
      resproj::detail::throw_invalid("offsets", "events not grouped by subset");
    if (pairs.size() < 2 * n || bins.size() < n || m.size() < n || a.size() < n)
      resproj::detail::throw_invalid("pairs",
                                     "event arrays smaller than the offsets say");
    if (sensitivity.size() != x.size() || x0.size() != x.size())
      resproj::detail::throw_invalid("x0", "size does not match the image");
    x.upload(resproj::span<const float>(x0.data(), x0.size()), s);
    const float scale = 1.f / float(num_subsets());
    thrust::transform(detail::on(s), sensitivity.data(), sensitivity.data() + sens.size(),
                      sens.data(), detail::scale_op{scale});
  }
  std::size_t max_count() const {
    std::size_t c = 0;
    for (std::size_t k = 0; k + 1 < offset.size(); ++k)
      c = std::max(c, offset[k + 1] - offset[k]);
    return c;
  }
  int num_subsets() const { return int(offset.size()) - 1; }
  std::size_t first(int k) const { return offset[std::size_t(k)]; }
  std::size_t count(int k) const {
    return offset[std::size_t(k) + 1] - offset[std::size_t(k)];
  }
  /// The events of subset k, with their order.
  resproj::detector_pairs<float> lors(int k) const {
    return resproj::detector_pairs<float>(detectors.data(), detectors.size() / 3,
                                          pairs.data() + 2 * first(k), count(k),
                                          events_layout);
  }
  resproj::span<const std::int16_t> bins_of(int k) const {
    return {bins.data() + first(k), count(k)};
  }
  /// The TOF list-mode operation of subset k (for `tof.num_bins > 0`).
  resproj::op::tof_listmode<float> tof_operation(int k) const {
    return resproj::op::tof_listmode<float>(tof, bins_of(k));
  }
  void forward(int k) {
    const auto out = q.span().subspan(0, count(k));
    if (tof.num_bins > 0)
      gpu::forward(tof_operation(k), x.cview(), lors(k), out, s, opt);
    else
      gpu::forward(resproj::op::non_tof{}, x.cview(), lors(k), out, s, opt);
  }
  void ratio(int k) {
    const std::size_t o = first(k), n = count(k);
    auto in = thrust::make_zip_iterator(
        thrust::make_tuple(q.data(), m.data() + o, a.data() + o));
    thrust::transform(detail::on(s), in, in + n, q.data(), detail::ratio_lm{});
  }
  void back(int k) {
    g.buffer().zero(s);
    const resproj::span<const float> v(q.data(), count(k));
    if (tof.num_bins > 0)
      gpu::back(tof_operation(k), g.view(), lors(k), v, s, opt);
    else
      gpu::back(resproj::op::non_tof{}, g.view(), lors(k), v, s, opt);
  }
  void update(int) {
    auto in =
        thrust::make_zip_iterator(thrust::make_tuple(x.data(), g.data(), sens.data()));
    thrust::transform(detail::on(s), in, in + x.size(), x.data(), detail::update_op{});
  }
  void finish() { s.synchronize(); }
  /// The image, downloaded (synchronises).
  std::vector<float> image() const {
    std::vector<float> h(x.size());
    x.download(resproj::span<float>(h.data(), h.size()), s);
    s.synchronize();
    return h;
  }
};

/// GPU backend of `osem` for sinogram data (subsets by view): uploads the
/// data and computes the per-subset sensitivities from the uploaded m.
struct gpu_sinogram_backend {
  const scan &sc;
  const sinogram_data &host;
  gpu::stream_ref s;
  device_scan ds;
  gpu::device_buffer<float> y, m, a, q;
  gpu::device_image<float> x, g;
  std::vector<gpu::device_image<float>> sens;

  gpu_sinogram_backend(const scan &scan_, const sinogram_data &d,
                       const std::vector<float> &x0, gpu::stream_ref stream)
      : sc(scan_), host(d), s(stream), ds(sc, s), y(detail::upload(d.y, s)),
        m(detail::upload(d.m, s)), a(detail::upload(d.a, s)), q(max_count(), s),
        x(sc.image, s), g(sc.image, s) {
    if (x0.size() != x.size())
      resproj::detail::throw_invalid("x0", "size does not match the image");
    x.upload(resproj::span<const float>(x0.data(), x0.size()), s);
    for (int k = 0; k < sc.num_subsets(); ++k) {
      sens.emplace_back(sc.image, s);
      sens.back().buffer().zero(s);
      const auto src = ds.source(sc, k);
      gpu::back(
          resproj::op::non_tof{}, sens.back().view(), src,
          resproj::span<const float>(m.data() + host.offset[std::size_t(k)], src.count),
          s);
    }
  }
  std::size_t max_count() const {
    std::size_t c = 0;
    for (int k = 0; k < sc.num_subsets(); ++k)
      c = std::max(c, sc.subset_count(k));
    return c;
  }
  int num_subsets() const { return sc.num_subsets(); }
  // The subsets' sinogram sources know their layout: a warp's lanes take
  // neighbouring planes.
  void forward(int k) {
    gpu::forward(resproj::op::non_tof{}, x.cview(), ds.source(sc, k),
                 q.span().subspan(0, sc.subset_count(k)), s);
  }
  void ratio(int k) {
    const std::size_t o = host.offset[std::size_t(k)], n = sc.subset_count(k);
    auto in = thrust::make_zip_iterator(
        thrust::make_tuple(q.data(), m.data() + o, a.data() + o, y.data() + o));
    thrust::transform(detail::on(s), in, in + n, q.data(), detail::ratio_sino{});
  }
  void back(int k) {
    g.buffer().zero(s);
    gpu::back(resproj::op::non_tof{}, g.view(), ds.source(sc, k),
              resproj::span<const float>(q.data(), sc.subset_count(k)), s);
  }
  void update(int k) {
    auto in = thrust::make_zip_iterator(
        thrust::make_tuple(x.data(), g.data(), sens[std::size_t(k)].data()));
    thrust::transform(detail::on(s), in, in + x.size(), x.data(), detail::update_op{});
  }
  void finish() { s.synchronize(); }
  std::vector<float> image() const {
    std::vector<float> h(x.size());
    x.download(resproj::span<float>(h.data(), h.size()), s);
    s.synchronize();
    return h;
  }
};

} // namespace resproj_examples

namespace resproj_examples {

/// A `subset_projector` (synthetic.hpp) on the GPU: uploads the image,
/// projects the subset's sinogram-described LORs, downloads. Host-blocking
/// (data simulation, not reconstruction).
inline subset_projector gpu_subset_projector(const scan &sc, const device_scan &ds,
                                             gpu::stream_ref s) {
  return [&sc, &ds, s](int k, const std::vector<float> &img, resproj::span<float> out) {
    gpu::device_image<float> d(sc.image, s);
    d.upload(resproj::span<const float>(img.data(), img.size()), s);
    gpu::device_buffer<float> o(out.size(), s);
    gpu::forward(resproj::op::non_tof{}, d.cview(), ds.source(sc, k), o.span(), s);
    o.copy_to_host(out, s);
    s.synchronize();
  };
}

/// A `tof_profiler` (synthetic.hpp) on the GPU: the TOF sinogram forward
/// projection of the image over host detector pairs. Host-blocking.
inline tof_profiler gpu_tof_profiler(const scan &sc, const device_scan &ds,
                                     gpu::stream_ref s) {
  return [&sc, &ds, s](const std::vector<float> &img,
                       const resproj::detector_pairs<float> &l,
                       const resproj::tof_params<float> &tof, resproj::span<float> out) {
    gpu::device_image<float> d(sc.image, s);
    d.upload(resproj::span<const float>(img.data(), img.size()), s);
    auto pairs = gpu::make_device_buffer(
        resproj::span<const std::int32_t>(l.pairs, 2 * l.count), s);
    const resproj::detector_pairs<float> dl(ds.detectors.data(), ds.detectors.size() / 3,
                                            pairs.data(), l.count);
    gpu::device_buffer<float> o(out.size(), s);
    gpu::forward(resproj::op::tof_sinogram{tof}, d.cview(), dl, o.span(), s);
    o.copy_to_host(out, s);
    s.synchronize();
  };
}

namespace detail {
/// Scatters event i of the acquisition (pair as one 64-bit element, bin)
/// to its place when grouped by subset (`group_by_subset`: subset i mod S,
/// position i / S within it; subset s starts at s * (n / S) + min(s, n % S)).
struct group_scatter {
  const std::uint64_t *pairs_in;
  const std::int16_t *bins_in;
  std::uint64_t *pairs_out;
  std::int16_t *bins_out;
  std::size_t n, S;
  __device__ void operator()(std::size_t i) const {
    const std::size_t s = i % S, q = n / S, r = n % S;
    const std::size_t k = s * q + (s < r ? s : r) + i / S;
    pairs_out[k] = pairs_in[i];
    bins_out[k] = bins_in[i];
  }
};
} // namespace detail

/// A TOF list-mode reconstruction's resident data, set up on the GPU: the
/// events grouped by subset (`group_by_subset`) and reordered once per
/// subset for locality (TOF-aware key), the per-event m (efficiencies x
/// attenuation along each event, by forward projection of the mu-map) and
/// a (background / TOF bins), and the total sensitivity image with
/// attenuation (from the sinogram description; computed on a second
/// stream while the events are read and prepared). Set-up allocates and
/// ends with a synchronisation. `backend(x0)` then runs OSEM resident.
///
/// Two ways in: host events already grouped (tests), or the list-mode file
/// read straight into device memory (`gpu/file_io.cuh`), split, validated
/// and grouped on the GPU -- the one loader of the demo and bench_osem.
/// With a `phase_table`, each set-up phase is timed on the host (the
/// stream is synchronised at every phase boundary).
struct gpu_listmode_problem {
  const scan &sc;
  const device_scan &ds;
  gpu::stream_ref s;
  resproj::tof_params<float> tof;
  std::vector<std::size_t> offset;
  gpu::device_buffer<std::int32_t> pairs;
  gpu::device_buffer<std::int16_t> bins;
  gpu::device_buffer<float> m, a, efficiency;
  gpu::device_image<float> mu, sensitivity;
  gpu::device_buffer<std::uint32_t> permutation;
  /// Order of each subset's events: sorted_events() once reordered.
  resproj::lor_layout events_layout;

  /// From host events grouped by subset (`lm.offset`).
  /// @throws resproj::invalid_argument ("lm") if the events are not grouped.
  gpu_listmode_problem(const scan &scan_, const device_scan &dscan,
                       const listmode_data &lm, const corrections &c,
                       const resproj::tof_params<float> &tof_, gpu::stream_ref stream,
                       bool reorder = true, phase_table *phases = nullptr)
      : sc(scan_), ds(dscan), s(stream), tof(tof_), offset(lm.offset),
        efficiency(detail::upload(c.efficiency, s)), mu(sc.image, s),
        sensitivity(sc.image, s) {
    if (offset.size() < 2 || offset.back() != lm.count() ||
        lm.pairs.size() != 2 * lm.count())
      resproj::detail::throw_invalid("lm", "events not grouped by subset");
    prepare(c, reorder, phases, [&](stopwatch &w) {
      pairs = detail::upload(lm.pairs, s);
      bins = detail::upload(lm.bins, s);
      mark(phases, w, "upload", "upload events (host -> device)", double(lm.count()),
           "events");
    });
  }

  /// From the list-mode file `path` (10-byte records, io/listmode_file.hpp),
  /// read into device memory through `io`, then split, validated against
  /// the scanner and `tof` and grouped into `sc.num_subsets()` subsets on
  /// the GPU. Nothing passes through host arrays.
  /// @throws resproj::io_error if the file cannot be read, is damaged or
  ///         holds events outside the scanner or the TOF bins.
  gpu_listmode_problem(const scan &scan_, const device_scan &dscan,
                       gpu::device_file_io &io, const std::string &path,
                       const corrections &c, const resproj::tof_params<float> &tof_,
                       gpu::stream_ref stream, phase_table *phases = nullptr)
      : sc(scan_), ds(dscan), s(stream), tof(tof_),
        efficiency(detail::upload(c.efficiency, s)), mu(sc.image, s),
        sensitivity(sc.image, s) {
    prepare(c, true, phases, [&](stopwatch &w) { load(io, path, phases, w); });
  }

  /// A backend over this data starting from `x0` (host).
  gpu_listmode_backend backend(const std::vector<float> &x0) const {
    return gpu_listmode_backend(sc, offset, ds.detectors, pairs, bins, m, a, tof,
                                sensitivity, x0, s, events_layout);
  }
  std::size_t count() const { return offset.empty() ? 0 : offset.back(); }

private:
  void mark(phase_table *phases, stopwatch &w, const char *key, const char *name,
            double items = 0, const char *item_name = "") {
    if (!phases)
      return;
    s.synchronize();
    phases->add(key, name, w.lap(), items, item_name);
  }

  /// Reads, splits, validates and groups the events of `path`.
  void load(gpu::device_file_io &io, const std::string &path, phase_table *phases,
            stopwatch &w) {
    std::size_t n = 0;
    gpu::device_buffer<std::int32_t> acq_pairs;
    gpu::device_buffer<std::int16_t> acq_bins;
    {
      const auto records = gpu::read_listmode_to_device(io, path, s);
      n = records.size();
      mark(phases, w, "read", "read file -> device", double(n), "events");
      if (n == 0)
        throw resproj::io_error("resproj: " + path + ": no events");
      const resproj::span<const resproj::scanner::listmode_event> rec(records.data(), n);
      const std::size_t bytes = gpu::validate_events_workspace_bytes(n);
      gpu::device_buffer<unsigned char> ws(bytes, s);
      gpu::device_buffer<resproj::scanner::event_check_result> check(1, s);
      gpu::validate_events(rec, std::int64_t(sc.num_detectors()), tof.num_bins, ws.data(),
                           bytes, check.data(), s);
      acq_pairs = gpu::device_buffer<std::int32_t>(2 * n, s);
      acq_bins = gpu::device_buffer<std::int16_t>(n, s);
      gpu::split_events(rec, acq_pairs.span(), acq_bins.span(), s);
      resproj::scanner::event_check_result r;
      check.copy_to_host(&r, 1, 0, s);
      s.synchronize(); // the events index tables: check them before any use
      if (r.num_invalid > 0)
        throw resproj::io_error("resproj: " + path + ": " +
                                std::to_string(r.num_invalid) +
                                " events outside the scanner or the TOF bins (first: " +
                                std::to_string(r.first_invalid) + ")");
    } // records freed (stream-ordered)
    offset = subset_offsets(n, sc.num_subsets());
    pairs = gpu::device_buffer<std::int32_t>(2 * n, s);
    bins = gpu::device_buffer<std::int16_t>(n, s);
    thrust::for_each_n(
        detail::on(s), thrust::counting_iterator<std::size_t>(0), n,
        detail::group_scatter{reinterpret_cast<const std::uint64_t *>(acq_pairs.data()),
                              acq_bins.data(),
                              reinterpret_cast<std::uint64_t *>(pairs.data()),
                              bins.data(), n, std::size_t(sc.num_subsets())});
    mark(phases, w, "split", "split, validate, group by subset", double(n), "events");
  }

  /// `load_events` (fills pairs, bins, offset), reorder, corrections.
  template <class Load>
  void prepare_events(const corrections &c, bool reorder, phase_table *phases,
                      stopwatch &w, Load &load_events) {
    load_events(w);
    const std::size_t n = count();
    m = gpu::device_buffer<float>(n, s);
    a = gpu::device_buffer<float>(n, s);
    permutation = gpu::device_buffer<std::uint32_t>(n, s);
    if (reorder) {
      order_subsets(sc.image, tof, offset, ds.detectors, pairs, bins, permutation, s);
      events_layout = resproj::lor_layout::sorted_events();
      mark(phases, w, "reorder",
           tof.num_bins > 0 ? "reorder per subset (TOF key)" : "reorder per subset",
           double(n), "events");
    }
    gpu_event_corrections(ds.detectors, pairs, mu, efficiency, c.scale, m, s);
    a.fill(tof.num_bins > 0 ? c.background / float(tof.num_bins) : c.background, s);
    mark(phases, w, "corr", "per-event corrections (attenuation, eff.)", double(n),
         "events");
  }

  /// The common set-up: sensitivity on a second stream, `load_events`
  /// (fills pairs, bins, offset), reorder, per-event corrections, join.
  template <class Load>
  void prepare(const corrections &c, bool reorder, phase_table *phases,
               Load &&load_events) {
    stopwatch w;
    if (c.mu.size() != mu.size())
      resproj::detail::throw_invalid("c.mu", "size does not match the image");
    if (c.efficiency.size() != sc.num_detectors())
      resproj::detail::throw_invalid("c.efficiency", "one per detector needed");
    mu.upload(resproj::span<const float>(c.mu.data(), c.mu.size()), s);
    // Sensitivity on its own stream, overlapping the event preparation.
    gpu::stream side;
    gpu::event ready, t0(true), t1(true);
    ready.record(s);
    ready.make_wait(side);
    t0.record(side);
    {
      std::size_t maxc = 0;
      for (int k = 0; k < sc.num_subsets(); ++k)
        maxc = std::max(maxc, sc.subset_count(k));
      gpu::device_buffer<float> work(maxc, side);
      gpu_sensitivity(sc, ds, mu, efficiency, c.scale, work, {&sensitivity}, side);
    } // work freed in the side stream's order
    t1.record(side);
    mark(phases, w, "mu", "mu-map upload, sensitivity queued");

    try {
      prepare_events(c, reorder, phases, w, load_events);
    } catch (...) {
      side.synchronize(); // the sensitivity kernels still use members
      throw;
    }
    t1.make_wait(s);
    s.synchronize();
    if (phases) {
      phases->add("sens_wait", "wait for the sensitivity", w.lap());
      std::size_t lors = 0;
      for (int k = 0; k < sc.num_subsets(); ++k)
        lors += sc.subset_count(k);
      phases->add("sens", "sensitivity with attenuation (2nd stream)",
                  1e-3 * double(gpu::event::elapsed_ms(t0, t1)), double(lors), "LORs",
                  true);
    }
  }
};

} // namespace resproj_examples
