/// @file
/// @brief Settings of the parallel file transfers (`parallel_io_options`)
/// and how a byte range is split among tasks and worker threads
/// (`io_task_count`, `effective_io_threads`, `default_io_threads`).
/// Standard library only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <thread>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Supplies the buffer a worker reads the next chunk into (or fills the next
/// chunk from, for writes). Called from the worker thread before every chunk;
/// it may return the same buffer each time or rotate through several (e.g.
/// two pinned bounce buffers, waiting for the asynchronous copy of the one it
/// hands out to finish). The returned span must be non-empty and stay valid
/// until the sink (source) call for that chunk has returned.
using buffer_provider_fn = std::function<span<unsigned char>(unsigned worker_index)>;

/// The persistent threads `parallel_io_options::pool` takes: the host
/// thread pool (core/thread_pool.hpp).
using io_worker_pool = thread_pool;

/// Settings of `read_range` and `write_range`.
struct parallel_io_options {
  /// Worker threads; 0 means `default_io_threads()`. The number actually used
  /// is `effective_io_threads(options, bytes)` (never more than the number of
  /// tasks). With one worker everything runs on the calling thread.
  unsigned threads = 0;
  /// Bytes per task (> 0). Tasks are handed out in file order.
  std::size_t task_bytes = std::size_t(4) << 20;
  /// Optional per-chunk buffer supplier. Empty: each worker reads into its
  /// own `std::vector` of `min(task_bytes, bytes)` bytes.
  buffer_provider_fn buffer_provider;
  /// Optional persistent threads (not owned; must outlive the call). Null:
  /// the workers other than the calling thread are started for each call.
  thread_pool *pool = nullptr;
};

/// Parses a worker count as `RESPROJ_IO_THREADS` holds it: a decimal integer
/// in [1, 1024] with nothing else (no sign, no spaces). Returns 0 for null,
/// empty or anything else (the caller then uses its default).
inline unsigned parse_io_threads(const char *text) noexcept {
  if (text == nullptr || *text < '0' || *text > '9')
    return 0;
  unsigned long v = 0;
  for (const char *p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + unsigned(*p - '0');
    if (v > 1024)
      return 0;
  }
  return unsigned(v);
}

/// Default worker count: the environment variable `RESPROJ_IO_THREADS` when it
/// holds a positive integer (at most 1024, see `parse_io_threads`), else
/// `min(8, hardware threads)`, at least 1.
inline unsigned default_io_threads() {
  if (const unsigned v = parse_io_threads(std::getenv("RESPROJ_IO_THREADS")))
    return v;
  const unsigned hw = std::thread::hardware_concurrency();
  return std::max(1u, std::min(8u, hw == 0 ? 1u : hw));
}

/// Number of tasks a range of `bytes` bytes is split into: `ceil(bytes /
/// task_bytes)` (0 for an empty range). The last task holds the remainder.
/// @throws invalid_argument ("task_bytes") if `task_bytes == 0`.
inline std::uint64_t io_task_count(std::uint64_t bytes, std::uint64_t task_bytes) {
  if (task_bytes == 0)
    resproj::detail::throw_invalid("task_bytes", "must be > 0");
  return bytes == 0 ? 0 : (bytes - 1) / task_bytes + 1;
}

/// Number of workers `read_range` / `write_range` start for a range of
/// `bytes` bytes: worker indices passed to the sink, source and buffer
/// provider are `< effective_io_threads(options, bytes)` (and 0 for an empty
/// range). Use it to set up per-worker resources (streams, buffers) first.
/// @throws invalid_argument if `options.task_bytes == 0`.
inline unsigned effective_io_threads(const parallel_io_options &options,
                                     std::uint64_t bytes) {
  if (options.task_bytes == 0)
    resproj::detail::throw_invalid("options.task_bytes", "must be > 0");
  if (bytes == 0)
    return 1;
  const std::uint64_t tasks = io_task_count(bytes, options.task_bytes);
  const unsigned want = options.threads == 0 ? default_io_threads() : options.threads;
  return unsigned(std::min<std::uint64_t>(want, tasks));
}

} // namespace io
RESPROJ_NAMESPACE_END
