// GPU helpers of the binding beyond projection calls (gpu_run.cpp), declared
// without CUDA types; defined only when the binding is built with the GPU
// backend.
#pragma once

#include <cstdint>
#include <functional>

namespace resproj_py {

/// Number of usable CUDA devices (0 without a device or driver).
int cuda_device_count();

/// Blocks until the work queued on `stream` of `device` is done (for the
/// legacy default stream, 0, also the work bridged from it).
void synchronize(int device, std::uintptr_t stream);

/// Calls `f(handle)` with `device` current and the stream to run on: the
/// caller's `stream`, or for the legacy default stream (0) the binding's
/// own stream of that device, ordered after the work queued before on the
/// legacy stream and before the work queued after (without blocking).
void on_caller_stream(int device, std::uintptr_t stream,
                      const std::function<void(std::uintptr_t)> &f);

} // namespace resproj_py
