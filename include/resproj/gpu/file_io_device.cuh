/// @file
/// @brief `device_file_io`: reads byte ranges of files into device memory
/// and writes device memory to files, choosing among the GPUDirect Storage,
/// bounce-buffer and mapped paths; the one-shot `read_file` / `write_file`.
///
/// Reads below `small_bytes` go through one pinned buffer on the calling
/// thread; larger ones take GPUDirect Storage when it is available and
/// allowed (gpu/file_io_gds.cuh), else the path of `file_io_options::reads`
/// (gpu/file_io_bounce.cuh, gpu/file_io_mapped.cuh). Writes take GPUDirect
/// Storage or the bounce path.
///
/// Synchronisation: every call is **host-blocking** for the file side (it
/// returns once all bytes have been read from / written to the file).
/// Reads: the device data are ready *in stream order on the caller's
/// stream* (the stream waits for the worker copies through events; no
/// device-wide sync), and the copies start only after work queued on that
/// stream before the call. Writes: the data are taken from the device after
/// work queued before the call on the caller's stream; when the call returns
/// the file holds them. The GDS path synchronises the caller's stream first.
/// None of these calls may be made while the caller's stream is being
/// captured into a graph (they block on file I/O and order private streams).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/gpu/detail/cufile.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/file_io_bounce.cuh"
#include "resproj/gpu/file_io_gds.cuh"
#include "resproj/gpu/file_io_mapped.cuh"
#include "resproj/gpu/file_io_options.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/parallel_io_options.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Reads byte ranges of files into device memory and writes device memory to
/// files (see the file comment for the paths and the synchronisation). Owns
/// the pinned bounce buffers and worker streams, created lazily on the
/// device given at construction and kept for later calls, so repeated
/// transfers do not allocate pinned memory again.
///
/// Thread safety: calls on one object are serialised by an internal mutex;
/// distinct objects are independent. The destructor waits (host-blocking)
/// for copies still using its bounce buffers.
class device_file_io {
public:
  /// @param options  settings (checked here)
  /// @param device   device whose memory is read into / written from
  /// @throws invalid_argument ("options.task_bytes", "options.buffers_per_worker")
  ///         for 0 task bytes or fewer than 2 buffers; gpu_error if the
  ///         runtime fails. Allocates nothing yet; does not block.
  explicit device_file_io(const file_io_options &options = {},
                          int device = current_device())
      : options_(checked(options)), device_(device), workers_(device),
        small_done_(detail::event_on(device)) {}

  ~device_file_io() { synchronize_nothrow(); }

  device_file_io(const device_file_io &) = delete;
  device_file_io &operator=(const device_file_io &) = delete;

  const file_io_options &options() const noexcept { return options_; }
  int device() const noexcept { return device_; }

  /// Reads `[offset, offset + bytes)` of `path` into device memory at `dst`.
  /// Host-blocking until the file has been read; the data are ready in
  /// stream order on `stream` (see the file comment).
  /// @param dst     device (or managed) memory of `device()`, `bytes` long
  /// @throws invalid_argument ("stream") for the legacy default stream,
  ///         ("dst") for null with `bytes > 0`, host memory or memory of
  ///         another device; io_error naming the file (and offset) if it is
  ///         missing, a directory, shorter than the range (checked before
  ///         anything is written to `dst`) or a read fails (`dst` then holds
  ///         part of the data); gpu_error if a copy fails.
  file_io_result read(const std::string &path, std::uint64_t offset, void *dst,
                      std::uint64_t bytes, stream_ref stream) {
    detail::require_explicit_stream(stream, "stream");
    check_device_pointer(dst, bytes, "dst");
    std::lock_guard<std::mutex> lock(mutex_);
    device_guard guard(device_);
    const io::positional_file file =
        io::positional_file::open_read_range(path, offset, bytes);
    file_io_result result;
    if (bytes == 0)
      return result;
    auto *out = static_cast<unsigned char *>(dst);
    if (detail::should_try_gds(options_.gds, detail::nvidia_fs_loaded()) &&
        detail::gds_transfer(path, offset, out, bytes, stream, false, false, options_.gds,
                             result))
      return result;

    result.method = io_method::bounce;
    result.bytes = bytes;
    if (bytes < options_.small_bytes) {
      result.threads = 1;
      if (small_.size() < options_.small_bytes)
        small_ = pinned_buffer<unsigned char>(options_.small_bytes);
      small_done_.synchronize(); // the previous small copy has left the buffer
      file.pread_exact(path, small_.data(), std::size_t(bytes), offset);
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(out, small_.data(), std::size_t(bytes),
                                       cudaMemcpyHostToDevice, stream.get()));
      small_done_.record(stream);
      return result;
    }

