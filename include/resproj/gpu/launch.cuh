/// @file
/// @brief Kernel launch helpers: the device's multiprocessor count (cached)
/// and a launch that checks its own return code.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

namespace detail {

/// Attribute `Attr` of `device`, cached per device (attributes cannot
/// change; a value of 0 is asked again).
template <cudaDeviceAttr Attr> int cached_attribute(int device) {
  constexpr int max_cached = 64;
  static std::atomic<int> cache[max_cached] = {};
  if (device >= 0 && device < max_cached) {
    const int cached = cache[device].load(std::memory_order_relaxed);
    if (cached > 0)
      return cached;
  }
  int value = 0;
  RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(&value, Attr, device));
  if (device >= 0 && device < max_cached)
    cache[device].store(value, std::memory_order_relaxed);
  return value;
}

/// Multiprocessor count of `device`.
inline int multiprocessor_count(int device) {
  return cached_attribute<cudaDevAttrMultiProcessorCount>(device);
}

/// L2 cache size of `device` in bytes.
inline std::size_t l2_cache_bytes(int device) {
  const int bytes = cached_attribute<cudaDevAttrL2CacheSize>(device);
  return std::size_t(bytes > 0 ? bytes : 0);
}

/// Launches `kernel<<<blocks, threads, shared_bytes, s>>>(args...)` through
/// cudaLaunchKernelEx and throws on its own return code. Dynamic shared
/// memory above the default 48 KiB is enabled for the kernel on the
/// current device first.
template <class... Params, class... Args>
void launch_shared(void (*kernel)(Params...), std::size_t blocks, int threads,
                   std::size_t shared_bytes, stream_ref s, const char *name,
                   Args &&...args) {
  if (blocks == 0)
    return;
  if (shared_bytes > 48 * 1024) {
    const cudaError_t err = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes));
    if (err != cudaSuccess)
      throw_cuda_error(err, name, __FILE__, __LINE__);
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks), 1, 1);
  config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = s.get();
  config.attrs = nullptr;
  config.numAttrs = 0;
  const cudaError_t err =
      cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess)
    throw_cuda_error(err, name, __FILE__, __LINE__);
}

/// Launches `kernel<<<blocks, threads, 0, s>>>(args...)` (see
/// `launch_shared`).
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), std::size_t blocks, int threads, stream_ref s,
            const char *name, Args &&...args) {
  launch_shared(kernel, blocks, threads, 0, s, name, std::forward<Args>(args)...);
}
} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
