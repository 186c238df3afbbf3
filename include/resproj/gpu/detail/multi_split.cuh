/// @file
/// @brief Helpers of the multi-device projectors: per-device stream checks
/// and cross-device event barriers. Also includes gpu/lor_split.hpp
/// (`lor_range`, `split_lors`).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/lor_split.hpp"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

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
