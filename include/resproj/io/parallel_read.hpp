/// @file
/// @brief Parallel `pread` / `pwrite` of a byte range of a file
/// (`read_range`, `read_range_into`, `write_range`): the host core of the
/// device reader and writer.
///
/// The range is split into tasks of `task_bytes`; N worker threads take tasks
/// in order from a shared counter (`run_parallel_tasks`, on the threads of a
/// `thread_pool` or on threads started for the call). Each task is read in
/// chunks into a buffer that the caller may supply (pinned bounce buffers
/// for the GPU layer), and every chunk is handed to a caller-supplied sink
/// from the worker thread:
///
///     sink(worker_index, file_offset_of_chunk, const void* data, std::size_t n)
///
/// Settings and the work split: io/parallel_io_options.hpp; the file
/// handle: io/positional_file.hpp. Standard library and POSIX only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/io/parallel_io_options.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace detail {

/// Runs `chunk(worker, file_offset, buffer, n)` for every chunk of every task
/// of `[offset, offset + bytes)` on `workers` workers (see
/// `run_parallel_tasks`).
template <class ChunkFn>
void run_parallel_range(std::uint64_t offset, std::uint64_t bytes,
                        const parallel_io_options &options, unsigned workers,
                        ChunkFn &chunk) {
  const std::uint64_t task_bytes = options.task_bytes;
  const std::uint64_t num_tasks = io_task_count(bytes, task_bytes);
  // Per-worker fallback buffers (only without a provider), allocated by the
  // worker that uses them.
  std::vector<std::vector<unsigned char>> own(options.buffer_provider ? 0 : workers);
  auto task = [&](unsigned w, std::uint64_t t, const std::atomic<bool> &failed) {
    std::uint64_t pos = offset + t * task_bytes;
    const std::uint64_t end = std::min(pos + task_bytes, offset + bytes);
    while (pos < end && !failed.load(std::memory_order_relaxed)) {
      span<unsigned char> buf;
      if (options.buffer_provider) {
        buf = options.buffer_provider(w);
      } else {
        if (own[w].empty())
          own[w].resize(std::size_t(std::min<std::uint64_t>(task_bytes, bytes)));
        buf = span<unsigned char>(own[w].data(), own[w].size());
      }
      if (buf.empty() || buf.data() == nullptr)
        resproj::detail::throw_invalid("options.buffer_provider",
                                       "returned an empty buffer for worker " +
                                           std::to_string(w));
      const std::size_t n = std::size_t(std::min<std::uint64_t>(buf.size(), end - pos));
      chunk(w, pos, buf.data(), n);
      pos += n;
    }
  };
  run_parallel_tasks(num_tasks, workers, options.pool, task);
}

} // namespace detail

/// Reads `[offset, offset + bytes)` of the regular file `path` with parallel
/// `pread`s and hands every chunk to `sink`, called from the worker threads as
///
///     sink(unsigned worker_index, std::uint64_t file_offset,
///          const void* data, std::size_t n)
///
/// Chunks cover the range exactly once, in no particular order across workers
/// (in file order within a task). The data pointer is only valid during the
/// call (with a `buffer_provider`, until the provider hands the same buffer
/// out again). Calls with the same worker index never overlap; calls with
/// different indices run concurrently.
///
/// Short reads and EINTR are retried. The path is opened and checked even
/// when `bytes == 0` (then nothing else happens).
///
/// @throws io_error (message "resproj: <path>: <problem>", with the offset
///         where it applies) if the file is missing, a directory or not a
///         regular file, if the range extends past the end of the file
///         (checked before any read, and again if the file shrinks during the
///         read), or if a read fails.
/// @throws invalid_argument for `task_bytes == 0`, an overflowing range or an
///         empty buffer from the provider.
/// The first exception from any worker (including one thrown by `sink` or
/// the provider) is rethrown on the calling thread after all workers have
/// stopped; the other workers stop at their next chunk.
template <class Sink>
void read_range(const std::string &path, std::uint64_t offset, std::uint64_t bytes,
                Sink &&sink, const parallel_io_options &options = {}) {
  const unsigned workers = effective_io_threads(options, bytes);
  const positional_file file = positional_file::open_read_range(path, offset, bytes);
  if (bytes == 0)
    return;
  auto chunk = [&](unsigned w, std::uint64_t pos, unsigned char *buf, std::size_t n) {
    file.pread_exact(path, buf, n, pos);
    sink(w, pos, static_cast<const void *>(buf), n);
  };
  detail::run_parallel_range(offset, bytes, options, workers, chunk);
}

/// Convenience: reads `[offset, offset + dst.size())` of `path` into `dst`.
/// On error the contents of `dst` are unspecified (partially written).
/// @throws as `read_range`.
inline void read_range_into(const std::string &path, std::uint64_t offset,
                            span<unsigned char> dst,
                            const parallel_io_options &options = {}) {
  unsigned char *base = dst.data();
  read_range(
      path, offset, dst.size(),
      [base, offset](unsigned, std::uint64_t pos, const void *data, std::size_t n) {
        std::memcpy(base + (pos - offset), data, n);
      },
      options);
}

/// Writes `[offset, offset + bytes)` of `path` with parallel `pwrite`s; the
/// bytes come from `source`, called from the worker threads as
///
///     source(unsigned worker_index, std::uint64_t file_offset,
///            void* buffer, std::size_t n)
///
/// which must fill `buffer[0, n)` with the bytes destined for
/// `[file_offset, file_offset + n)`. The file is created (mode 0644) if it
/// does not exist; it is truncated to zero length first when `truncate`,
/// otherwise bytes outside the range are kept. Threading, buffers and error
/// collection as for `read_range`.
/// @throws io_error if the file cannot be opened, is not a regular file, or
///         a write fails (message names the file and the offset).
template <class Source>
void write_range(const std::string &path, std::uint64_t offset, std::uint64_t bytes,
                 Source &&source, const parallel_io_options &options = {},
                 bool truncate = false) {
  const unsigned workers = effective_io_threads(options, bytes);
  check_file_range(offset, bytes);
  const positional_file file = positional_file::open_write(path, truncate);
  if (bytes == 0)
    return;
  auto chunk = [&](unsigned w, std::uint64_t pos, unsigned char *buf, std::size_t n) {
    source(w, pos, static_cast<void *>(buf), n);
    file.pwrite_exact(path, buf, n, pos);
  };
  detail::run_parallel_range(offset, bytes, options, workers, chunk);
}

} // namespace io
RESPROJ_NAMESPACE_END
