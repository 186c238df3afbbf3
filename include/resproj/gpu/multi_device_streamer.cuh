/// @file
/// @brief `multi_device_streamer<T>`: projections of host-resident LORs
/// (end points, detector pairs, packed list-mode records; every operation)
/// split across the devices of a `replicated_image`, one `lor_streamer` per
/// device, all devices streaming at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/lor_split.hpp"
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

// Host LOR sources of a multi-device streamer call: `count()`, `lors()`
// (the source of the shared contract check), `check(set)` (the host LORs
// for every device: everything the per-device streamers would reject about
// them, before any device starts) and `part(i, range)`, device i's part in
// the form its `lor_streamer` takes.

/// Explicit end points in host memory, shared by every device.
template <class T> struct host_end_points {
  lor_view<const T> all;
  std::size_t count() const { return all.count; }
  const lor_view<const T> &lors() const { return all; }
  void check(const device_set &) const {
    all.check("host_lors");
    if (all.count == 0)
      return;
    require_host_array(all.starts, "host_lors.starts");
    require_host_array(all.ends, "host_lors.ends");
  }
  lor_view<const T> part(int, lor_range r) const { return all.subview(r.first, r.count); }
};

/// The host array of per-device entries (shared by every entry) and its name.
template <class T> const void *host_array(const detector_pairs<T> &l) { return l.pairs; }
template <class T> const void *host_array(const scanner::listmode_records<T> &l) {
  return l.events;
}
template <class T> const char *host_array_name(const detector_pairs<T> &) {
  return ".pairs";
}
template <class T> const char *host_array_name(const scanner::listmode_records<T> &) {
  return ".events";
}

/// Host detector pairs or packed records (the same host array for every
/// device) against one detector table per device (`Lors`:
/// `detector_pairs<T>` or `scanner::listmode_records<T>`).
template <class Lors> struct host_per_device {
  const std::vector<Lors> *entries;
  std::size_t count() const { return entries->empty() ? 0 : entries->front().count; }
  const Lors &lors() const { return entries->front(); }
  void check(const device_set &set) const {
    const std::vector<Lors> &v = *entries;
    if (v.size() != std::size_t(set.size()))
      resproj::detail::throw_invalid(
          "host_lors", "has " + std::to_string(v.size()) + " entries for " +
                           std::to_string(set.size()) + " devices (one per device)");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string name = "host_lors[" + std::to_string(i) + "]";
      if (v[i].count != v[0].count || host_array(v[i]) != host_array(v[0]) ||
          v[i].num_detectors != v[0].num_detectors)
        resproj::detail::throw_invalid(
            name, "describes other LORs than host_lors[0] (the entries share one host "
                  "array and differ only in the detector table, of the same size)");
      v[i].check(name.c_str());
      if (v[i].count == 0)
        continue;
      require_device_pointer(v[i].detectors, set.device(int(i)),
                             (name + ".detectors").c_str());
      require_host_array(host_array(v[i]), name + host_array_name(v[i]));
    }
  }
  Lors part(int i, lor_range r) const {
    return (*entries)[std::size_t(i)].subview(r.first, r.count);
  }
};

template <class T> host_end_points<T> multi_source(const lor_view<const T> &l) {
  return {l};
}
template <class T> host_end_points<T> multi_source(const lor_view<T> &l) {
  return {l.normalized()};
}
template <class Lors> host_per_device<Lors> multi_source(const std::vector<Lors> &l) {
  return {&l};
}

/// The host LOR sources of a multi-device streamer for value type T.
template <class L, class T> struct is_multi_streamed_lors : std::false_type {};
template <class T>
struct is_multi_streamed_lors<lor_view<const T>, T> : std::true_type {};
template <class T> struct is_multi_streamed_lors<lor_view<T>, T> : std::true_type {};
template <class T>
struct is_multi_streamed_lors<std::vector<detector_pairs<T>>, T> : std::true_type {};
template <class T>
struct is_multi_streamed_lors<std::vector<scanner::listmode_records<T>>, T>
    : std::true_type {};

