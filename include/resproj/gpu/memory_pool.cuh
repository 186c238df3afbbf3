/// @file
/// @brief The stream-ordered memory pool that `device_buffer` allocates from:
/// release threshold, usage statistics, and the list of frees deferred
/// because their stream was being captured into a graph.
///
/// `device_buffer` allocates with `cudaMallocAsync`, i.e. from the device's
/// *current* memory pool (`cudaDeviceGetMemPool`; the default pool unless the
/// application called `cudaDeviceSetMemPool`). By default CUDA returns a
/// pool's unused memory to the driver at every synchronisation (release
/// threshold 0), which makes the next allocation slow again. Before the first
/// `device_buffer` allocation on a device, resproj raises that threshold to
/// "never" (`UINT64_MAX`) unless someone already set a non-zero threshold.
/// Call `configure_memory_pool` to choose another value.
///
/// At the same time resproj turns off the pool's reuse with internal
/// dependencies (`cudaMemPoolReuseAllowInternalDependencies`): with it, an
/// allocation on one stream may take memory freed on another stream whose
/// work has not finished, and then waits for all of that work. Overlapped
/// work on two streams (events read and prepared while a sensitivity image
/// is computed) would then run one after the other. Reuse after a
/// completed free, or after the streams are joined, stays on.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

