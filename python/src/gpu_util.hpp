// CUDA runtime helpers shared by the binding's GPU translation units
// (compiled by the host compiler, only with the GPU backend).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "resproj/core/errors.hpp"

namespace resproj_py {

/// Throws resproj::gpu_error for a failed CUDA runtime call.
inline void check_cuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw resproj::gpu_error(std::string("resproj: ") + what + ": " +
                                 cudaGetErrorName(e) + ": " + cudaGetErrorString(e),
                             int(e));
}

/// Makes `device` current for the scope; restores the previous device.
class device_scope {
public:
  explicit device_scope(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device)
      check_cuda(cudaSetDevice(device), "cudaSetDevice");
    changed_ = previous_ != device;
  }
  ~device_scope() {
    if (changed_)
      cudaSetDevice(previous_);
  }
  device_scope(const device_scope &) = delete;
  device_scope &operator=(const device_scope &) = delete;

private:
  int previous_ = 0;
  bool changed_ = false;
};

} // namespace resproj_py
