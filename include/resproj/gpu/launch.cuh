/// @file
/// @brief Kernel launch helpers: launch options (thread-to-LOR mapping),
/// the automatic choice of threads per LOR, and a launch that checks its
/// own return code.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// How a projection call maps GPU threads to LORs.
struct launch_options {
  /// Threads that share one LOR, each walking every n-th plane: 1, 2, 4, 8,
  /// 16 or 32. 0 (default) lets the library choose: one thread per LOR when
  /// the chunk fills the GPU, more (up to a warp) when it does not.
  int threads_per_lor = 0;
  /// Threads per block (a multiple of 32, at most 256).
  int block_size = 256;
  /// When > 1 and it divides the chunk's LOR count, the chunk is read as a
  /// [rows][count / rows] array (e.g. a sinogram in [plane][view][radial]
  /// order with rows = planes) and neighbouring threads take neighbouring
  /// rows, so a warp's samples stay close in memory (axis 2 is contiguous).
  /// Results are identical; only speed changes. 0 or 1: memory order.
  std::size_t rows = 0;
  /// Check before launching that every pointer is device (or managed)
  /// memory on the image's device (a `cudaPointerGetAttributes` per
  /// pointer, about a microsecond of host time each). Turn off only in hot
  /// loops whose pointers were checked once; sizes are always checked.
  bool check_pointers = true;
  /// Force 64-bit voxel index arithmetic. By default 32-bit indices are
  /// used whenever every voxel offset fits (faster on the GPU) and 64-bit
  /// ones otherwise; this switch exists to test the 64-bit path.
  bool wide_index = false;
};

namespace detail {

/// Multiprocessor count of `device`, cached (the attribute cannot change).
inline int multiprocessor_count(int device) {
  constexpr int max_cached = 64;
  static std::atomic<int> cache[max_cached] = {};
  if (device >= 0 && device < max_cached) {
    const int cached = cache[device].load(std::memory_order_relaxed);
    if (cached > 0)
      return cached;
  }
  int sms = 0;
  RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < max_cached)
    cache[device].store(sms, std::memory_order_relaxed);
  return sms;
}

/// Threads per LOR for `count` LORs on `device` (see launch_options).
/// @throws invalid_argument for an unsupported explicit choice.
inline int threads_per_lor(const launch_options &opt, std::size_t count, int device) {
  if (opt.block_size <= 0 || opt.block_size > 256 || opt.block_size % 32 != 0)
    resproj::detail::throw_invalid("options.block_size",
                                   "must be a multiple of 32 in [32, 256] (got " +
                                       std::to_string(opt.block_size) + ")");
  const int g = opt.threads_per_lor;
  if (g != 0) {
    if (g != 1 && g != 2 && g != 4 && g != 8 && g != 16 && g != 32)
      resproj::detail::throw_invalid("options.threads_per_lor",
                                     "must be 0, 1, 2, 4, 8, 16 or 32 (got " +
                                         std::to_string(g) + ")");
    return g;
  }
  // Measured on an H200 (benchmarks/NOTES.md): without a row order, two to
  // four lanes per LOR beat one even when the chunk fills the GPU (shorter,
  // less divergent walks); with lanes along rows, one thread per LOR is
  // best. Small chunks get more lanes until about 512 threads per
  // multiprocessor are busy (1e3 LORs: 32, 1e4: 8).
  const std::size_t wanted = std::size_t(multiprocessor_count(device)) * 512;
  int chosen = opt.rows > 1 ? 1 : 4;
  while (chosen < 32 && count * std::size_t(chosen) < wanted)
    chosen *= 2;
  return chosen;
}

/// The LOR order of a chunk of `count` LORs under `opt`.
/// @throws invalid_argument if `opt.rows` does not divide `count`.
inline lor_order make_lor_order(const launch_options &opt, std::size_t count) {
  lor_order order;
  if (opt.rows > 1) {
    if (count % opt.rows != 0)
      resproj::detail::throw_invalid(
          "options.rows", std::to_string(opt.rows) + " does not divide the LOR count " +
                              std::to_string(count));
    order.rows = opt.rows;
    order.columns = count / opt.rows;
  }
  return order;
}

/// Launches `kernel<<<blocks, threads, 0, s>>>(args...)` through
/// cudaLaunchKernelEx and throws on its own return code.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), std::size_t blocks, int threads, stream_ref s,
            const char *name, Args &&...args) {
  if (blocks == 0)
    return;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks), 1, 1);
  config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  config.dynamicSmemBytes = 0;
  config.stream = s.get();
  config.attrs = nullptr;
  config.numAttrs = 0;
  const cudaError_t err =
      cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess)
    throw_cuda_error(err, name, __FILE__, __LINE__);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
