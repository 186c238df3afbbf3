/// @file
/// @brief The page-cache DMA ("mapped") read path of the device file
/// transfers, `read_path::mapped` (`detail::mapped_reader`).
///
/// The range is split into chunks of `map_chunk_bytes` (see
/// io/file_mapping.hpp); a worker maps each chunk read-only (`mmap`,
/// `MAP_SHARED`), registers it with the driver (`cudaHostRegister(...,
/// cudaHostRegisterReadOnly)`) and copies it straight from the page cache to
/// the device (one copy instead of `pread`'s copy plus the DMA), with up to
/// `map_depth` chunks in flight before it unregisters and unmaps the
/// oldest. If the device or the kernel cannot register a file mapping, the
/// read falls back to the bounce path (`file_io_result::method` says which
/// ran, `map_problem` why). This path returns only after its copies have
/// completed (the mapping goes away). As with any mapped file, another
/// process truncating the file during the read raises SIGBUS; use the
/// bounce path for files that others may shorten.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/file_io_bounce.cuh"
#include "resproj/gpu/file_io_options.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/file_mapping.hpp"
#include "resproj/io/parallel_io_options.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// The mapped chunks of one worker: per slot, the chunk's mapping, whether
/// it is registered, and the end of its copy.
struct mapped_slots {
  std::vector<io::file_mapping> mapped;
  std::vector<char> registered;
  std::vector<event> done;
  unsigned next = 0; ///< slot used next
};

