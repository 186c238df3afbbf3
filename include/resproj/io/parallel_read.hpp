/// @file
/// @brief Parallel `pread` / `pwrite` of a byte range of a file: the host core
/// of the device reader and writer.
///
/// The range is split into tasks of `task_bytes`; N worker threads take tasks
/// in order from a shared counter. Each task is read in chunks into a buffer
/// that the caller may supply (pinned bounce buffers for the GPU layer), and
/// every chunk is handed to a caller-supplied sink from the worker thread:
///
///     sink(worker_index, file_offset_of_chunk, const void* data, std::size_t n)
///
/// Host code, standard library and POSIX only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Supplies the buffer a worker reads the next chunk into (or fills the next
/// chunk from, for writes). Called from the worker thread before every chunk;
/// it may return the same buffer each time or rotate through several (e.g.
/// two pinned bounce buffers, waiting for the asynchronous copy of the one it
/// hands out to finish). The returned span must be non-empty and stay valid
/// until the sink (source) call for that chunk has returned.
using buffer_provider_fn = std::function<span<unsigned char>(unsigned worker_index)>;

/// Persistent worker threads for repeated parallel transfers (the
/// alternative to starting threads on every call). `run(n, fn)` calls
/// `fn(0)` on the calling thread and `fn(1) ... fn(n - 1)` on pool threads
/// (created when first needed and kept until destruction), and returns when
/// all have returned. Calls of `run` on one pool are serialised; `fn` must
/// not throw (wrap it). The destructor stops and joins the threads.
class io_worker_pool {
public:
  io_worker_pool() = default;
  io_worker_pool(const io_worker_pool &) = delete;
  io_worker_pool &operator=(const io_worker_pool &) = delete;
  ~io_worker_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto &t : threads_)
      t.join();
  }

  /// Threads started so far (never more than the largest `n - 1` asked for).
  std::size_t threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }

  /// Runs `fn(w)` for `w` in `[0, n)` as described above; blocks until done.
  /// @throws std::system_error if a missing thread cannot be started (then
  ///         `fn` has not been called).
  template <class Fn> void run(unsigned n, Fn &fn) {
    std::lock_guard<std::mutex> serial(run_mutex_);
    if (n == 0)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (threads_.size() + 1 < n) {
        const unsigned index = unsigned(threads_.size()) + 1;
        threads_.emplace_back([this, index] { loop(index); });
      }
    }
    auto call = [](void *f, unsigned w) { (*static_cast<Fn *>(f))(w); };
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      job_call_ = call;
      job_workers_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    if (n > 1)
      wake_.notify_all();
    fn(0u);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

private:
  void loop(unsigned index) {
    std::uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen = generation_; // a thread started for a job takes part in it
      if (job_ != nullptr)
        --seen;
    }
    for (;;) {
      void *job = nullptr;
      void (*call)(void *, unsigned) = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        if (index >= job_workers_)
          continue; // not needed this time
        job = job_;
        call = job_call_;
      }
      call(job, index);
      bool last = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last = --pending_ == 0;
      }
      if (last)
        done_.notify_one();
    }
  }

  mutable std::mutex mutex_;
  std::mutex run_mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  void *job_ = nullptr;
  void (*job_call_)(void *, unsigned) = nullptr;
  unsigned job_workers_ = 0;
  unsigned pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

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
  io_worker_pool *pool = nullptr;
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

namespace detail {

/// Owning POSIX file descriptor.
class pio_file {
public:
  pio_file() = default;
  pio_file(const pio_file &) = delete;
  pio_file &operator=(const pio_file &) = delete;
  pio_file(pio_file &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ~pio_file() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int fd() const noexcept { return fd_; }

  /// Opens `path` for reading; rejects anything but a regular file. The open
  /// does not block (O_NONBLOCK, cleared once the file is known to be
  /// regular): a FIFO is rejected at once instead of waiting for a writer.
  /// @return the file and its size in `size_out`.
  /// @throws io_error naming the file and the problem.
  static pio_file open_read(const std::string &path, std::uint64_t &size_out) {
    pio_file f;
    do
      f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    while (f.fd_ < 0 && errno == EINTR);
    if (f.fd_ < 0)
      throw_errno(path, "cannot open for reading", errno);
    size_out = f.regular_size(path);
    f.clear_nonblock(path);
    return f;
  }

  /// Opens `path` for writing (created with mode 0644 if missing; truncated to
  /// zero length first when `truncate`). An existing file that is not a
  /// regular file is rejected before it is opened, and the open does not
  /// block (a FIFO is never waited on).
  /// @throws io_error naming the file and the problem.
  static pio_file open_write(const std::string &path, bool truncate) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
      check_regular(path, st);
    pio_file f;
    const int flags =
        O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | (truncate ? O_TRUNC : 0);
    do
      f.fd_ = ::open(path.c_str(), flags, 0644);
    while (f.fd_ < 0 && errno == EINTR);
    if (f.fd_ < 0) {
      if (errno == ENXIO) // a FIFO (or device) that appeared after the stat
        throw io_error("resproj: " + path + ": not a regular file");
      throw_errno(path, "cannot open for writing", errno);
    }
    (void)f.regular_size(path);
    f.clear_nonblock(path);
    return f;
  }

