/// @file
/// @brief `multi_device_streamer<T>`: projections of host-resident LORs
/// (end points, detector pairs, packed list-mode records; with TOF) split
/// across the devices of a `replicated_image`, one `lor_streamer` per device,
/// all devices streaming at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Throws unless `p` is host memory (pageable or pinned); null is not checked.
inline void require_host_array(const void *p, const std::string &name) {
  if (p != nullptr && query_pointer(p).device_accessible)
    resproj::detail::throw_invalid(name, "device memory given where host memory is "
                                         "required (use the multi-device "
                                         "gpu::forward/back for device-resident LORs)");
}

// Host LOR sources of a multi-device streamer call: `count()`, `check(set)`
// (everything the per-device streamers would reject, before any device
// starts) and `apply(i, range, f)`, which calls `f` with device i's part in
// the argument form of the `lor_streamer` call.

/// Explicit end points in host memory, shared by every device.
template <class T> struct host_end_points {
  static constexpr bool records = false;
  lor_view<const T> lors;
  std::size_t count() const { return lors.count; }
  void check(const device_set &) const {
    resproj::detail::check_lors(lors, "host_lors");
    if (lors.count == 0)
      return;
    require_host_array(lors.starts, "host_lors.starts");
    require_host_array(lors.ends, "host_lors.ends");
  }
  template <class F> void apply(int, lor_range r, F &&f) const {
    f(lors.subview(r.first, r.count));
  }
};

/// Host detector pairs (the same pairs for every device) against one
/// detector table per device.
template <class T> struct host_pairs {
  static constexpr bool records = false;
  const std::vector<detector_pairs<T>> *lors;
  std::size_t count() const { return lors->empty() ? 0 : lors->front().count; }
  void check(const device_set &set) const {
    const std::vector<detector_pairs<T>> &v = *lors;
    if (v.size() != std::size_t(set.size()))
      resproj::detail::throw_invalid(
          "host_lors", "has " + std::to_string(v.size()) + " entries for " +
                           std::to_string(set.size()) + " devices (one per device)");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string name = "host_lors[" + std::to_string(i) + "]";
      if (v[i].count != v[0].count || v[i].pairs != v[0].pairs)
        resproj::detail::throw_invalid(name, "describes other pairs than host_lors[0] "
                                             "(the entries share one host pair array "
                                             "and differ only in the detector table)");
      v[i].check(name.c_str());
      if (v[i].count == 0)
        continue;
      require_device_pointer(v[i].detectors, set.device(int(i)),
                             (name + ".detectors").c_str());
      require_host_array(v[i].pairs, name + ".pairs");
    }
  }
  template <class F> void apply(int i, lor_range r, F &&f) const {
    f((*lors)[std::size_t(i)].subview(r.first, r.count));
  }
};

/// Packed list-mode records in host memory against one detector table per
/// device (xyz per detector).
template <class T> struct host_records {
  static constexpr bool records = true;
  const std::vector<span<const T>> *detectors;
  span<const scanner::listmode_event> events;
  std::size_t count() const { return events.size(); }
  void check(const device_set &set) const {
    const std::vector<span<const T>> &d = *detectors;
    if (d.size() != std::size_t(set.size()))
      resproj::detail::throw_invalid(
          "detectors", "has " + std::to_string(d.size()) + " tables for " +
                           std::to_string(set.size()) + " devices (one per device)");
    if (events.empty())
      return;
    if (events.data() == nullptr)
      resproj::detail::throw_invalid("host_events", "null pointer");
    require_host_array(events.data(), "host_events");
    for (std::size_t i = 0; i < d.size(); ++i) {
      const std::string name = "detectors[" + std::to_string(i) + "]";
      if (d[i].empty() || d[i].data() == nullptr)
        resproj::detail::throw_invalid(name, "empty detector table");
      if (d[i].size() % 3 != 0 || d[i].size() != d[0].size())
        resproj::detail::throw_invalid(
            name, "size " + std::to_string(d[i].size()) +
                      " is not a multiple of 3 (xyz per detector) or differs from "
                      "detectors[0]");
      require_device_pointer(d[i].data(), set.device(int(i)), name.c_str());
    }
  }
  template <class F> void apply(int i, lor_range r, F &&f) const {
    f((*detectors)[std::size_t(i)], events.subspan(r.first, r.count));
  }
};

} // namespace detail

