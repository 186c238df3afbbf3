/// @file
/// @brief Devices: count, current device, `device_guard`, and pointer
/// queries (`query_pointer`, `require_device_pointer`).
#pragma once

#include <cuda_runtime_api.h>

#include <new> // std::nothrow_t
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/error.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

namespace detail {

/// RAII: switches the calling thread's stream-capture interaction mode to
/// `cudaStreamCaptureModeRelaxed` for its scope, so that a call the runtime
/// classes as "potentially unsafe" while a global-mode capture is active
/// neither fails nor invalidates that capture (on this or another thread).
/// Observed with CUDA 13.0: without it, `cudaMallocAsync` and
/// `cudaFreeAsync` on a stream that is *not* capturing, `cudaMemPoolGetAttribute`,
/// `cudaMemPoolSetAttribute`, `cudaHostAlloc`, `cudaFreeHost` and
/// `cudaEventQuery` all fail with cudaErrorStreamCaptureUnsupported and
/// invalidate the capture. Use only around calls that queue nothing on a
/// capturing stream. Never throws.
class relaxed_capture_scope {
public:
  relaxed_capture_scope() noexcept
      : ok_(cudaThreadExchangeStreamCaptureMode(&mode_) == cudaSuccess) {
    if (!ok_)
      (void)cudaGetLastError();
  }
  ~relaxed_capture_scope() noexcept {
    if (ok_)
      RESPROJ_CUDA_TRY_NOTHROW(cudaThreadExchangeStreamCaptureMode(&mode_));
  }
  relaxed_capture_scope(const relaxed_capture_scope &) = delete;
  relaxed_capture_scope &operator=(const relaxed_capture_scope &) = delete;

private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool ok_;
};

} // namespace detail

/// Number of CUDA devices visible to the process; 0 when there is no driver,
/// the driver is too old, or no device is present (the runtime's error is
/// cleared, so it does not linger as a stale error). Does not block.
inline int device_count() noexcept {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    detail::discard_error(err);
    return 0;
  }
  return count;
}

/// The calling host thread's current device (`cudaGetDevice`). Does not block.
/// @throws gpu_error if the runtime cannot be initialised (no driver/device).
inline int current_device() {
  int device = 0;
  RESPROJ_CUDA_TRY(cudaGetDevice(&device));
  return device;
}

/// RAII: makes `device` the calling thread's current device for the guard's
/// scope and restores the previous one on destruction. Calls `cudaSetDevice`
/// only when the device actually changes. Does not block.
///
/// Thread safety: the current device is per host thread, so a guard acts on
/// the thread that constructed it and must be destroyed on that thread (which
/// scoped use guarantees). Not copyable or movable.
class device_guard {
public:
  /// @param device  device to make current for this scope.
  /// @throws gpu_error if the current device cannot be read or set.
  explicit device_guard(int device) {
    RESPROJ_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) {
      RESPROJ_CUDA_TRY(cudaSetDevice(device));
      switched_ = true;
    }
  }

  /// No-throw form for destructors: on failure nothing changes, the error is
  /// cleared, and `ok()` is false.
  device_guard(int device, std::nothrow_t) noexcept {
    cudaError_t err = cudaGetDevice(&previous_);
    if (err == cudaSuccess && previous_ != device) {
      err = cudaSetDevice(device);
      switched_ = (err == cudaSuccess);
    }
    ok_ = (err == cudaSuccess);
    detail::discard_error(err);
  }

  /// Restores the previous device; errors are swallowed (and cleared).
  ~device_guard() noexcept {
    if (switched_)
      RESPROJ_CUDA_TRY_NOTHROW(cudaSetDevice(previous_));
  }

  device_guard(const device_guard &) = delete;
  device_guard &operator=(const device_guard &) = delete;

  /// `false` only when the no-throw constructor failed to select the device.
  bool ok() const noexcept { return ok_; }

private:
  int previous_ = 0;
  bool switched_ = false;
  bool ok_ = true;
};

/// What the runtime knows about an address (`cudaPointerGetAttributes`).
struct pointer_info {
  /// Device memory or managed memory: usable by kernels. `false` for
  /// pageable host memory and for page-locked (pinned) host memory.
  bool device_accessible = false;
  /// Device that owns the allocation (for pinned host memory: the device
  /// current when it was allocated or registered); -1 for unregistered host
  /// memory and for null.
  int device = -1;
  /// Managed (unified) memory, `cudaMallocManaged`.
  bool managed = false;
  /// Page-locked host memory (`cudaMallocHost`, `cudaHostAlloc`,
  /// `cudaHostRegister`).
  bool pinned_host = false;
};

/// Classifies `pointer`. Null and unregistered host pointers give
/// `device_accessible == false, device == -1`. Leaves no stale error (the
/// "not a CUDA pointer" answer of old runtimes, cudaErrorInvalidValue, is
/// cleared and reported as host memory). Does not block.
/// @throws gpu_error if the runtime cannot be initialised or the query fails
///         otherwise.
inline pointer_info query_pointer(const void *pointer) {
  pointer_info info;
  if (pointer == nullptr)
    return info;
  cudaPointerAttributes attributes{};
  const cudaError_t err = cudaPointerGetAttributes(&attributes, pointer);
  if (err == cudaErrorInvalidValue) { // runtimes before CUDA 11: host memory
    detail::discard_error(err);
    return info;
  }
  if (err != cudaSuccess)
    detail::throw_cuda_error(err, "cudaPointerGetAttributes(&attributes, pointer)",
                             __FILE__, __LINE__);
  switch (attributes.type) {
  case cudaMemoryTypeDevice:
    info.device_accessible = true;
    info.device = attributes.device;
    break;
  case cudaMemoryTypeManaged:
    info.device_accessible = true;
    info.managed = true;
    info.device = attributes.device;
    break;
  case cudaMemoryTypeHost:
    info.pinned_host = true;
    info.device = attributes.device;
    break;
  default: // cudaMemoryTypeUnregistered
    break;
  }
  return info;
}

/// Checks that `pointer` is device memory on `device`, or managed memory
/// (accepted for any device). A null pointer is not checked (the caller
/// decides whether null is allowed). Does not block.
/// @param pointer   address to check
/// @param device    device the memory must live on
/// @param argument  name used in the exception (e.g. "image.data")
/// @throws invalid_argument(argument, "... host memory, not device memory ...")
///         or invalid_argument(argument, "... on device X, expected device Y");
///         gpu_error if the query itself fails.
inline void require_device_pointer(const void *pointer, int device,
                                   const char *argument) {
  if (pointer == nullptr)
    return;
  const pointer_info info = query_pointer(pointer);
  if (!info.device_accessible)
    throw invalid_argument(
        argument, std::string("points to ") +
                      (info.pinned_host ? "pinned (page-locked) " : "pageable ") +
                      "host memory, not device memory; copy it to the device "
                      "first (e.g. into a gpu::device_buffer)");
  if (info.managed)
    return;
  if (info.device != device)
    throw invalid_argument(argument, "points to memory on device " +
                                         std::to_string(info.device) +
                                         ", expected device " + std::to_string(device));
}

} // namespace gpu
RESPROJ_NAMESPACE_END
