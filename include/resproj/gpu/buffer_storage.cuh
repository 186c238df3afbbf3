/// @file
/// @brief How `device_buffer` obtains and gives back its memory: the
/// stream-ordered, graph-capture-aware allocation and free of one allocation
/// (`detail::allocate_stream_ordered`, `detail::free_stream_ordered`; the
/// rules are in `device_buffer`'s class comment) and `flush_deferred_frees`,
/// which frees the allocations parked while their stream was being captured.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <new>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// One stream-ordered allocation: its memory (null for none), the device
/// and stream it lives on and, for a graph allocation, the capture id.
struct stream_ordered_allocation {
  void *pointer = nullptr;
  int device = -1;
  cudaStream_t stream = nullptr;
  unsigned long long capture_id = 0; ///< capture sequence (0: outside any capture)
};

/// Allocates `bytes` stream-ordered on `s` on the current device;
/// `bytes == 0` allocates nothing but still records device and stream.
/// Before the first allocation on a device the pool's release threshold is
/// configured (memory_pool.cuh). During a capture of `s` the allocation is
/// recorded as a graph allocation node; otherwise parked frees of `s` are
/// drained first and the allocation is made in relaxed capture mode.
/// `s` must be an explicit stream (checked by the caller).
/// @throws invalid_argument("stream") for a stream of another device
///         (CUDA 12.8+ runtimes, not checked during capture);
///         gpu_out_of_memory when the device is full; gpu_error otherwise.
inline stream_ordered_allocation allocate_stream_ordered(std::size_t bytes,
                                                         stream_ref s) {
  const int device = current_device();
  capture_state capture;
  RESPROJ_CUDA_TRY(query_capture(s.get(), capture));
  const bool capturing = capture.status != cudaStreamCaptureStatusNone;
#if CUDART_VERSION >= 12080
  if (!capturing) { // (cudaStreamGetDevice is refused on a capturing stream)
    int stream_device = -1;
    RESPROJ_CUDA_TRY(cudaStreamGetDevice(s.get(), &stream_device));
    if (stream_device != device)
      throw invalid_argument("stream",
                             "belongs to device " + std::to_string(stream_device) +
                                 " but the current device is " + std::to_string(device) +
                                 "; allocate with the stream's device current");
  }
#endif
  stream_ordered_allocation a;
  a.device = device;
  a.stream = s.get();
  if (bytes == 0)
    return a;
  ensure_pool_configured(device);
  if (capturing) { // recorded as a graph allocation node
    RESPROJ_CUDA_TRY(cudaMallocAsync(&a.pointer, bytes, a.stream));
  } else {
    drain_deferred_frees(a.stream); // reuse parked memory first
    // relaxed: another stream (of any thread) may be capturing in global mode
    relaxed_capture_scope relaxed;
    RESPROJ_CUDA_TRY(cudaMallocAsync(&a.pointer, bytes, a.stream));
  }
  a.capture_id = capture.status == cudaStreamCaptureStatusActive ? capture.id : 0;
  return a;
}

/// Stream-ordered free of a `device_buffer` allocation, safe during graph
/// capture (see `device_buffer`'s class comment). Never throws, leaves no
/// stale error.
/// @param allocation_capture  capture id at allocation time (0: allocated
///                            outside any capture).
inline void free_stream_ordered(void *pointer, int device, cudaStream_t stream,
                                unsigned long long allocation_capture) noexcept {
  device_guard guard(device, std::nothrow);
  capture_state capture;
  if (discard_error(query_capture(stream, capture)) != cudaSuccess)
    return; // the stream is unusable (destroyed before the buffer?): leak
  const bool same_capture = allocation_capture != 0 && allocation_capture == capture.id;
  switch (capture.status) {
  case cudaStreamCaptureStatusNone: {
    drain_deferred_frees(stream);
    // relaxed: another stream (of any thread) may be capturing in global mode
    relaxed_capture_scope relaxed;
    RESPROJ_CUDA_TRY_NOTHROW(cudaFreeAsync(pointer, stream));
    return;
  }
  case cudaStreamCaptureStatusActive:
    if (same_capture) // graph allocation of this capture: record a free node
      RESPROJ_CUDA_TRY_NOTHROW(cudaFreeAsync(pointer, stream));
    else // touching the capturing stream would be wrong: free it later
      park_allocation(pointer, device, stream);
    return;
  default:             // cudaStreamCaptureStatusInvalidated
    if (!same_capture) // (a graph allocation of the dead capture dies with it)
      park_allocation(pointer, device, stream);
    return;
  }
}

} // namespace detail

/// Frees, stream-ordered on `s`, the allocations of `device_buffer`s that
/// were destroyed while `s` was being captured (see `device_buffer`). Call it
/// before destroying a stream of your own (a `gpu::stream` does this itself)
/// or to return the memory early. Does not block.
/// @throws invalid_argument("stream") for the legacy default stream or while
///         `s` is capturing; gpu_error if the capture state cannot be read.
inline void flush_deferred_frees(stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  detail::capture_state capture;
  RESPROJ_CUDA_TRY(detail::query_capture(s.get(), capture));
  if (capture.status != cudaStreamCaptureStatusNone)
    throw invalid_argument("stream", "is being captured; flush deferred frees "
                                     "after the capture has ended");
  detail::drain_deferred_frees(s.get());
}

} // namespace gpu
RESPROJ_NAMESPACE_END