    if (options_.reads == read_path::mapped &&
        mapped_.read(workers_, pool(), path, file, offset, out, bytes, stream, options_,
                     result))
      return result;

    result.threads = detail::bounce_read(workers_, path, offset, out, bytes, stream,
                                         pool_options(), options_.buffers_per_worker);
    return result;
  }

  /// Reads `dst.size()` elements of `T` from `path` at byte `offset` (a raw
  /// little-endian array, on a little-endian host). Throws as `read`.
  template <class T>
  file_io_result read(const std::string &path, std::uint64_t offset,
                      device_buffer<T> &dst, stream_ref stream) {
    return read(path, offset, dst.data(), dst.size_bytes(), stream);
  }

  /// Writes `bytes` bytes of device memory at `src` to `[offset, offset +
  /// bytes)` of `path` (created with mode 0644 if missing; truncated first
  /// when `truncate`, else other bytes are kept). Host-blocking until the
  /// file holds the data; the data are taken after work queued before the
  /// call on `stream`.
  /// @throws invalid_argument ("stream", "src") as `read`; io_error naming
  ///         the file if it cannot be opened, is a directory, or a write fails
  ///         (with the offset); gpu_error if a copy fails.
  file_io_result write(const std::string &path, std::uint64_t offset, const void *src,
                       std::uint64_t bytes, stream_ref stream, bool truncate = false) {
    detail::require_explicit_stream(stream, "stream");
    check_device_pointer(src, bytes, "src");
    std::lock_guard<std::mutex> lock(mutex_);
    device_guard guard(device_);
    file_io_result result;
    if (bytes == 0) {
      io::write_range(
          path, offset, 0, [](unsigned, std::uint64_t, void *, std::size_t) {}, {},
          truncate);
      return result;
    }
    const auto *in = static_cast<const unsigned char *>(src);
    if (detail::should_try_gds(options_.gds, detail::nvidia_fs_loaded()) &&
        detail::gds_transfer(path, offset, const_cast<unsigned char *>(in), bytes, stream,
                             true, truncate, options_.gds, result))
      return result;

    result.method = io_method::bounce;
    result.bytes = bytes;
    result.threads =
        detail::bounce_write(workers_, path, offset, in, bytes, stream, pool_options(),
                             options_.buffers_per_worker, truncate);
    return result;
  }

  /// Writes all of `src` to `path` at byte `offset` (raw, host byte order).
  /// Throws as `write`.
  template <class T>
  file_io_result write(const std::string &path, std::uint64_t offset,
                       const device_buffer<T> &src, stream_ref stream,
                       bool truncate = false) {
    return write(path, offset, src.data(), src.size_bytes(), stream, truncate);
  }

  /// Blocks until no copy uses the bounce buffers any more.
  /// @throws gpu_error reporting errors of those copies.
  void synchronize() {
    std::lock_guard<std::mutex> lock(mutex_);
    workers_.synchronize();
    small_done_.synchronize();
  }

