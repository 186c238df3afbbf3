/// @file
/// @brief List-mode events for reconstruction on the GPU: `device_events`
/// (detector pairs and TOF bins grouped by OSEM subset, with their order),
/// made from host events or from a list-mode file read straight into device
/// memory, validated, split and grouped there; and the one-time reorder of
/// each subset's events for memory locality of the projections. Needs nvcc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/gpu_em.cuh"
#include "resproj/recon/listmode_data.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// List-mode events in device memory, grouped by subset: subset k is events
/// `[offset[k], offset[k+1])` of `pairs` (2 int32 per event) and `bins`
/// (one int16 per event). `layout` says how each subset's events are
/// ordered (`lor_layout::sorted_events()` after `gpu_order_subsets`).
struct device_events {
  std::vector<std::size_t> offset; ///< num_subsets + 1 entries
  gpu::device_buffer<std::int32_t> pairs;
  gpu::device_buffer<std::int16_t> bins;
  /// After `gpu_order_subsets`: `permutation[offset[k] + j]` is the position
  /// within subset k that its event j came from; empty before.
  gpu::device_buffer<std::uint32_t> permutation;
  lor_layout layout; ///< order of each subset's events

  std::size_t count() const { return offset.empty() ? 0 : offset.back(); }
  int num_subsets() const { return int(offset.size()) - 1; }
  std::size_t first(int k) const { return offset.at(std::size_t(k)); }
  std::size_t count(int k) const { return offset.at(std::size_t(k) + 1) - first(k); }
  /// Events in the largest subset.
  std::size_t max_count() const {
    std::size_t c = 0;
    for (int k = 0; k < num_subsets(); ++k)
      c = std::max(c, count(k));
    return c;
  }
  /// The events of subset k as LORs of the detector table `detectors`
  /// (device, xyz per detector), with their order.
  detector_pairs<float> lors(int k, span<const float> detectors) const {
    return detector_pairs<float>(detectors.data(), detectors.size() / 3,
                                 pairs.data() + 2 * first(k), count(k), layout);
  }
  /// TOF bins of subset k.
  span<const std::int16_t> bins_of(int k) const {
    return {bins.data() + first(k), count(k)};
  }
  /// Pairs of every event (device).
  span<const std::int32_t> all_pairs() const { return {pairs.data(), 2 * count()}; }
};

namespace detail {
/// Scatters event i of the acquisition (pair as one 64-bit element, bin) to
/// its place when grouped by subset (subset i mod S, position i / S in it;
/// subset s starts at s * (n / S) + min(s, n % S), as `subset_offsets`).
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
inline void copy_on_device(void *dst, const void *src, std::size_t bytes,
                           gpu::stream_ref s) {
  RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s.get()));
}
} // namespace detail

/// Uploads host events already grouped by subset (`lm.offset`). Queued on
/// `s` (the host arrays must stay alive until it has run).
/// @throws invalid_argument ("lm") if the events are not grouped.
inline device_events upload_events(const listmode_data &lm, gpu::stream_ref s) {
  if (lm.offset.size() < 2 || lm.offset.back() != lm.count() ||
      lm.pairs.size() != 2 * lm.count())
    resproj::detail::throw_invalid("lm", "events not grouped by subset");
  device_events e;
  e.offset = lm.offset;
  e.pairs = detail::upload(lm.pairs, s);
  e.bins = detail::upload(lm.bins, s);
  return e;
}

/// Reads the list-mode file `path` (10-byte records, io/listmode_file.hpp)
/// into device memory through `io`, validates every event against
/// `num_detectors` and `num_tof_bins` (0: non-TOF) and splits the records
/// into pairs and bins, all on the GPU: nothing passes through host arrays.
/// The events come back in acquisition order, as one subset. Allocates
/// (stream-ordered); synchronises `s` once, to check the events before
/// anything indexes a table with them.
/// @throws io_error if the file cannot be read, is empty or damaged, or
///         holds events outside the scanner or the TOF bins (naming the
///         first).
inline device_events read_events_to_device(gpu::device_file_io &io,
                                           const std::string &path,
                                           std::int64_t num_detectors, int num_tof_bins,
                                           gpu::stream_ref s) {
  const auto records = gpu::read_listmode_to_device(io, path, s);
  const std::size_t n = records.size();
  if (n == 0)
    throw io_error("resproj: " + path + ": no events");
  const span<const scanner::listmode_event> rec(records.data(), n);
  const std::size_t bytes = gpu::validate_events_workspace_bytes(n);
  gpu::device_buffer<unsigned char> ws(bytes, s);
  gpu::device_buffer<scanner::event_check_result> check(1, s);
  gpu::validate_events(rec, num_detectors, num_tof_bins, ws.data(), bytes, check.data(),
                       s);
  device_events e;
  e.offset = {0, n};
  e.pairs = gpu::device_buffer<std::int32_t>(2 * n, s);
  e.bins = gpu::device_buffer<std::int16_t>(n, s);
  gpu::split_events(rec, e.pairs.span(), e.bins.span(), s);
  scanner::event_check_result r;
  check.copy_to_host(&r, 1, 0, s);
  s.synchronize();
  if (r.num_invalid > 0)
    throw io_error("resproj: " + path + ": " + std::to_string(r.num_invalid) +
                   " events outside the scanner or the TOF bins (first: " +
                   std::to_string(r.first_invalid) + ")");
  return e;
}

