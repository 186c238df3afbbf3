/// @file
/// @brief The bounce-buffer path of the device file transfers, and the
/// worker copy streams it shares with the mapped path
/// (`detail::file_io_workers`, `detail::bounce_read`,
/// `detail::bounce_write`).
///
/// The byte range is split into tasks of `task_bytes`; N worker threads
/// (`RESPROJ_IO_THREADS`, else min(8, hardware threads)) each `pread` into
/// one of their `buffers_per_worker` pinned bounce buffers while the copy of
/// the previous one runs on the worker's own non-blocking stream (writes:
/// the copy from the device, then `pwrite`). Workers are threads of a
/// `thread_pool` or started per call (`io::parallel_io_options::pool`). The
/// copies start after the work queued on the caller's stream before the
/// call, and the caller's stream waits for them through events.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/parallel_io_options.hpp"
#include "resproj/io/parallel_read.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// An event created on `device`.
inline event event_on(int device) {
  device_guard guard(device);
  return event();
}

/// One transfer worker: its copy stream, its pinned bounce buffers (made on
/// first use by the bounce path) and the events of their last copies.
struct file_io_worker {
  stream copies;                                     ///< non-blocking, on the device
  std::vector<pinned_buffer<unsigned char>> buffers; ///< bounce (on first use)
  std::vector<event> done;                           ///< last copy from buffers[i]
  event finished;                                    ///< end of this call's copies
  unsigned next = 0;                                 ///< buffer handed out next
  unsigned current = 0;                              ///< buffer handed out last
  explicit file_io_worker(int device) : copies(device) {}
};

/// The workers of one `device_file_io`: created on demand on its device and
/// kept (with their buffers) for later calls.
class file_io_workers {
public:
  /// @throws gpu_error if the runtime fails.
  explicit file_io_workers(int device) : device_(device), start_(event_on(device)) {}

  int device() const noexcept { return device_; }
  std::size_t size() const noexcept { return workers_.size(); }
  file_io_worker &operator[](std::size_t w) { return *workers_[w]; }

  /// Creates missing workers (on the calling thread, with the device
  /// current), gives each of the first `n` at least `buffers` bounce buffers
  /// of `buffer_bytes` (none when `buffers == 0`), and orders the first `n`
  /// after the work queued so far on `stream`.
  void prepare(unsigned n, stream_ref stream, unsigned buffers,
               std::size_t buffer_bytes) {
    while (workers_.size() < n)
      workers_.push_back(std::make_unique<file_io_worker>(device_));
    for (unsigned w = 0; w < n; ++w) {
      file_io_worker &k = *workers_[w];
      // Each buffer's event is made first, so that a failure between the
      // two never leaves a buffer without its event (a later call, which
      // sees enough buffers, would index past the events).
      while (k.buffers.size() < buffers) {
        if (k.done.size() == k.buffers.size())
          k.done.emplace_back();
        k.buffers.emplace_back(buffer_bytes);
      }
    }
    start_.record(stream);
    for (unsigned w = 0; w < n; ++w) {
      start_.make_wait(workers_[w]->copies);
      workers_[w]->next = 0;
    }
  }

  /// Makes the device current on the thread of worker `w` the first time
  /// it asks in a call (`device_set`: one flag per worker, 0 at the start).
  void use_device(unsigned w, std::vector<char> &device_set) const {
    if (!device_set[w]) { // worker threads start on device 0
      RESPROJ_CUDA_TRY(cudaSetDevice(device_));
      device_set[w] = 1;
    }
  }

  /// The next bounce buffer of worker `w`, once its previous copy is done.
  span<unsigned char> next_buffer(unsigned w, std::vector<char> &device_set) {
    use_device(w, device_set);
    file_io_worker &k = *workers_[w];
    k.current = k.next;
    k.next = (k.next + 1) % unsigned(k.buffers.size());
    k.done[k.current].synchronize();
    return k.buffers[k.current].span();
  }