private:
  static const file_io_options &checked(const file_io_options &o) {
    if (o.task_bytes == 0)
      throw invalid_argument("options.task_bytes", "must be > 0");
    if (o.buffers_per_worker < 2)
      throw invalid_argument("options.buffers_per_worker",
                             "must be >= 2 (got " + std::to_string(o.buffers_per_worker) +
                                 ")");
    if (o.map_chunk_bytes == 0)
      throw invalid_argument("options.map_chunk_bytes", "must be > 0");
    if (o.map_depth < 1)
      throw invalid_argument("options.map_depth", "must be >= 1");
    if (o.reads != read_path::bounce && o.reads != read_path::mapped)
      throw invalid_argument("options.reads", "not a read_path");
    return o;
  }

  /// The persistent workers, or null for threads started per call.
  thread_pool *pool() noexcept { return options_.persistent_threads ? &pool_ : nullptr; }

  io::parallel_io_options pool_options() {
    io::parallel_io_options po;
    po.threads = options_.threads;
    po.task_bytes = options_.task_bytes;
    po.pool = pool();
    return po;
  }

  void check_device_pointer(const void *p, std::uint64_t bytes, const char *name) const {
    if (p == nullptr) {
      if (bytes != 0)
        throw invalid_argument(name,
                               "null pointer with " + std::to_string(bytes) + " bytes");
      return;
    }
    require_device_pointer(p, device_, name);
  }

  void synchronize_nothrow() noexcept {
    workers_.synchronize_nothrow();
    if (small_done_.get() != nullptr)
      RESPROJ_CUDA_TRY_NOTHROW(cudaEventSynchronize(small_done_.get()));
  }

  file_io_options options_;
  int device_;
  std::mutex mutex_;
  detail::file_io_workers workers_; ///< copy streams and bounce buffers
  detail::mapped_reader mapped_;    ///< mapped path state
  pinned_buffer<unsigned char> small_;
  event small_done_;
  thread_pool pool_; ///< persistent workers (if options_.persistent_threads)
};

namespace detail {
/// The device of `p` for the one-shot functions: its owner for device
/// memory, the current device for managed memory.
/// @throws invalid_argument(name) for host memory.
inline int device_of(const void *p, const char *name) {
  if (p == nullptr)
    return current_device();
  const pointer_info info = query_pointer(p);
  if (!info.device_accessible)
    throw invalid_argument(name, std::string("points to ") +
                                     (info.pinned_host ? "pinned " : "pageable ") +
                                     "host memory, not device memory");
  return info.managed || info.device < 0 ? current_device() : info.device;
}
} // namespace detail

/// One-shot `device_file_io(options, device of dst).read(...)`; allocates
/// its pinned buffers for this call and, on return, its copies have
/// completed. Throws as `device_file_io::read`.
inline file_io_result read_file(const std::string &path, std::uint64_t offset, void *dst,
                                std::uint64_t bytes, stream_ref stream,
                                const file_io_options &options = {}) {
  detail::require_explicit_stream(stream, "stream");
  device_file_io io(options, detail::device_of(dst, "dst"));
  return io.read(path, offset, dst, bytes, stream);
}

/// One-shot typed read into all of `dst` (raw little-endian elements).
template <class T>
file_io_result read_file(const std::string &path, std::uint64_t offset,
                         device_buffer<T> &dst, stream_ref stream,
                         const file_io_options &options = {}) {
  return read_file(path, offset, dst.data(), dst.size_bytes(), stream, options);
}

/// One-shot `device_file_io(options, device of src).write(...)`. Throws as
/// `device_file_io::write`.
inline file_io_result write_file(const std::string &path, std::uint64_t offset,
                                 const void *src, std::uint64_t bytes, stream_ref stream,
                                 bool truncate = false,
                                 const file_io_options &options = {}) {
  detail::require_explicit_stream(stream, "stream");
  device_file_io io(options, detail::device_of(src, "src"));
  return io.write(path, offset, src, bytes, stream, truncate);
}

/// One-shot typed write of all of `src`.
template <class T>
file_io_result write_file(const std::string &path, std::uint64_t offset,
                          const device_buffer<T> &src, stream_ref stream,
                          bool truncate = false, const file_io_options &options = {}) {
  return write_file(path, offset, src.data(), src.size_bytes(), stream, truncate,
                    options);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
