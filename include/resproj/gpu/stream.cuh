/// @file
/// @brief Streams: `stream_ref` (non-owning, what every call takes) and
/// `stream` (owning, non-blocking).
///
/// resproj never uses the legacy default stream: compute calls reject a null
/// or `cudaStreamLegacy` handle (`detail::require_explicit_stream`).
/// `cudaStreamPerThread` is accepted.
#pragma once

#include <cuda_runtime_api.h>

// CCCL interop. <cuda/stream_ref> exists from CCCL 2.2; CCCL 3.1 moved its
// contents to <cuda/stream> and deprecated the old header. Both spell the
// conversions we use the same way (constructor from cudaStream_t, `get()`),
// so this include is the only place that depends on the CCCL version.
#if defined(__has_include)
#if __has_include(<cuda/stream>)
#include <cuda/stream>
#else
#include <cuda/stream_ref>
#endif
#else
#include <cuda/stream_ref>
#endif

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/memory_pool.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Non-owning handle of a CUDA stream: a `cudaStream_t`, trivially copyable,
/// passed by value. Converts implicitly from `cudaStream_t`,
/// `cuda::stream_ref` and `gpu::stream`; construction from the literals `0`
/// and `nullptr` does not compile (write `cudaStreamPerThread`, or a stream
/// of your own). Converts back with `get()` (explicit on purpose) or
/// `to_cccl()`. The caller keeps the referenced stream alive.
///
/// Thread safety: a value type; the referenced CUDA stream may be used from
/// several host threads as CUDA allows.
class stream_ref {
public:
  /// Null handle (the legacy default stream): rejected by compute calls.
  constexpr stream_ref() noexcept = default;
  /// Wraps `handle` (not checked here; compute calls reject the legacy
  /// default stream).
  constexpr stream_ref(cudaStream_t handle) noexcept : handle_(handle) {}
  /// From CCCL's non-owning stream.
  stream_ref(::cuda::stream_ref cccl) noexcept : handle_(cccl.get()) {}
  stream_ref(int) = delete;
  stream_ref(std::nullptr_t) = delete;

  /// The wrapped handle.
  constexpr cudaStream_t get() const noexcept { return handle_; }
  /// As CCCL's `cuda::stream_ref`.
  ::cuda::stream_ref to_cccl() const noexcept { return ::cuda::stream_ref(handle_); }

  /// `true` for the null handle and `cudaStreamLegacy`: the legacy default
  /// stream, which resproj refuses (it serialises with every blocking stream).
  bool is_legacy_default() const noexcept {
    return handle_ == nullptr || handle_ == cudaStreamLegacy;
  }

  /// Blocks the host until all work queued on the stream has finished.
  /// @throws gpu_error (or a subtype) reporting errors of that work.
  void synchronize() const { RESPROJ_CUDA_TRY(cudaStreamSynchronize(handle_)); }

  /// `true` once all work queued on the stream has finished
  /// (`cudaStreamQuery`). Does not block.
  /// @throws gpu_error on failure (not for "still running").
  bool query() const {
    const cudaError_t err = cudaStreamQuery(handle_);
    if (err == cudaErrorNotReady)
      return false;
    RESPROJ_CUDA_TRY(err);
    return true;
  }

  /// `true` while the stream is being captured into a graph (also when that
  /// capture has been invalidated but not yet ended). Legal during capture;
  /// does not block.
  /// @throws gpu_error on failure.
  bool is_capturing() const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    RESPROJ_CUDA_TRY(cudaStreamIsCapturing(handle_, &status));
    return status != cudaStreamCaptureStatusNone;
  }

  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept {
    return a.handle_ == b.handle_;
  }
  friend constexpr bool operator!=(stream_ref a, stream_ref b) noexcept {
    return a.handle_ != b.handle_;
  }

private:
  cudaStream_t handle_ = nullptr;
};

static_assert(std::is_trivially_copyable_v<stream_ref>);

