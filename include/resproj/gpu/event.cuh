/// @file
/// @brief `event`: owning CUDA event for cross-stream ordering and timing.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Owning CUDA event, created on the calling thread's current device, which
/// it remembers. Without timing (the default) it is created with
/// `cudaEventDisableTiming`, the cheapest kind for ordering streams. Move-only;
/// a moved-from event holds no handle. The destructor (`cudaEventDestroy`, on
/// the event's device) does not block and never throws.
///
/// Typical use: `e.record(producer); e.make_wait(consumer);` makes work queued
/// on `consumer` afterwards wait for the work queued on `producer` before the
/// record, without blocking the host. Record and wait are legal during graph
/// capture (they become graph dependencies).
///
/// Thread safety: distinct objects are independent; const operations on one
/// object may run concurrently; `record`, moving and destruction need
/// exclusive access.
class event {
public:
  /// Creates the event on the current device. Does not block.
  /// @param timing  `true` to allow `elapsed_ms` (slightly more expensive).
  /// @throws gpu_error on failure.
  explicit event(bool timing = false) : device_(current_device()) {
    RESPROJ_CUDA_TRY(cudaEventCreateWithFlags(&handle_, timing ? cudaEventDefault
                                                               : cudaEventDisableTiming));
  }

  ~event() noexcept { destroy(); }

  event(const event &) = delete;
  event &operator=(const event &) = delete;

  event(event &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        device_(std::exchange(other.device_, -1)) {}

  /// Destroys the event held, then takes `other`'s.
  event &operator=(event &&other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, nullptr);
      device_ = std::exchange(other.device_, -1);
    }
    return *this;
  }

  /// Records the event at the current end of `stream` (`cudaEventRecord`).
  /// The stream must belong to the event's device. Does not block.
  /// @throws invalid_argument("stream") for the legacy default stream;
  ///         gpu_error on failure.
  void record(stream_ref stream) {
    detail::require_explicit_stream(stream, "stream");
    RESPROJ_CUDA_TRY(cudaEventRecord(handle_, stream.get()));
  }

  /// Makes work queued on `stream` after this call wait until the event's
  /// last record has completed (`cudaStreamWaitEvent`). Works across
  /// devices. Does not block the host.
  /// @throws invalid_argument("stream") for the legacy default stream;
  ///         gpu_error on failure.
  void make_wait(stream_ref stream) const {
    detail::require_explicit_stream(stream, "stream");
    RESPROJ_CUDA_TRY(cudaStreamWaitEvent(stream.get(), handle_, 0));
  }

  /// Blocks the host until the event's last record has completed.
  /// @throws gpu_error (or a subtype) on failure.
  void synchronize() const { RESPROJ_CUDA_TRY(cudaEventSynchronize(handle_)); }

  /// `true` if the event's last record has completed (or it was never
  /// recorded). Does not block.
  /// @throws gpu_error on failure (not for "not yet").
  bool query() const {
    const cudaError_t err = cudaEventQuery(handle_);
    if (err == cudaErrorNotReady)
      return false;
    RESPROJ_CUDA_TRY(err);
    return true;
  }

  /// Milliseconds between two completed records (`cudaEventElapsedTime`);
  /// both events must have been created with `timing = true`. Does not block
  /// (fails if a record has not completed: synchronise `end` first).
  /// @throws gpu_error on failure (e.g. cudaErrorNotReady,
  ///         cudaErrorInvalidResourceHandle for events without timing).
  static float elapsed_ms(const event &start, const event &end) {
    float ms = 0.0f;
    RESPROJ_CUDA_TRY(cudaEventElapsedTime(&ms, start.handle_, end.handle_));
    return ms;
  }

  /// The raw handle (null after a move).
  cudaEvent_t get() const noexcept { return handle_; }
  /// Device the event was created on (-1 after a move).
  int device() const noexcept { return device_; }

private:
  void destroy() noexcept {
    if (handle_ == nullptr)
      return;
    device_guard guard(device_, std::nothrow);
    RESPROJ_CUDA_TRY_NOTHROW(cudaEventDestroy(handle_));
    handle_ = nullptr;
    device_ = -1;
  }

  cudaEvent_t handle_ = nullptr;
  int device_ = -1;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
