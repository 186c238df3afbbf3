// The GPU backend of the binding: calls of the compiled GPU library
// (resproj::gpu_compiled) on the caller's stream, with the legacy default
// stream bridged through a stream of our own. Compiled by the host compiler
// only when the binding is built with the GPU backend.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "call.hpp"
#include "dispatch.hpp"
#include "gpu_api.hpp"
#include "gpu_util.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/compiled.hpp"

namespace resproj_py {
namespace {

/// Per device: a non-blocking stream owned by the binding and two events,
/// created once and kept for the life of the process, that order work
/// queued for the legacy default stream (handle 0, which the library
/// rejects) without blocking the host.
struct legacy_bridge {
  cudaStream_t stream = nullptr;
  cudaEvent_t before = nullptr;
  cudaEvent_t after = nullptr;
};

std::mutex bridge_mutex;

legacy_bridge &bridge_of(int device) {
  static std::map<int, legacy_bridge> *bridges = new std::map<int, legacy_bridge>();
  auto it = bridges->find(device);
  if (it != bridges->end())
    return it->second;
  legacy_bridge b;
  check_cuda(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&b.before, cudaEventDisableTiming),
             "cudaEventCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&b.after, cudaEventDisableTiming),
             "cudaEventCreateWithFlags");
  return bridges->emplace(device, b).first->second;
}

bool is_legacy(std::uintptr_t handle) {
  return handle == 0 || reinterpret_cast<cudaStream_t>(handle) == cudaStreamLegacy;
}

/// Runs `f(stream)` on `device` on the caller's stream, or on the bridge
/// stream ordered after and before the legacy default stream; then
/// synchronises if asked.
template <class F> void on_stream(int device, std::uintptr_t stream, bool sync, F &&f) {
  const device_scope scope(device);
  if (!is_legacy(stream)) {
    const auto s = reinterpret_cast<cudaStream_t>(stream);
    f(s);
    if (sync)
      check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return;
  }
  const std::lock_guard<std::mutex> lock(bridge_mutex);
  legacy_bridge &b = bridge_of(device);
  check_cuda(cudaEventRecord(b.before, cudaStreamLegacy), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(b.stream, b.before, 0), "cudaStreamWaitEvent");
  f(b.stream);
  check_cuda(cudaEventRecord(b.after, b.stream), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(cudaStreamLegacy, b.after, 0), "cudaStreamWaitEvent");
  if (sync)
    check_cuda(cudaStreamSynchronize(b.stream), "cudaStreamSynchronize");
}
template <class F> void on_stream(const call &c, F &&f) {
  on_stream(c.device, c.stream, c.sync, std::forward<F>(f));
}

template <class T> void run_gpu(const call &c) {
  namespace gc = rp::gpu::compiled;
  with_operation<T>(c, [&](const auto &op) {
    with_lors<T>(c, [&](const auto &lors) {
      on_stream(c, [&](cudaStream_t s) {
        if (c.forward) {
          gc::forward(op,
                      rp::gpu::device_image_view<const T>(static_cast<const T *>(c.image),
                                                          c.geometry, c.device),
                      lors, rp::span<T>(static_cast<T *>(c.data), c.data_size), s);
        } else {
          const rp::gpu::device_image_view<T> image(static_cast<T *>(c.image), c.geometry,
                                                    c.device);
          if (c.zero_image)
            check_cuda(cudaMemsetAsync(image.data, 0,
                                       std::size_t(c.geometry.num_voxels()) * sizeof(T),
                                       s),
                       "cudaMemsetAsync");
          gc::back(op, image, lors,
                   rp::span<const T>(static_cast<const T *>(c.data), c.data_size), s);
        }
      });
    });
  });
}

} // namespace

void run_gpu_float(const call &c) { run_gpu<float>(c); }
void run_gpu_double(const call &c) { run_gpu<double>(c); }

int cuda_device_count() { return rp::gpu::compiled::device_count(); }

void on_caller_stream(int device, std::uintptr_t stream,
                      const std::function<void(std::uintptr_t)> &f) {
  on_stream(device, stream, false,
            [&](cudaStream_t s) { f(reinterpret_cast<std::uintptr_t>(s)); });
}

void synchronize(int device, std::uintptr_t stream) {
  const device_scope scope(device);
  if (is_legacy(stream)) {
    // Work of the legacy stream, including the bridge's: the bridge stream
    // first (the legacy stream waits on it anyway).
    const std::lock_guard<std::mutex> lock(bridge_mutex);
    check_cuda(cudaStreamSynchronize(bridge_of(device).stream), "cudaStreamSynchronize");
    check_cuda(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
    return;
  }
  check_cuda(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)),
             "cudaStreamSynchronize");
}

} // namespace resproj_py