  /// Makes `stream` wait for the copies of the first `n` workers.
  void join(unsigned n, stream_ref stream) {
    for (unsigned w = 0; w < n; ++w) {
      workers_[w]->finished.record(workers_[w]->copies);
      workers_[w]->finished.make_wait(stream);
    }
  }
  /// As `join`, ignoring errors (for the error paths).
  void join(unsigned n, stream_ref stream, std::nothrow_t) noexcept {
    for (unsigned w = 0; w < n && w < workers_.size(); ++w) {
      RESPROJ_CUDA_TRY_NOTHROW(
          cudaEventRecord(workers_[w]->finished.get(), workers_[w]->copies.get()));
      RESPROJ_CUDA_TRY_NOTHROW(
          cudaStreamWaitEvent(stream.get(), workers_[w]->finished.get(), 0));
    }
  }

  /// Blocks until every worker's copies have completed.
  /// @throws gpu_error reporting errors of those copies.
  void synchronize() {
    for (auto &w : workers_)
      w->copies.synchronize();
  }
  /// As `synchronize`, ignoring errors (for destructors).
  void synchronize_nothrow() noexcept {
    for (auto &w : workers_)
      if (w)
        RESPROJ_CUDA_TRY_NOTHROW(cudaStreamSynchronize(w->copies.get()));
  }

private:
  int device_;
  event start_;
  std::vector<std::unique_ptr<file_io_worker>> workers_;
};

/// Reads `[offset, offset + bytes)` of `path` into the device memory `out`
/// through the bounce buffers of `workers` (`buffers` per worker, of
/// `po.task_bytes` bytes), copies ordered before later work on `stream`.
/// @return the number of worker threads used.
/// @throws as `io::read_range`; gpu_error if a copy fails.
inline unsigned bounce_read(file_io_workers &workers, const std::string &path,
                            std::uint64_t offset, unsigned char *out, std::uint64_t bytes,
                            stream_ref stream, io::parallel_io_options po,
                            unsigned buffers) {
  const unsigned n = io::effective_io_threads(po, bytes);
  workers.prepare(n, stream, buffers, po.task_bytes);
  std::vector<char> device_set(n, 0);
  po.buffer_provider = [&](unsigned w) { return workers.next_buffer(w, device_set); };
  auto sink = [&](unsigned w, std::uint64_t pos, const void *data, std::size_t len) {
    file_io_worker &k = workers[w];
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(out + (pos - offset), data, len,
                                     cudaMemcpyHostToDevice, k.copies.get()));
    k.done[k.current].record(k.copies);
  };
  try {
    io::read_range(path, offset, bytes, sink, po);
  } catch (...) {
    workers.join(n, stream, std::nothrow);
    throw;
  }
  workers.join(n, stream);
  return n;
}

/// Writes `bytes` bytes of the device memory `in` to `[offset, offset +
/// bytes)` of `path` (truncated first when `truncate`) through the bounce
/// buffers of `workers`, after the work queued before on `stream`.
/// @return the number of worker threads used.
/// @throws as `io::write_range`; gpu_error if a copy fails.
inline unsigned bounce_write(file_io_workers &workers, const std::string &path,
                             std::uint64_t offset, const unsigned char *in,
                             std::uint64_t bytes, stream_ref stream,
                             io::parallel_io_options po, unsigned buffers,
                             bool truncate) {
  const unsigned n = io::effective_io_threads(po, bytes);
  workers.prepare(n, stream, buffers, po.task_bytes);
  std::vector<char> device_set(n, 0);
  po.buffer_provider = [&](unsigned w) { return workers.next_buffer(w, device_set); };
  auto source = [&](unsigned w, std::uint64_t pos, void *buf, std::size_t len) {
    file_io_worker &k = workers[w];
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(buf, in + (pos - offset), len,
                                     cudaMemcpyDeviceToHost, k.copies.get()));
    k.done[k.current].record(k.copies);
    k.done[k.current].synchronize();
  };
  try {
    io::write_range(path, offset, bytes, source, po, truncate);
  } catch (...) {
    workers.join(n, stream, std::nothrow);
    throw;
  }
  workers.join(n, stream);
  return n;
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