/// Projections of LORs that live in host memory (STIR-style callers),
/// split across the devices of a `replicated_image`: one `lor_streamer` per
/// device (its own pinned and device staging, streams and copy threads).
/// A call divides the caller's LORs into consecutive per-device ranges
/// proportional to `weights` (equal when empty) and streams every range
/// through its device at the same time, one host thread per device (the
/// calling thread takes one range). Forward values land in the caller's host
/// output; back projections accumulate into each device's replica (zero the
/// replicas first for a plain back projection), then sum the replicas with
/// `replica_reducer` (multi_device_reduce.cuh).
///
/// LORs: explicit end points (`lor_view`, host memory), detector pairs (one
/// `detector_pairs` per device in the set's order, all with the same host
/// pair array and count, each with the detector table resident on its
/// device) or packed `scanner::listmode_event` records (host memory) with one
/// detector table per device. Per-LOR host arrays (values, bins, TOF
/// `sigmas` / `center_offsets`) are indexed like the whole call.
///
/// Every call validates every argument for every device before any device
/// starts (so nothing is written when it throws), and is HOST-BLOCKING like
/// `lor_streamer`: it returns when the forward results are in the caller's
/// host array, or the back projections are complete in the replicas, and
/// the host arrays may be reused. `streams[i]` orders device i's earlier work
/// (image upload, zeroing); later work on it may use the results. Not
/// graph-capturable; one call at a time per streamer.
template <class T> class multi_device_streamer {
public:
  /// Creates one `lor_streamer` per device of `devices` (allocates its
  /// staging, see `lor_streamer`).
  /// @param devices      the devices, in the order of the images' replicas
  /// @param max_chunk    LORs per chunk and device, > 0
  /// @param slots        pipeline depth per device (>= 2)
  /// @param options      thread-to-LOR mapping of the kernels (`rows` ignored)
  /// @param copy_threads host copy threads per device (-1: the streamer's
  ///                     default)
  /// @throws invalid_argument("max_chunk" / "slots"); gpu_out_of_memory.
  /// Synchronises the new streams once.
  multi_device_streamer(const device_set &devices, std::size_t max_chunk, int slots = 3,
                        const launch_options &options = {}, int copy_threads = -1)
      : set_(devices) {
    streamers_.reserve(std::size_t(set_.size()));
    for (const int d : set_.devices()) {
      const device_guard guard(d);
      streamers_.push_back(
          std::make_unique<lor_streamer<T>>(max_chunk, slots, options, copy_threads));
    }
  }

  const device_set &devices() const noexcept { return set_; }
  int size() const noexcept { return set_.size(); }
  std::size_t max_chunk() const noexcept { return streamers_.front()->max_chunk(); }
  /// Entry i's streamer (for single-device calls on that device).
  lor_streamer<T> &streamer(int i) { return *streamers_.at(std::size_t(i)); }

  /// Forward projection of host end points: `host_out[i]` = value of LOR i.
  /// @param image     the replicated image (on the streamer's devices, in order)
  /// @param host_lors LORs in host memory, any count
  /// @param host_out  host output, at least `host_lors.count` values
  /// @param streams   one stream per device, ordering earlier work
  /// @param weights   relative share of each device (empty: equal)
  /// @throws invalid_argument naming the argument ("image", "streams",
  ///         "host_lors.starts", "host_out", "weights", ...) before any work;
  ///         gpu_error on CUDA failures (the first device's error, after
  ///         every device stopped). Host-blocking.
  void forward(const replicated_image<T> &image, lor_view<const T> host_lors,
               span<T> host_out, const std::vector<stream_ref> &streams,
               const std::vector<double> &weights = {}) {
    forward_impl(image, detail::host_end_points<T>{host_lors}, host_out, streams,
                 weights);
  }
  /// As above for host detector pairs, one entry per device (same host
  /// pairs, the device's detector table). Throws name "host_lors[i]...".
  void forward(const replicated_image<T> &image,
               const std::vector<detector_pairs<T>> &host_lors, span<T> host_out,
               const std::vector<stream_ref> &streams,
               const std::vector<double> &weights = {}) {
    forward_impl(image, detail::host_pairs<T>{&host_lors}, host_out, streams, weights);
  }
  /// As above for host packed records (TOF bins ignored) against one
  /// detector table per device ("detectors[i]", "host_events").
  void forward(const replicated_image<T> &image,
               const std::vector<span<const T>> &detectors,
               span<const scanner::listmode_event> host_events, span<T> host_out,
               const std::vector<stream_ref> &streams,
               const std::vector<double> &weights = {}) {
    forward_impl(image, detail::host_records<T>{&detectors, host_events}, host_out,
                 streams, weights);
  }

  /// Back projection of host end points with host values into each
  /// device's replica (accumulates). Throws as `forward` ("host_values").
  /// Host-blocking: returns when every replica holds its part.
  void back(replicated_image<T> &image, lor_view<const T> host_lors,
            span<const T> host_values, const std::vector<stream_ref> &streams,
            const std::vector<double> &weights = {}) {
    back_impl(image, detail::host_end_points<T>{host_lors}, host_values, streams,
              weights);
  }
  /// As above for host detector pairs (one entry per device).
  void back(replicated_image<T> &image, const std::vector<detector_pairs<T>> &host_lors,
            span<const T> host_values, const std::vector<stream_ref> &streams,
            const std::vector<double> &weights = {}) {
    back_impl(image, detail::host_pairs<T>{&host_lors}, host_values, streams, weights);
  }
  /// As above for host packed records (one detector table per device).
  void back(replicated_image<T> &image, const std::vector<span<const T>> &detectors,
            span<const scanner::listmode_event> host_events, span<const T> host_values,
            const std::vector<stream_ref> &streams,
            const std::vector<double> &weights = {}) {
    back_impl(image, detail::host_records<T>{&detectors, host_events}, host_values,
              streams, weights);
  }

  /// TOF sinogram forward projection: `host_out[i * N + j]` (N =
  /// `host_tof.num_bins`); per-LOR TOF arrays in host memory. Throws as
  /// `forward` and for the TOF parameters ("tof.sigma", ...). Host-blocking.
  void forward_tof_sino(const replicated_image<T> &image, lor_view<const T> host_lors,
                        const tof_params<T> &host_tof, span<T> host_out,
                        const std::vector<stream_ref> &streams,
                        const std::vector<double> &weights = {}) {
    forward_tof_sino_impl(image, detail::host_end_points<T>{host_lors}, host_tof,
                          host_out, streams, weights);
  }
  /// As above for host detector pairs (one entry per device).
  void forward_tof_sino(const replicated_image<T> &image,
                        const std::vector<detector_pairs<T>> &host_lors,
                        const tof_params<T> &host_tof, span<T> host_out,
                        const std::vector<stream_ref> &streams,
                        const std::vector<double> &weights = {}) {
    forward_tof_sino_impl(image, detail::host_pairs<T>{&host_lors}, host_tof, host_out,
                          streams, weights);
  }

  /// TOF sinogram back projection (`host_values[i * N + j]`) into each
  /// replica. Host-blocking.
  void back_tof_sino(replicated_image<T> &image, lor_view<const T> host_lors,
                     const tof_params<T> &host_tof, span<const T> host_values,
                     const std::vector<stream_ref> &streams,
                     const std::vector<double> &weights = {}) {
    back_tof_sino_impl(image, detail::host_end_points<T>{host_lors}, host_tof,
                       host_values, streams, weights);
  }
  /// As above for host detector pairs (one entry per device).
  void back_tof_sino(replicated_image<T> &image,
                     const std::vector<detector_pairs<T>> &host_lors,
                     const tof_params<T> &host_tof, span<const T> host_values,
                     const std::vector<stream_ref> &streams,
                     const std::vector<double> &weights = {}) {
    back_tof_sino_impl(image, detail::host_pairs<T>{&host_lors}, host_tof, host_values,
                       streams, weights);
  }

  /// TOF list-mode forward projection of host end points with host bins:
  /// `host_out[i]` = value of LOR i at bin `host_bins[i]`. Throws as
  /// `forward_tof_sino` and "host_bins". Host-blocking.
  void forward_tof_lm(const replicated_image<T> &image, lor_view<const T> host_lors,
                      span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                      span<T> host_out, const std::vector<stream_ref> &streams,
                      const std::vector<double> &weights = {}) {
    forward_tof_lm_impl(image, detail::host_end_points<T>{host_lors}, host_bins, host_tof,
                        host_out, streams, weights);
  }
  /// As above for host detector pairs (one entry per device).
  void forward_tof_lm(const replicated_image<T> &image,
                      const std::vector<detector_pairs<T>> &host_lors,
                      span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                      span<T> host_out, const std::vector<stream_ref> &streams,
                      const std::vector<double> &weights = {}) {
    forward_tof_lm_impl(image, detail::host_pairs<T>{&host_lors}, host_bins, host_tof,
                        host_out, streams, weights);
  }
  /// As above for host packed records, whose TOF bins are used (10 bytes
  /// per event over each device's bus; one detector table per device).
  void forward_tof_lm(const replicated_image<T> &image,
                      const std::vector<span<const T>> &detectors,
                      span<const scanner::listmode_event> host_events,
                      const tof_params<T> &host_tof, span<T> host_out,
                      const std::vector<stream_ref> &streams,
                      const std::vector<double> &weights = {}) {
    forward_tof_lm_impl(image, detail::host_records<T>{&detectors, host_events}, {},
                        host_tof, host_out, streams, weights);
  }

  /// TOF list-mode back projection into each replica. Host-blocking.
  void back_tof_lm(replicated_image<T> &image, lor_view<const T> host_lors,
                   span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                   span<const T> host_values, const std::vector<stream_ref> &streams,
                   const std::vector<double> &weights = {}) {
    back_tof_lm_impl(image, detail::host_end_points<T>{host_lors}, host_bins, host_tof,
                     host_values, streams, weights);
  }
  /// As above for host detector pairs (one entry per device).
  void back_tof_lm(replicated_image<T> &image,
                   const std::vector<detector_pairs<T>> &host_lors,
                   span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                   span<const T> host_values, const std::vector<stream_ref> &streams,
                   const std::vector<double> &weights = {}) {
    back_tof_lm_impl(image, detail::host_pairs<T>{&host_lors}, host_bins, host_tof,
                     host_values, streams, weights);
  }
  /// As above for host packed records (their TOF bins).
  void back_tof_lm(replicated_image<T> &image,
                   const std::vector<span<const T>> &detectors,
                   span<const scanner::listmode_event> host_events,
                   const tof_params<T> &host_tof, span<const T> host_values,
                   const std::vector<stream_ref> &streams,
                   const std::vector<double> &weights = {}) {
    back_tof_lm_impl(image, detail::host_records<T>{&detectors, host_events}, {},
                     host_tof, host_values, streams, weights);
  }

private:
  template <class Src>
  void forward_impl(const replicated_image<T> &image, const Src &src, span<T> out,
                    const std::vector<stream_ref> &streams,
                    const std::vector<double> &weights) {
    run(image, src, out.data(), out.size(), 1, "host_out", nullptr, false, streams,
        weights, [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            st.forward(image.view(i), lors..., out.subspan(r.first, r.count),
                       streams[std::size_t(i)]);
          });
        });
  }

  template <class Src>
  void back_impl(replicated_image<T> &image, const Src &src, span<const T> values,
                 const std::vector<stream_ref> &streams,
                 const std::vector<double> &weights) {
    run(image, src, values.data(), values.size(), 1, "host_values", nullptr, false,
        streams, weights, [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            st.back(image.view(i), lors..., values.subspan(r.first, r.count),
                    streams[std::size_t(i)]);
          });
        });
  }

  template <class Src>
  void forward_tof_sino_impl(const replicated_image<T> &image, const Src &src,
                             const tof_params<T> &tof, span<T> out,
                             const std::vector<stream_ref> &streams,
                             const std::vector<double> &weights) {
    const std::size_t nb = std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
    run(image, src, out.data(), out.size(), nb, "host_out", &tof, false, streams, weights,
        [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            st.forward_tof_sino(image.view(i), lors..., tof.subview(r.first, r.count),
                                out.subspan(r.first * nb, r.count * nb),
                                streams[std::size_t(i)]);
          });
        });
  }

  template <class Src>
  void back_tof_sino_impl(replicated_image<T> &image, const Src &src,
                          const tof_params<T> &tof, span<const T> values,
                          const std::vector<stream_ref> &streams,
                          const std::vector<double> &weights) {
    const std::size_t nb = std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
    run(image, src, values.data(), values.size(), nb, "host_values", &tof, false, streams,
        weights, [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            st.back_tof_sino(image.view(i), lors..., tof.subview(r.first, r.count),
                             values.subspan(r.first * nb, r.count * nb),
                             streams[std::size_t(i)]);
          });
        });
  }

  template <class Src>
  void forward_tof_lm_impl(const replicated_image<T> &image, const Src &src,
                           span<const std::int16_t> bins, const tof_params<T> &tof,
                           span<T> out, const std::vector<stream_ref> &streams,
                           const std::vector<double> &weights) {
    run(
        image, src, out.data(), out.size(), 1, "host_out", &tof, !Src::records, streams,
        weights,
        [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            const tof_params<T> t = tof.subview(r.first, r.count);
            const span<T> o = out.subspan(r.first, r.count);
            if constexpr (Src::records)
              st.forward_tof_lm(image.view(i), lors..., t, o, streams[std::size_t(i)]);
            else
              st.forward_tof_lm(image.view(i), lors..., bins.subspan(r.first, r.count), t,
                                o, streams[std::size_t(i)]);
          });
        },
        bins);
  }

  template <class Src>
  void back_tof_lm_impl(replicated_image<T> &image, const Src &src,
                        span<const std::int16_t> bins, const tof_params<T> &tof,
                        span<const T> values, const std::vector<stream_ref> &streams,
                        const std::vector<double> &weights) {
    run(
        image, src, values.data(), values.size(), 1, "host_values", &tof, !Src::records,
        streams, weights,
        [&](int i, lor_streamer<T> &st, lor_range r) {
          src.apply(i, r, [&](const auto &...lors) {
            const tof_params<T> t = tof.subview(r.first, r.count);
            const span<const T> v = values.subspan(r.first, r.count);
            if constexpr (Src::records)
              st.back_tof_lm(image.view(i), lors..., t, v, streams[std::size_t(i)]);
            else
              st.back_tof_lm(image.view(i), lors..., bins.subspan(r.first, r.count), t, v,
                             streams[std::size_t(i)]);
          });
        },
        bins);
  }

  /// Validates the call for every device, splits the LORs and runs
  /// `part(i, streamer, range)` for every device with LORs, concurrently
  /// (one thread per device but the last, which runs on the caller). Waits
  /// for all of them, then rethrows the first device's error, if any.
  /// `data` / `size` / `name`: the host output or values (`per_lor` values
  /// per LOR); `tof`: TOF parameters (or null); `with_bins`: host bins used.
  template <class Src, class Part>
  void run(const replicated_image<T> &image, const Src &src, const void *data,
           std::size_t size, std::size_t per_lor, const char *name,
           const tof_params<T> *tof, bool with_bins,
           const std::vector<stream_ref> &streams, const std::vector<double> &weights,
           Part &&part, span<const std::int16_t> bins = {}) {
    // --- validation, for every device, before any device starts ---
    if (image.devices().devices() != set_.devices())
      resproj::detail::throw_invalid("image", "replicated on another device set than "
                                              "the streamer's (same devices, same order "
                                              "required)");
    detail::check_streams(set_.devices(), streams);
    src.check(set_);
    const std::size_t count = src.count();
    if (size < count * per_lor)
      resproj::detail::throw_invalid(name, "too small: holds " + std::to_string(size) +
                                               " elements, needs " +
                                               std::to_string(count * per_lor));
    if (count > 0 && data == nullptr)
      resproj::detail::throw_invalid(name, "null pointer");
    if (count > 0)
      detail::require_host_array(data, name);
    if (tof != nullptr) {
      resproj::detail::check_tof(*tof, count);
      if (count > 0) {
        if (!tof->sigmas.empty())
          detail::require_host_array(tof->sigmas.data(), "tof.sigmas");
        if (!tof->center_offsets.empty())
          detail::require_host_array(tof->center_offsets.data(), "tof.center_offsets");
      }
    }
    if (with_bins) {
      if (bins.size() < count)
        resproj::detail::throw_invalid("host_bins",
                                       "too small: holds " + std::to_string(bins.size()) +
                                           " elements, needs " + std::to_string(count));
      if (count > 0 && bins.data() == nullptr)
        resproj::detail::throw_invalid("host_bins", "null pointer");
      if (count > 0)
        detail::require_host_array(bins.data(), "host_bins");
    }
    const std::vector<lor_range> ranges = split_lors(count, set_.size(), weights);
    if (count == 0)
      return;

    // --- every device at once ---
    std::vector<int> busy;
    for (int i = 0; i < set_.size(); ++i)
      if (ranges[std::size_t(i)].count > 0)
        busy.push_back(i);
    std::vector<std::exception_ptr> errors(busy.size());
    auto work = [&](std::size_t k) {
      try {
        const int i = busy[k];
        part(i, *streamers_[std::size_t(i)], ranges[std::size_t(i)]);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    threads.reserve(busy.size());
    try {
      for (std::size_t k = 0; k + 1 < busy.size(); ++k)
        threads.emplace_back(work, k);
    } catch (...) { // no thread: the remaining parts are not run
      for (auto &t : threads)
        t.join();
      throw;
    }
    work(busy.size() - 1);
    for (auto &t : threads)
      t.join();
    for (const auto &e : errors)
      if (e)
        std::rethrow_exception(e);
  }

  device_set set_;
  std::vector<std::unique_ptr<lor_streamer<T>>> streamers_;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