/// Groups events in acquisition order (one subset, e.g. from
/// `read_events_to_device`) into `num_subsets` subsets on the GPU: event i
/// goes to subset i mod S, stable within a subset, as `group_by_subset` on
/// the host. Allocates the grouped arrays (stream-ordered); queued on `s`,
/// no synchronisation.
/// @throws invalid_argument ("num_subsets") unless >= 1; ("acquisition") if
///         it is already split into subsets.
inline device_events group_by_subset(const device_events &acquisition, int num_subsets,
                                     gpu::stream_ref s) {
  if (acquisition.num_subsets() != 1)
    resproj::detail::throw_invalid("acquisition",
                                   "must be one subset in acquisition order");
  const std::size_t n = acquisition.count();
  device_events e;
  e.offset = subset_offsets(n, num_subsets);
  e.pairs = gpu::device_buffer<std::int32_t>(2 * n, s);
  e.bins = gpu::device_buffer<std::int16_t>(n, s);
  if (n > 0)
    thrust::for_each_n(
        detail::on(s), thrust::counting_iterator<std::size_t>(0), n,
        detail::group_scatter{
            reinterpret_cast<const std::uint64_t *>(acquisition.pairs.data()),
            acquisition.bins.data(), reinterpret_cast<std::uint64_t *>(e.pairs.data()),
            e.bins.data(), n, std::size_t(num_subsets)});
  return e;
}

namespace detail {
/// `gpu_order_subsets` with `key` for every subset, or (null) the layout
/// for each subset's size.
inline void order_subsets(const image_geometry &geometry, const tof_params<float> &tof,
                          span<const float> detectors, device_events &e,
                          gpu::stream_ref s, const gpu::listmode_tof_key *key) {
  if (key && tof.num_bins > 0)
    gpu::detail::check_tof_key(*key);
  const std::size_t nmax = e.max_count();
  e.permutation = gpu::device_buffer<std::uint32_t>(e.count(), s);
  if (nmax == 0) {
    e.layout = lor_layout::sorted_events();
    return;
  }
  const std::size_t bytes = gpu::listmode_order_workspace_bytes(nmax);
  gpu::device_buffer<unsigned char> work(bytes, s);
  gpu::device_buffer<float> starts(3 * nmax, s), ends(3 * nmax, s);
  gpu::device_buffer<std::uint64_t> tp(nmax, s);
  gpu::device_buffer<std::int16_t> tb(nmax, s);
  for (int k = 0; k < e.num_subsets(); ++k) {
    const std::size_t o = e.first(k), n = e.count(k);
    if (n == 0)
      continue;
    thrust::for_each_n(detail::on(s), thrust::counting_iterator<std::size_t>(0), n,
                       detail::event_end_points{detectors.data(), e.pairs.data() + 2 * o,
                                                starts.data(), ends.data()});
    const auto perm = e.permutation.span().subspan(o, n);
    const lor_view<const float> lors(starts.data(), ends.data(), n);
    const span<const std::int16_t> kbins(e.bins.data() + o, n);
    if (tof.num_bins == 0)
      gpu::listmode_order<float>(geometry, lors, perm, work.data(), bytes, s);
    else if (key)
      gpu::listmode_order<float>(geometry, lors, kbins, tof, perm, work.data(), bytes, s,
                                 *key);
    else // the layout for this subset's size
      gpu::listmode_order<float>(geometry, lors, kbins, tof, perm, work.data(), bytes, s);
    const span<const std::uint32_t> cperm(perm.data(), n);
    // Pairs as one 64-bit element per event (offset 8 * o bytes: aligned).
    auto *p64 = reinterpret_cast<std::uint64_t *>(e.pairs.data() + 2 * o);
    gpu::gather<std::uint64_t>({p64, n}, cperm, tp.span().subspan(0, n), s);
    detail::copy_on_device(p64, tp.data(), n * sizeof(std::uint64_t), s);
    gpu::gather<std::int16_t>(kbins, cperm, tb.span().subspan(0, n), s);
    detail::copy_on_device(e.bins.data() + o, tb.data(), n * sizeof(std::int16_t), s);
  }
  e.layout = lor_layout::sorted_events();
}
} // namespace detail

/// Reorders the events of every subset once, for memory locality of the
/// projections (gpu/listmode_order.cuh; the TOF-aware key when
/// `tof.num_bins > 0`): pairs and bins are permuted in place within each
/// subset, `e.permutation` says where each came from (for mapping
/// per-event results back with `gpu::scatter_back`), and `e.layout` becomes
/// `lor_layout::sorted_events()`, so that the projections pick their
/// kernels for sorted events. Compute per-event corrections after it.
/// One-time set-up: allocates its workspace (stream-ordered, freed in
/// stream order); queued on `s`, no synchronisation.
/// @param geometry the image the events are projected into
/// @param detectors detector table (device, xyz per detector)
/// @param key TOF key layout for every subset (tuning only; the overload
///        without it takes `listmode_tof_key::for_image(geometry, n)` for
///        each subset's n events)
/// @throws invalid_argument ("key") for an invalid layout (TOF events),
///         before anything changes.
inline void gpu_order_subsets(const image_geometry &geometry,
                              const tof_params<float> &tof, span<const float> detectors,
                              device_events &e, gpu::stream_ref s,
                              const gpu::listmode_tof_key &key) {
  detail::order_subsets(geometry, tof, detectors, e, s, &key);
}

/// As above, with each subset's key layout from the image and its size.
inline void gpu_order_subsets(const image_geometry &geometry,
                              const tof_params<float> &tof, span<const float> detectors,
                              device_events &e, gpu::stream_ref s) {
  detail::order_subsets(geometry, tof, detectors, e, s, nullptr);
}

} // namespace recon
RESPROJ_NAMESPACE_END