namespace detail {

/// The pool `cudaMallocAsync` uses on `device`.
inline cudaMemPool_t current_pool(int device) {
  if (device < 0)
    throw invalid_argument("device", "must be >= 0 (got " + std::to_string(device) + ")");
  cudaMemPool_t pool = nullptr;
  RESPROJ_CUDA_TRY(cudaDeviceGetMemPool(&pool, device));
  return pool;
}

/// Which devices have had their pool configured (by us or by the user).
/// Immortal (never destroyed), so buffers destroyed during static
/// destruction can still use it.
struct pool_registry {
  std::mutex mutex;
  std::vector<bool> configured;       // guarded by mutex
  std::atomic<std::uint64_t> fast{0}; // bit d set: device d < 64 configured
};

inline pool_registry &pools() noexcept {
  // Constructed in static storage and never destroyed (cannot fail).
  alignas(pool_registry) static unsigned char storage[sizeof(pool_registry)];
  static pool_registry *const registry =
      ::new (static_cast<void *>(storage)) pool_registry();
  return *registry;
}

inline void mark_configured(pool_registry &registry, int device) {
  // caller holds registry.mutex
  if (registry.configured.size() <= static_cast<std::size_t>(device))
    registry.configured.resize(static_cast<std::size_t>(device) + 1, false);
  registry.configured[static_cast<std::size_t>(device)] = true;
  if (device < 64)
    registry.fast.fetch_or(std::uint64_t(1) << device, std::memory_order_release);
}

/// Turns off `cudaMemPoolReuseAllowInternalDependencies` (file comment).
/// The caller holds a relaxed capture scope.
inline void no_cross_stream_waits(cudaMemPool_t pool) {
  int off = 0;
  RESPROJ_CUDA_TRY(
      cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
}

inline std::uint64_t pool_attribute(int device, cudaMemPoolAttr attribute) {
  const cudaMemPool_t pool = current_pool(device);
  relaxed_capture_scope relaxed; // pool queries are "unsafe" during capture
  std::uint64_t value = 0;       // the byte-count attributes are cuuint64_t
  RESPROJ_CUDA_TRY(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

} // namespace detail

/// Sets the release threshold of `device`'s current memory pool: the pool
/// keeps up to `release_threshold` bytes of freed memory reserved across
/// synchronisations instead of returning it to the driver. The default keeps
/// everything (fastest re-allocation; use `cudaMemPoolTrimTo` or a smaller
/// threshold to give memory back). Affects every user of that pool in the
/// process. Thread-safe; does not block.
/// @param device             device whose pool to configure
/// @param release_threshold  bytes to keep reserved (`UINT64_MAX`: all)
/// @throws invalid_argument("device") if negative; gpu_error on runtime
///         failure (invalid device, pools unsupported).
inline void configure_memory_pool(int device,
                                  std::uint64_t release_threshold = UINT64_MAX) {
  const cudaMemPool_t pool = detail::current_pool(device);
  std::uint64_t value = release_threshold;
  {
    detail::relaxed_capture_scope relaxed;
    RESPROJ_CUDA_TRY(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value));
    detail::no_cross_stream_waits(pool);
  }
  detail::pool_registry &registry = detail::pools();
  std::lock_guard<std::mutex> lock(registry.mutex);
  detail::mark_configured(registry, device);
}

namespace detail {

/// Called by `device_buffer` before allocating on `device`: the first time per
/// device and process, raises the pool's release threshold to `UINT64_MAX`
/// if it is still CUDA's default of 0 (a threshold set earlier by the
/// application or by `configure_memory_pool` is kept). Thread-safe (a mutex,
/// with a lock-free fast path for devices 0..63); does not block.
/// @throws gpu_error when the pool cannot be read or configured (a failed
///         attempt is retried on the next call).
inline void ensure_pool_configured(int device) {
  pool_registry &registry = pools();
  if (device >= 0 && device < 64 &&
      (registry.fast.load(std::memory_order_acquire) >> device) & 1u)
    return;
  std::lock_guard<std::mutex> lock(registry.mutex);
  if (device >= 0 && static_cast<std::size_t>(device) < registry.configured.size() &&
      registry.configured[static_cast<std::size_t>(device)])
    return;
  const cudaMemPool_t pool = current_pool(device);
  relaxed_capture_scope relaxed; // pool attributes are "unsafe" during capture
  std::uint64_t threshold = 0;
  RESPROJ_CUDA_TRY(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  if (threshold == 0) {
    std::uint64_t keep_all = UINT64_MAX;
    RESPROJ_CUDA_TRY(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  }
  no_cross_stream_waits(pool);
  mark_configured(registry, device);
}

} // namespace detail

/// Bytes the current pool of `device` holds from the driver
/// (`cudaMemPoolAttrReservedMemCurrent`): in use plus kept for reuse.
/// Thread-safe; does not block; may be called while a capture is active.
/// @throws invalid_argument("device") if negative; gpu_error on failure.
inline std::uint64_t pool_reserved_bytes(int device) {
  return detail::pool_attribute(device, cudaMemPoolAttrReservedMemCurrent);
}

/// Bytes of the current pool of `device` allocated and not yet freed
/// (`cudaMemPoolAttrUsedMemCurrent`). A stream-ordered free counts as done
/// once the stream has executed it, so synchronise first when comparing.
/// Thread-safe; does not block; may be called while a capture is active.
/// @throws invalid_argument("device") if negative; gpu_error on failure.
inline std::uint64_t pool_used_bytes(int device) {
  return detail::pool_attribute(device, cudaMemPoolAttrUsedMemCurrent);
}

/// The largest number of bytes of the current pool of `device` that were
/// allocated at once since the pool was made or since the last
/// `reset_pool_peak` (`cudaMemPoolAttrUsedMemHigh`): the peak device memory
/// of everything the library (and any other `cudaMallocAsync` user of that
/// pool) allocated. Thread-safe; does not block.
/// @throws invalid_argument("device") if negative; gpu_error on failure.
inline std::uint64_t pool_peak_used_bytes(int device) {
  return detail::pool_attribute(device, cudaMemPoolAttrUsedMemHigh);
}

/// Restarts `pool_peak_used_bytes` of `device` from the bytes in use now.
/// Thread-safe; does not block.
/// @throws invalid_argument("device") if negative; gpu_error on failure.
inline void reset_pool_peak(int device) {
  const cudaMemPool_t pool = detail::current_pool(device);
  detail::relaxed_capture_scope relaxed;
  std::uint64_t zero = 0;
  RESPROJ_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
}

// ---------------------------------------------------------------------------
// Deferred frees (see device_buffer's class comment for the semantics).
// ---------------------------------------------------------------------------
namespace detail {

/// An allocation whose owner was destroyed while its stream was capturing.
struct parked_allocation {
  void *pointer;
  int device;
  cudaStream_t stream;
};

/// Immortal, mutex-guarded list of parked allocations, with an atomic count
/// so that the common "nothing parked" check takes no lock.
struct deferred_free_registry {
  std::mutex mutex;
  std::vector<parked_allocation> entries; // guarded by mutex
  std::atomic<std::size_t> count{0};
};

inline deferred_free_registry &deferred_frees() noexcept {
  // Constructed in static storage and never destroyed (cannot fail), so
  // buffers destroyed during static destruction can still use it.
  alignas(deferred_free_registry) static unsigned char
      storage[sizeof(deferred_free_registry)];
  static deferred_free_registry *const registry =
      ::new (static_cast<void *>(storage)) deferred_free_registry();
  return *registry;
}

/// Parks `pointer` (an allocation made on `stream` on `device`) until
/// `drain_deferred_frees(stream)` runs with `stream` not capturing.
/// Never throws: if the list cannot grow, the allocation is leaked.
inline void park_allocation(void *pointer, int device, cudaStream_t stream) noexcept {
  deferred_free_registry &registry = deferred_frees();
  try {
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.entries.push_back(parked_allocation{pointer, device, stream});
    registry.count.store(registry.entries.size(), std::memory_order_release);
  } catch (...) {
    // out of host memory (or a mutex failure): leak the device allocation
  }
}

/// Frees, stream-ordered on `stream`, every allocation parked for `stream`.
/// The caller guarantees that `stream` is not capturing (other streams may
/// be: the frees are made in relaxed capture mode). Errors are swallowed
/// (and cleared). Never throws, never blocks (the lock is held only to take
/// the entries out).
inline void drain_deferred_frees(cudaStream_t stream) noexcept {
  deferred_free_registry &registry = deferred_frees();
  if (registry.count.load(std::memory_order_acquire) == 0)
    return;
  std::vector<parked_allocation> mine;
  try {
    std::lock_guard<std::mutex> lock(registry.mutex);
    std::vector<parked_allocation> others;
    for (const parked_allocation &entry : registry.entries)
      (entry.stream == stream ? mine : others).push_back(entry);
    registry.entries.swap(others);
    registry.count.store(registry.entries.size(), std::memory_order_release);
  } catch (...) {
    return; // out of host memory: try again next time
  }
  relaxed_capture_scope relaxed; // another stream may be capturing
  for (const parked_allocation &entry : mine) {
    device_guard guard(entry.device, std::nothrow);
    RESPROJ_CUDA_TRY_NOTHROW(cudaFreeAsync(entry.pointer, stream));
  }
}

} // namespace detail

/// Number of device allocations currently parked because their owner was
/// destroyed while its stream was being captured into a graph (see
/// `device_buffer`). For tests and diagnostics. Thread-safe; never throws.
inline std::size_t deferred_free_count() noexcept {
  return detail::deferred_frees().count.load(std::memory_order_acquire);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