  /// Reads exactly `n` bytes at `offset`, retrying short reads and EINTR.
  /// @throws io_error naming the file and the offset on EOF or failure.
  void pread_exact(const std::string &path, void *buf, std::size_t n,
                   std::uint64_t offset) const {
    auto *p = static_cast<unsigned char *>(buf);
    while (n > 0) {
      const std::size_t want = std::min<std::size_t>(n, std::size_t(1) << 30);
      const ssize_t got = ::pread(fd_, p, want, off_t(offset));
      if (got < 0) {
        if (errno == EINTR)
          continue;
        throw_errno(path, "read failed at offset " + std::to_string(offset), errno);
      }
      if (got == 0)
        throw io_error("resproj: " + path + ": unexpected end of file at offset " +
                       std::to_string(offset) + " (" + std::to_string(n) +
                       " more bytes expected)");
      p += got;
      n -= std::size_t(got);
      offset += std::uint64_t(got);
    }
  }

  /// Writes exactly `n` bytes at `offset`, retrying short writes and EINTR.
  void pwrite_exact(const std::string &path, const void *buf, std::size_t n,
                    std::uint64_t offset) const {
    auto *p = static_cast<const unsigned char *>(buf);
    while (n > 0) {
      const std::size_t want = std::min<std::size_t>(n, std::size_t(1) << 30);
      const ssize_t put = ::pwrite(fd_, p, want, off_t(offset));
      if (put < 0) {
        if (errno == EINTR)
          continue;
        throw_errno(path, "write failed at offset " + std::to_string(offset), errno);
      }
      if (put == 0)
        throw io_error("resproj: " + path + ": write made no progress at offset " +
                       std::to_string(offset));
      p += put;
      n -= std::size_t(put);
      offset += std::uint64_t(put);
    }
  }

  [[noreturn]] static void throw_errno(const std::string &path, const std::string &what,
                                       int err) {
    throw io_error("resproj: " + path + ": " + what + ": " + std::strerror(err));
  }

private:
  static void check_regular(const std::string &path, const struct stat &st) {
    if (S_ISDIR(st.st_mode))
      throw io_error("resproj: " + path + ": is a directory, not a file");
    if (!S_ISREG(st.st_mode))
      throw io_error("resproj: " + path + ": not a regular file");
  }

  std::uint64_t regular_size(const std::string &path) const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0)
      throw_errno(path, "cannot stat", errno);
    check_regular(path, st);
    return std::uint64_t(st.st_size);
  }

  void clear_nonblock(const std::string &path) const {
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0)
      throw_errno(path, "cannot clear O_NONBLOCK", errno);
  }

  int fd_ = -1;
};

/// Checks `offset + bytes` for overflow and for `off_t`.
inline void pio_check_range(std::uint64_t offset, std::uint64_t bytes) {
  const std::uint64_t max = std::uint64_t(std::numeric_limits<off_t>::max());
  if (offset > max || bytes > max - offset)
    resproj::detail::throw_invalid("offset + bytes",
                                   "range [" + std::to_string(offset) + ", +" +
                                       std::to_string(bytes) +
                                       ") exceeds the largest file offset");
}

/// Opens the regular file `path` for reading and checks that
/// `[offset, offset + bytes)` lies inside it (always for `bytes == 0` too:
/// the file must exist). Reads nothing.
/// @throws invalid_argument for an overflowing range; io_error naming the
///         file, the range, the file size and the offset where the file ends.
inline pio_file pio_open_range(const std::string &path, std::uint64_t offset,
                               std::uint64_t bytes) {
  pio_check_range(offset, bytes);
  std::uint64_t size = 0;
  pio_file file = pio_file::open_read(path, size);
  if (bytes != 0 && (offset > size || bytes > size - offset))
    throw io_error("resproj: " + path + ": range [" + std::to_string(offset) + ", " +
                   std::to_string(offset + bytes) +
                   ") extends past the end of the file " + "(size " +
                   std::to_string(size) + "): end of file at offset " +
                   std::to_string(std::max(size, offset)));
  return file;
}

/// Runs `task(worker, task_index)` for every task index in `[0, num_tasks)`
/// on `workers` workers, which take the indices in order from a shared
/// counter: worker 0 is the calling thread, the others are threads of `pool`
/// (or threads started for this call when `pool` is null). Collects the first
/// exception and rethrows it after every worker has stopped; the other
/// workers stop before their next task, or inside a task when they poll
/// `failed`. `task` is called as `task(unsigned w, std::uint64_t t, const
/// std::atomic<bool>& failed)`.
template <class TaskFn>
void run_parallel_tasks(std::uint64_t num_tasks, unsigned workers, io_worker_pool *pool,
                        TaskFn &task) {
  std::atomic<std::uint64_t> next_task{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;

  auto work = [&](unsigned w) noexcept {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        const std::uint64_t t = next_task.fetch_add(1, std::memory_order_relaxed);
        if (t >= num_tasks)
          break;
        task(w, t, static_cast<const std::atomic<bool> &>(failed));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error)
        first_error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };

  if (workers <= 1) {
    work(0);
  } else if (pool != nullptr) {
    pool->run(workers, work);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    try {
      for (unsigned w = 1; w < workers; ++w)
        threads.emplace_back(work, w);
    } catch (...) {
      // Thread creation failed: stop and join the ones running, then report.
      failed.store(true);
      for (auto &th : threads)
        th.join();
      throw;
    }
    work(0);
    for (auto &th : threads)
      th.join();
  }
  if (first_error)
    std::rethrow_exception(first_error);
}

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
  const detail::pio_file file = detail::pio_open_range(path, offset, bytes);
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
  detail::pio_check_range(offset, bytes);
  const detail::pio_file file = detail::pio_file::open_write(path, truncate);
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