/// The mapped read path of one `device_file_io`: its per-worker slots
/// (kept between calls) and whether its device can register file mappings.
class mapped_reader {
public:
  /// Whether `device` can register read-only host memory; the reason
  /// when not (asked once).
  bool supported(int device, std::string &problem) {
    if (support_ == 0) {
      int host_register = 0, read_only = 0;
      RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(&host_register,
                                              cudaDevAttrHostRegisterSupported, device));
      RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(
          &read_only, cudaDevAttrHostRegisterReadOnlySupported, device));
      support_ = host_register && read_only ? 1 : -1;
    }
    if (support_ < 0)
      problem = "the device does not support read-only host memory registration";
    return support_ > 0;
  }

  /// Page-cache DMA read of `[offset, offset + bytes)` of `path` (open as
  /// `file`) into the device memory `out`, with the copy streams of
  /// `workers` and the threads of `pool` (null: started for the call).
  /// Returns false, with `result.map_problem`, when the path cannot be used
  /// (nothing has been copied then); fills `result` otherwise.
  /// @throws io_error if a chunk cannot be mapped; gpu_error if a copy or an
  ///         unregistration fails.
  bool read(file_io_workers &workers, thread_pool *pool, const std::string &path,
            const io::positional_file &file, std::uint64_t offset, unsigned char *out,
            std::uint64_t bytes, stream_ref stream, const file_io_options &options,
            file_io_result &result) {
    if (!supported(workers.device(), result.map_problem))
      return false;
    const io::mapped_range_plan plan = io::plan_mapped_range(
        offset, bytes, io::host_page_size(), options.map_chunk_bytes);
    {
      // Probe with the first page: registering file mappings may be refused.
      io::mapped_chunk first = plan.chunk(0);
      first.register_bytes = plan.page;
      const io::file_mapping probe_map =
          io::file_mapping::map_chunk(file.fd(), plan, first, result.map_problem);
      if (probe_map.empty())
        return false;
      const cudaError_t probe =
          cudaHostRegister(probe_map.data(), plan.page, cudaHostRegisterReadOnly);
      if (probe != cudaSuccess) {
        discard_error(probe);
        result.map_problem =
            std::string("cudaHostRegister(read-only) of a file mapping failed: ") +
            cudaGetErrorString(probe);
        return false;
      }
      RESPROJ_CUDA_TRY(cudaHostUnregister(probe_map.data()));
    }

    const unsigned want =
        options.threads == 0 ? io::default_io_threads() : options.threads;
    const unsigned n = unsigned(std::min<std::uint64_t>(want, plan.chunks));
    workers.prepare(n, stream, 0, 0);
    if (slots_.size() < n)
      slots_.resize(n);
    for (unsigned w = 0; w < n; ++w) {
      mapped_slots &s = slots_[w];
      // Each list grows on its own (the chunks last), so that a failure
      // part-way, such as an event that cannot be created, leaves none
      // shorter than the chunks: the next call completes them.
      while (s.done.size() < options.map_depth)
        s.done.emplace_back();
      while (s.registered.size() < options.map_depth)
        s.registered.push_back(0);
      while (s.mapped.size() < options.map_depth)
        s.mapped.emplace_back();
      s.next = 0;
    }
    std::vector<char> device_set(n, 0);
    std::atomic<unsigned> unpinned{0};
    auto task = [&](unsigned w, std::uint64_t t, const std::atomic<bool> &) {
      workers.use_device(w, device_set); // pool threads may be on another device
      file_io_worker &k = workers[w];
      mapped_slots &s = slots_[w];
      const unsigned slot = s.next;
      s.next = (slot + 1) % options.map_depth;
      if (!s.mapped[slot].empty()) { // the slot's previous copy must be done
        s.done[slot].synchronize();
        if (s.registered[slot]) {
          s.registered[slot] = 0;
          RESPROJ_CUDA_TRY(cudaHostUnregister(s.mapped[slot].data()));
        }
        s.mapped[slot] = io::file_mapping(); // unmapped here, in parallel
      }
      // Each chunk has its own mapping, so that mapping and unmapping (page
      // table set-up and tear-down) are spread over the workers.
      const io::mapped_chunk c = plan.chunk(t);
      std::string problem;
      s.mapped[slot] = io::file_mapping::map_chunk(file.fd(), plan, c, problem);
      if (s.mapped[slot].empty())
        throw io_error("resproj: " + path + ": " + problem + " at offset " +
                       std::to_string(plan.map_offset + c.map_begin));
      unsigned char *base = s.mapped[slot].data();
      const cudaError_t reg =
          cudaHostRegister(base, c.register_bytes, cudaHostRegisterReadOnly);
      if (reg == cudaSuccess) {
        s.registered[slot] = 1;
      } else { // copied as pageable memory (staged by the driver): still correct
        discard_error(reg);
        unpinned.fetch_add(1, std::memory_order_relaxed);
      }
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(out + c.dst_offset,
                                       base + (c.copy_from - c.map_begin), c.copy_bytes,
                                       cudaMemcpyHostToDevice, k.copies.get()));
      s.done[slot].record(k.copies);
    };
    try {
      run_parallel_tasks(plan.chunks, n, pool, task);
    } catch (...) {
      (void)release(workers, n);
      throw;
    }
    // The last chunks are released by the workers too (in parallel); the
    // pass on this thread then only checks (and releases what a worker could
    // not).
    std::atomic<int> released{cudaSuccess};
    const int device = workers.device();
    auto release_one = [&](unsigned, std::uint64_t w, const std::atomic<bool> &) {
      cudaError_t e = RESPROJ_CUDA_TRY_NOTHROW(cudaSetDevice(device));
      if (e == cudaSuccess)
        e = release(workers[std::size_t(w)], slots_[std::size_t(w)]);
      int none = cudaSuccess;
      if (e != cudaSuccess)
        released.compare_exchange_strong(none, int(e));
    };
    try {
      run_parallel_tasks(n, n, pool, release_one);
    } catch (...) { // only thread creation can fail here
    }
    cudaError_t err = release(workers, n);
    if (err == cudaSuccess)
      err = cudaError_t(released.load());
    if (err != cudaSuccess)
      throw_cuda_error(err, "mapped read: copy or cudaHostUnregister", __FILE__,
                       __LINE__);
    workers.join(n, stream);
    result.method = io_method::mapped;
    result.threads = n;
    if (const unsigned u = unpinned.load())
      result.map_problem = std::to_string(u) + " of " + std::to_string(plan.chunks) +
                           " chunks could not be registered (copied as pageable memory)";
    return true;
  }

private:
  /// Waits for all copies of worker `k` (also one whose event could not be
  /// recorded), unregisters and unmaps its chunks `s`; returns the first
  /// error (never throws, so that no registration outlives its mapping).
  static cudaError_t release(file_io_worker &k, mapped_slots &s) noexcept {
    cudaError_t first = RESPROJ_CUDA_TRY_NOTHROW(cudaStreamSynchronize(k.copies.get()));
    for (std::size_t i = 0; i < s.mapped.size(); ++i) {
      if (s.registered[i]) {
        const cudaError_t u =
            RESPROJ_CUDA_TRY_NOTHROW(cudaHostUnregister(s.mapped[i].data()));
        if (first == cudaSuccess)
          first = u;
        s.registered[i] = 0;
      }
      s.mapped[i] = io::file_mapping();
    }
    return first;
  }

  /// `release` for the first `n` workers, on the calling thread.
  cudaError_t release(file_io_workers &workers, unsigned n) noexcept {
    cudaError_t first = cudaSuccess;
    for (unsigned w = 0; w < n && w < workers.size() && w < slots_.size(); ++w) {
      const cudaError_t e = release(workers[w], slots_[w]);
      if (first == cudaSuccess)
        first = e;
    }
    return first;
  }

  int support_ = 0; ///< 0 unknown, 1 yes, -1 no
  std::vector<mapped_slots> slots_;
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
