// GPU helpers of the binding beyond projection calls (gpu_run.cpp), declared
// without CUDA types; defined only when the binding is built with the GPU
// backend.
#pragma once

#include <cstdint>

namespace resproj_py {

/// Number of usable CUDA devices (0 without a device or driver).
int cuda_device_count();

/// Blocks until the work queued on `stream` of `device` is done (for the
/// legacy default stream, 0, also the work bridged from it).
void synchronize(int device, std::uintptr_t stream);

} // namespace resproj_py
