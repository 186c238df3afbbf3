/// @file
/// @brief The shared `main` of the GPU benchmark programs: default flags,
/// a clean skip without a CUDA device (exit 0, so CI machines pass), the GPU
/// name in the JSON context, failure counting and an orderly release of
/// device memory before the CUDA runtime shuts down. Needs nvcc.
#pragma once

#include <cstdio>
#include <utility>

#include <cuda_runtime_api.h>

#include "common/bench_support.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"

namespace resproj_bench {

/// Use as `int main(int argc, char **argv) { return gpu_main(argc, argv,
/// "bench_x", register_all, release_problems); }`. `release` frees the
/// program's static device data (called even after a failure).
template <class Register, class Release>
int gpu_main(int argc, char **argv, const char *program, Register &&register_all,
             Release &&release) {
  namespace gpu = resproj::gpu;
  const bool list_only = lists_only(argc, argv);
  if (!initialize_with_defaults(argc, argv))
    return 1;
  const int devices = gpu::device_count();
  if (devices == 0 && !list_only) {
    std::printf("no CUDA device: GPU benchmarks skipped\n");
    return 0;
  }
  if (devices > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, gpu::current_device()) == cudaSuccess)
      benchmark::AddCustomContext("gpu", prop.name);
  }
  return run_registered(program, std::forward<Register>(register_all),
                        std::forward<Release>(release));
}

} // namespace resproj_bench
