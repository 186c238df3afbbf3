/// @file
/// @brief Helpers of the multi-device projectors: per-device LOR ranges,
/// stream checks, cross-device event barriers, and the check that memory is
/// reachable from a device (its own or a peer's).
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// A range of LORs `[first, first + count)`.
struct lor_range {
  std::size_t first = 0;
  std::size_t count = 0;
};

/// Splits `count` LORs into `parts` consecutive ranges proportional to
/// `weights` (empty: equal), each a multiple of `granule` LORs (`granule`
/// must divide `count`). Ranges may be empty. Plain host arithmetic.
/// @throws invalid_argument("weights") for a wrong size, a negative or
///         non-finite weight, or all weights zero; ("granule") if it does not
///         divide `count`.
inline std::vector<lor_range> split_lors(std::size_t count, int parts,
                                         const std::vector<double> &weights,
                                         std::size_t granule = 1) {
  if (parts <= 0)
    resproj::detail::throw_invalid("parts", "must be >= 1");
  if (granule == 0 || count % granule != 0)
    resproj::detail::throw_invalid("granule", std::to_string(granule) +
                                                  " does not divide the LOR count " +
                                                  std::to_string(count));
  std::vector<double> w = weights;
  if (w.empty())
    w.assign(std::size_t(parts), 1.0);
  if (w.size() != std::size_t(parts))
    resproj::detail::throw_invalid("weights", "has " + std::to_string(w.size()) +
                                                  " entries for " +
                                                  std::to_string(parts) + " devices");
  double total = 0;
  for (const double x : w) {
    if (!std::isfinite(x) || x < 0)
      resproj::detail::throw_invalid("weights", "must be finite and >= 0");
    total += x;
  }
  if (!(total > 0))
    resproj::detail::throw_invalid("weights", "are all zero");
  const std::size_t units = count / granule;
  std::vector<lor_range> ranges(static_cast<std::size_t>(parts));
  double cumulative = 0;
  std::size_t previous = 0;
  for (int d = 0; d < parts; ++d) {
    cumulative += w[std::size_t(d)];
    std::size_t boundary =
        d + 1 == parts ? units
                       : std::size_t(std::llround(double(units) * cumulative / total));
    if (boundary > units)
      boundary = units;
    if (boundary < previous)
      boundary = previous;
    ranges[std::size_t(d)] =
        lor_range{previous * granule, (boundary - previous) * granule};
    previous = boundary;
  }
  return ranges;
}

namespace detail {

/// Checks that `streams` holds one explicit stream per device of `devices`,
/// each on its device (CUDA 12.8+ runtimes; skipped for capturing streams).
inline void check_streams(const std::vector<int> &devices,
                          const std::vector<stream_ref> &streams) {
  if (streams.size() != devices.size())
    resproj::detail::throw_invalid(
        "streams", "has " + std::to_string(streams.size()) + " streams for " +
                       std::to_string(devices.size()) + " devices (one per device)");
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const std::string name = "streams[" + std::to_string(i) + "]";
    require_explicit_stream(streams[i], name.c_str());
#if CUDART_VERSION >= 12080
    capture_state capture;
    RESPROJ_CUDA_TRY(query_capture(streams[i].get(), capture));
    if (capture.status != cudaStreamCaptureStatusNone)
      continue;
    int device = -1;
    RESPROJ_CUDA_TRY(cudaStreamGetDevice(streams[i].get(), &device));
    if (device != devices[i])
      resproj::detail::throw_invalid(name, "belongs to device " + std::to_string(device) +
                                               ", expected device " +
                                               std::to_string(devices[i]));
#endif
  }
}

/// One event per device (no timing), for ordering work across devices.
class device_events {
public:
  device_events() = default;
  explicit device_events(const std::vector<int> &devices) {
    events_.reserve(devices.size());
    for (const int d : devices) {
      const device_guard guard(d);
      events_.emplace_back(false);
    }
  }
  /// Every stream waits for the work queued so far on every other stream
  /// (records one event per stream, then the waits; the host never blocks).
  void barrier(const std::vector<stream_ref> &streams) {
    for (std::size_t i = 0; i < streams.size(); ++i)
      events_[i].record(streams[i]);
    for (std::size_t i = 0; i < streams.size(); ++i)
      for (std::size_t j = 0; j < streams.size(); ++j)
        if (i != j)
          events_[j].make_wait(streams[i]);
  }
  /// `streams[to]` waits for the work queued so far on `streams[from]`.
  void order(const std::vector<stream_ref> &streams, std::size_t from, std::size_t to) {
    events_[from].record(streams[from]);
    events_[from].make_wait(streams[to]);
  }

private:
  std::vector<event> events_;
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