namespace detail {

/// Rejects the legacy default stream (null or `cudaStreamLegacy`).
/// Never calls the runtime.
/// @throws invalid_argument(argument, ...).
inline void require_explicit_stream(stream_ref stream, const char *argument) {
  if (stream.is_legacy_default())
    throw invalid_argument(argument,
                           "is the legacy default stream (null or cudaStreamLegacy); "
                           "pass an explicit stream (a gpu::stream, your own "
                           "cudaStream_t, or cudaStreamPerThread)");
}

/// Capture state of a stream: `cudaStreamGetCaptureInfo`, which is legal
/// while the stream is capturing. `id` identifies the capture sequence
/// (unique over the process lifetime; 0 when not capturing).
struct capture_state {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
};

/// Queries `stream`'s capture state without throwing; returns the runtime's
/// code (the caller decides what a failure means).
inline cudaError_t query_capture(cudaStream_t stream, capture_state &out) noexcept {
  out = capture_state{};
  const cudaError_t err = cudaStreamGetCaptureInfo(stream, &out.status, &out.id);
  if (err != cudaSuccess)
    out = capture_state{};
  return err;
}

} // namespace detail

/// Scheduling priority of a `stream` (normal: the lowest, that of streams
/// created without one).
enum class stream_priority { normal, high };

/// Owning CUDA stream, created non-blocking (`cudaStreamNonBlocking`: no
/// implicit synchronisation with the legacy default stream) on a device it
/// remembers. Move-only; a moved-from stream holds no handle (its `ref()` is
/// the null handle, which compute calls reject).
///
/// Destruction (`cudaStreamDestroy`, on the stream's device) does not block:
/// queued work still completes. Before destroying, it frees the allocations
/// of `device_buffer`s that were destroyed while this stream was capturing
/// (see `device_buffer`). Destroying a stream while it is being captured is
/// an error of the caller (the capture could never be ended); the destructor
/// then swallows the runtime's error.
///
/// Thread safety: distinct objects are independent. One object may be used
/// from several threads for const operations (queueing work, synchronize);
/// moving, assigning and destroying need exclusive access.
class stream {
public:
  /// Creates a non-blocking stream on the calling thread's current device.
  /// Does not block.
  /// @throws gpu_error on failure.
  stream() : stream(current_device()) {}

  /// Creates a non-blocking stream on `device` (the current device is left
  /// unchanged). Does not block.
  /// @throws gpu_error on failure (e.g. invalid device).
  explicit stream(int device) : device_(device) {
    device_guard guard(device);
    RESPROJ_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }

  /// Creates a non-blocking stream on `device` with scheduling priority
  /// `p`: the blocks of a `stream_priority::high` stream's kernels are
  /// started before those of normal streams whenever both wait for a
  /// multiprocessor. Does not block.
  /// @throws gpu_error on failure.
  stream(int device, stream_priority p) : device_(device) {
    device_guard guard(device);
    int least = 0, greatest = 0;
    RESPROJ_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    RESPROJ_CUDA_TRY(cudaStreamCreateWithPriority(
        &handle_, cudaStreamNonBlocking, p == stream_priority::high ? greatest : least));
  }

  ~stream() noexcept { destroy(); }

  stream(const stream &) = delete;
  stream &operator=(const stream &) = delete;

  stream(stream &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        device_(std::exchange(other.device_, -1)) {}

  /// Destroys the stream held (as the destructor does), then takes `other`'s.
  stream &operator=(stream &&other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, nullptr);
      device_ = std::exchange(other.device_, -1);
    }
    return *this;
  }

  /// Non-owning handle.
  stream_ref ref() const noexcept { return stream_ref(handle_); }
  /// Non-owning handle (implicit, so a `stream` goes wherever a
  /// `stream_ref` is taken).
  operator stream_ref() const noexcept { return ref(); }
  /// The raw handle (null after a move).
  cudaStream_t get() const noexcept { return handle_; }
  /// Device the stream was created on (-1 after a move).
  int device() const noexcept { return device_; }

  /// Blocks the host until all queued work has finished.
  /// @throws gpu_error (or a subtype) reporting errors of that work.
  void synchronize() const { ref().synchronize(); }
  /// `true` once all queued work has finished. Does not block.
  /// @throws gpu_error on failure.
  bool query() const { return ref().query(); }
  /// `true` while the stream is being captured. Does not block.
  /// @throws gpu_error on failure.
  bool is_capturing() const { return ref().is_capturing(); }

private:
  void destroy() noexcept {
    if (handle_ == nullptr)
      return;
    device_guard guard(device_, std::nothrow);
    detail::capture_state capture;
    if (detail::discard_error(detail::query_capture(handle_, capture)) == cudaSuccess &&
        capture.status == cudaStreamCaptureStatusNone)
      detail::drain_deferred_frees(handle_);
    RESPROJ_CUDA_TRY_NOTHROW(cudaStreamDestroy(handle_));
    handle_ = nullptr;
    device_ = -1;
  }

  cudaStream_t handle_ = nullptr;
  int device_ = -1;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