template <class Op, class HostLors, class T>
using if_multi_streamed =
    std::enable_if_t<resproj::detail::is_operation<Op>::value &&
                     resproj::detail::operation_fits<Op, T>::value &&
                     is_multi_streamed_lors<HostLors, T>::value>;

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
/// Host LORs: explicit end points (one `lor_view`, host memory, shared by
/// every device), or one `detector_pairs` / `scanner::listmode_records` per
/// device in the set's order, all with the same host pair / record array
/// and count, each with its detector table (of the same size) resident on
/// its device. The operation's per-LOR host arrays (TOF `sigmas` /
/// `center_offsets`, list-mode `bins`) and the values are indexed like the
/// whole call; over records, `op::tof_listmode{tof}` (empty bins) takes the
/// records' TOF bins.
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
  /// @param copy_threads host copy threads per device (-1: the streamer's
  ///                     default)
  /// @throws invalid_argument("max_chunk" / "slots"); gpu_out_of_memory.
  /// Synchronises the new streams once.
  multi_device_streamer(const device_set &devices, std::size_t max_chunk, int slots = 3,
                        int copy_threads = -1)
      : set_(devices) {
    streamers_.reserve(std::size_t(set_.size()));
    for (const int d : set_.devices()) {
      const device_guard guard(d);
      streamers_.push_back(
          std::make_unique<lor_streamer<T>>(max_chunk, slots, copy_threads));
    }
  }

  const device_set &devices() const noexcept { return set_; }
  int size() const noexcept { return set_.size(); }
  std::size_t max_chunk() const noexcept { return streamers_.front()->max_chunk(); }
  /// Entry i's streamer (for single-device calls on that device).
  lor_streamer<T> &streamer(int i) { return *streamers_.at(std::size_t(i)); }

  /// Forward projection of host LORs: the operation's values of every LOR
  /// (`op::tof_sinogram`: `[lor][bin]`) into `host_out`.
  /// @param operation `op::non_tof{}`, `op::tof_sinogram{tof}` or
  ///                  `op::tof_listmode{tof, bins}` (per-LOR arrays in host
  ///                  memory, indexed like the whole call)
  /// @param image     the replicated image (on the streamer's devices, in order)
  /// @param host_lors `lor_view<const T>` (host end points), or
  ///                  `std::vector<detector_pairs<T>>` /
  ///                  `std::vector<scanner::listmode_records<T>>` (one per
  ///                  device, see the class)
  /// @param host_out  host output, `count * values_per_lor` values
  /// @param streams   one stream per device, ordering earlier work
  /// @param weights   relative share of each device (empty: equal)
  /// @throws invalid_argument naming the argument ("image", "streams",
  ///         "host_lors.starts", "host_lors[i].detectors", "host_out",
  ///         "tof.sigma", "bins", "weights", ...) before any work; gpu_error
  ///         on CUDA failures (the first device's error, after every device
  ///         stopped).
  /// Host-blocking: returns when `host_out` holds the results.
  template <class Op, class HostLors, class = detail::if_multi_streamed<Op, HostLors, T>>
  void forward(const Op &operation, const replicated_image<T> &image,
               const HostLors &host_lors, span<T> host_out,
               const std::vector<stream_ref> &streams,
               const std::vector<double> &weights = {}) {
    const auto src = detail::multi_source(host_lors);
    const std::size_t per_lor = operation.values_per_lor();
    run(operation, image, src, host_out.data(), host_out.size(), "host_out", streams,
        weights, [&](int i, lor_streamer<T> &st, lor_range r) {
          st.forward(resproj::detail::operation_part(operation, r.first, r.count),
                     image.view(i), src.part(i, r),
                     host_out.subspan(r.first * per_lor, r.count * per_lor),
                     streams[std::size_t(i)]);
        });
  }

  /// Back projection of host LORs with host values (`count *
  /// values_per_lor`) into each device's replica (accumulates).
  /// @throws as `forward` ("host_values" instead of "host_out").
  /// Host-blocking: returns when every replica holds its part.
  template <class Op, class HostLors, class = detail::if_multi_streamed<Op, HostLors, T>>
  void back(const Op &operation, replicated_image<T> &image, const HostLors &host_lors,
            span<const T> host_values, const std::vector<stream_ref> &streams,
            const std::vector<double> &weights = {}) {
    const auto src = detail::multi_source(host_lors);
    const std::size_t per_lor = operation.values_per_lor();
    run(operation, image, src, host_values.data(), host_values.size(), "host_values",
        streams, weights, [&](int i, lor_streamer<T> &st, lor_range r) {
          st.back(resproj::detail::operation_part(operation, r.first, r.count),
                  image.view(i), src.part(i, r),
                  host_values.subspan(r.first * per_lor, r.count * per_lor),
                  streams[std::size_t(i)]);
        });
  }

private:
  /// Validates the call for every device, splits the LORs and runs
  /// `part(i, streamer, range)` for every device with LORs, concurrently
  /// (one thread per device but the last, which runs on the caller). Waits
  /// for all of them, then rethrows the first device's error, if any.
  /// `data` / `size` / `name`: the host output or values.
  template <class Op, class Src, class Part>
  void run(const Op &o, const replicated_image<T> &image, const Src &src,
           const void *data, std::size_t size, const char *name,
           const std::vector<stream_ref> &streams, const std::vector<double> &weights,
           Part &&part) {
    // --- validation, for every device, before any device starts ---
    if (image.devices().devices() != set_.devices())
      resproj::detail::throw_invalid("image", "replicated on another device set than "
                                              "the streamer's (same devices, same order "
                                              "required)");
    detail::check_streams(set_.devices(), streams);
    src.check(set_);
    const std::size_t count = src.count();
    detail::check_streamed_projection(o, image.geometry(), src.lors(), size, data,
                                      name); // shared contract
    if (count > 0) {
      resproj::detail::for_each_operation_region(o,
                                                 [](const void *p, const char *region) {
                                                   detail::require_host_array(p, region);
                                                 });
      detail::require_host_array(data, name);
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
