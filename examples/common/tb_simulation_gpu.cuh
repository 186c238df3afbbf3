/// @file
/// @brief The `tb-lm-osem` acquisition (tb_simulation.hpp) drawn on the GPU
/// and written to a list-mode file chunk by chunk: device memory holds one
/// chunk of records, the host two pinned chunks, so that the file is
/// written while the next chunk is drawn. The events are those of the
/// CPU's `tb_draw_events` (but for a decision that the device's math
/// functions, last bits apart from the host's, could take the other way:
/// about one in 1e13). Needs nvcc.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <string>

#include <cuda_runtime_api.h>

#include "resproj/core/listmode_event.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/listmode_file.hpp"
#include "tb_simulation.hpp"

namespace resproj_examples {

/// Events `[first, first + n)` of `m` (device detector table) into `out`;
/// the counts summed into `counts[0..2]`. `Block` threads per block.
template <int Block>
__global__ void __launch_bounds__(Block)
    tb_draw_kernel(tb_acquisition m, std::uint64_t first, std::uint64_t n,
                   resproj::listmode_event *out, unsigned long long *counts) {
  tb_draw_counts c;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = tb_draw_event(m, first + i, c);
  atomicAdd(counts, (unsigned long long)c.pair_draws);
  atomicAdd(counts + 1, (unsigned long long)c.lor_draws);
  atomicAdd(counts + 2, (unsigned long long)c.randoms);
}

/// Draws events `[0, count)` of `m` (its detector table in device memory)
/// on the GPU and writes them to the list-mode file `path` (replaced), at
/// most `chunk` events at a time. Blocks the host until the file is
/// written. Returns the draw counts.
/// @throws resproj::invalid_argument ("chunk") if 0; io_error from the
///         writes; gpu_error on runtime failures.
inline tb_draw_counts tb_simulate_to_file(const tb_acquisition &m, std::uint64_t count,
                                          const std::string &path, std::uint64_t chunk,
                                          resproj::gpu::stream_ref s) {
  namespace gpu = resproj::gpu;
  using resproj::listmode_event;
  if (chunk == 0)
    resproj::detail::throw_invalid("chunk", "must be >= 1");
  chunk = std::min(chunk, std::max<std::uint64_t>(count, 1));
  std::filesystem::remove(path);
  resproj::io::append_listmode_events(path, resproj::span<const listmode_event>());
  gpu::device_buffer<listmode_event> records(chunk, s);
  gpu::device_buffer<unsigned long long> counts(3, s);
  RESPROJ_CUDA_TRY(
      cudaMemsetAsync(counts.data(), 0, 3 * sizeof(unsigned long long), s.get()));
  gpu::pinned_buffer<listmode_event> host[2] = {
      gpu::pinned_buffer<listmode_event>(chunk),
      gpu::pinned_buffer<listmode_event>(chunk)};
  std::future<void> writing;
  int device = 0;
  RESPROJ_CUDA_TRY(cudaGetDevice(&device));
  int sms = 0;
  RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  for (std::uint64_t first = 0, k = 0; first < count; first += chunk, ++k) {
    const std::uint64_t n = std::min(chunk, count - first);
    const std::size_t blocks =
        std::size_t(std::min<std::uint64_t>((n + 255) / 256, std::uint64_t(sms) * 64));
    gpu::detail::launch(tb_draw_kernel<256>, blocks, 256, s, "tb_draw_kernel", m, first,
                        n, records.data(), counts.data());
    listmode_event *h = host[k % 2].data();
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(h, records.data(), n * sizeof(listmode_event),
                                     cudaMemcpyDeviceToHost, s.get()));
    s.synchronize();
    if (writing.valid())
      writing.get(); // the previous chunk, from the other pinned buffer
    writing = std::async(std::launch::async, [&path, h, n] {
      resproj::io::append_listmode_events(path,
                                          resproj::span<const listmode_event>(h, n));
    });
  }
  if (writing.valid())
    writing.get();
  unsigned long long c[3];
  RESPROJ_CUDA_TRY(
      cudaMemcpyAsync(c, counts.data(), sizeof(c), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  tb_draw_counts r;
  r.pair_draws = c[0];
  r.lor_draws = c[1];
  r.randoms = c[2];
  return r;
}

} // namespace resproj_examples
