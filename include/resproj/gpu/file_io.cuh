/// @file
/// @brief Files straight into device memory and back:
/// `device_file_io` (reusable; owns pinned bounce buffers and streams), the
/// one-shot `read_file` / `write_file`, and .npy / NIfTI / raw / list-mode
/// readers and writers that go to and from device buffers.
///
/// Default ("bounce") path: the byte range is split into tasks of
/// `task_bytes`; N worker threads (`RESPROJ_IO_THREADS`, else
/// min(8, hardware threads)) each `pread` into one of their
/// `buffers_per_worker` pinned bounce buffers while the copy of the previous
/// one runs on the worker's own non-blocking stream. Reads below
/// `small_bytes` go through one pinned buffer on the calling thread.
/// Workers are persistent threads of the object (`persistent_threads`) or
/// started per call.
///
/// Page-cache DMA ("mapped") read path, `read_path::mapped`: the range is
/// split into chunks of `map_chunk_bytes` (see io/file_mapping.hpp); a
/// worker maps each chunk read-only (`mmap`, `MAP_SHARED`), registers it
/// with the driver (`cudaHostRegister(..., cudaHostRegisterReadOnly)`) and
/// copies it straight from the page cache to the device (one copy instead of
/// `pread`'s copy plus the DMA), with up to `map_depth` chunks in flight
/// before it unregisters and unmaps the oldest. If the device or the kernel cannot
/// register a file mapping, the read falls back to the bounce path
/// (`file_io_result::method` says which ran, `map_problem` why). This path
/// returns only after its copies have completed (the mapping goes away). As
/// with any mapped file, another process truncating the file during the read
/// raises SIGBUS; use the bounce path for files that others may shorten.
/// GPUDirect Storage (cuFile, loaded at run time) is used when available and
/// allowed (`gds_mode`, see gpu/detail/cufile.hpp).
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

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/cufile.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/dtype.hpp"
#include "resproj/io/file_mapping.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// How reads of at least `small_bytes` travel when GPUDirect Storage is not
/// used (see the file comment).
enum class read_path {
  bounce, ///< parallel `pread` into pinned bounce buffers, then copies
  mapped, ///< page-cache DMA from a registered read-only mapping (else bounce)
};

/// Name of a read path: "bounce" or "mapped".
constexpr const char *read_path_name(read_path p) noexcept {
  return p == read_path::mapped ? "mapped" : "bounce";
}

/// Settings of `device_file_io`.
struct file_io_options {
  /// Worker threads; 0 = `io::default_io_threads()`.
  unsigned threads = 0;
  /// Bytes per task (> 0); also the size of each pinned bounce buffer.
  std::size_t task_bytes = std::size_t(1) << 20;
  /// Pinned bounce buffers per worker (>= 2, so reads overlap copies).
  unsigned buffers_per_worker = 3;
  /// Reads of fewer bytes go through one pinned buffer on the calling thread.
  std::size_t small_bytes = std::size_t(64) << 10;
  /// GPUDirect Storage: automatic, never (`bounce`) or required.
  gds_mode gds = gds_mode::automatic;
  /// Path of large reads without GDS.
  read_path reads = read_path::bounce;
  /// Mapped path: bytes registered per task (> 0; rounded up to pages).
  std::size_t map_chunk_bytes = std::size_t(32) << 20;
  /// Mapped path: registered chunks in flight per worker (>= 1).
  unsigned map_depth = 2;
  /// Keep the worker threads between calls (woken through a condition
  /// variable) instead of starting them for every call.
  bool persistent_threads = true;
};

/// What one transfer did.
struct file_io_result {
  io_method method = io_method::none; ///< path taken
  std::uint64_t bytes = 0;            ///< bytes transferred
  unsigned threads = 0;               ///< worker threads used (1 for small / GDS)
  /// Why GDS was not used when it was tried (`gds_mode::automatic` with
  /// nvidia-fs loaded); empty otherwise.
  std::string gds_problem;
  /// Why the mapped read path was not used (the bounce path ran instead), or
  /// how many of its chunks could not be registered (copied as pageable
  /// memory); empty otherwise.
  std::string map_problem;
};

namespace detail {

/// Owning plain file descriptor for the GDS path.
struct posix_fd {
  int fd = -1;
  posix_fd() = default;
  posix_fd(const posix_fd &) = delete;
  posix_fd &operator=(const posix_fd &) = delete;
  ~posix_fd() {
    if (fd >= 0)
      ::close(fd);
  }
  /// Opens with O_DIRECT first (what GDS wants), else without.
  bool open(const std::string &path, int flags) {
    fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0)
      fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    return fd >= 0;
  }
};

} // namespace detail

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
      : options_(checked(options)), device_(device), start_(event_on(device)),
        small_done_(event_on(device)) {}

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
    const io::detail::pio_file file = io::detail::pio_open_range(path, offset, bytes);
    file_io_result result;
    if (bytes == 0)
      return result;
    auto *out = static_cast<unsigned char *>(dst);
    if (::resproj::gpu::detail::should_try_gds(
            options_.gds, ::resproj::gpu::detail::nvidia_fs_loaded()) &&
        gds_transfer(path, offset, out, bytes, stream, false, false, result))
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
        mapped_read(path, file, offset, out, bytes, stream, result))
      return result;

    io::parallel_io_options po = pool_options();
    const unsigned n = io::effective_io_threads(po, bytes);
    result.threads = n;
    prepare_workers(n, stream, true);
    std::vector<char> device_set(n, 0);
    po.buffer_provider = [&](unsigned w) { return next_buffer(w, device_set); };
    auto sink = [&](unsigned w, std::uint64_t pos, const void *data, std::size_t len) {
      worker &k = *workers_[w];
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(out + (pos - offset), data, len,
                                       cudaMemcpyHostToDevice, k.copies.get()));
      k.done[k.current].record(k.copies);
    };
    try {
      io::read_range(path, offset, bytes, sink, po);
    } catch (...) {
      join_workers(n, stream, std::nothrow);
      throw;
    }
    join_workers(n, stream);
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
    if (::resproj::gpu::detail::should_try_gds(
            options_.gds, ::resproj::gpu::detail::nvidia_fs_loaded()) &&
        gds_transfer(path, offset, const_cast<unsigned char *>(in), bytes, stream, true,
                     truncate, result))
      return result;

    result.method = io_method::bounce;
    result.bytes = bytes;
    io::parallel_io_options po = pool_options();
    const unsigned n = io::effective_io_threads(po, bytes);
    result.threads = n;
    prepare_workers(n, stream, true);
    std::vector<char> device_set(n, 0);
    po.buffer_provider = [&](unsigned w) { return next_buffer(w, device_set); };
    auto source = [&](unsigned w, std::uint64_t pos, void *buf, std::size_t len) {
      worker &k = *workers_[w];
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(buf, in + (pos - offset), len,
                                       cudaMemcpyDeviceToHost, k.copies.get()));
      k.done[k.current].record(k.copies);
      k.done[k.current].synchronize();
    };
    try {
      io::write_range(path, offset, bytes, source, po, truncate);
    } catch (...) {
      join_workers(n, stream, std::nothrow);
      throw;
    }
    join_workers(n, stream);
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
    for (auto &w : workers_)
      w->copies.synchronize();
    small_done_.synchronize();
  }

private:
  struct worker {
    stream copies;                                     ///< non-blocking, on device_
    std::vector<pinned_buffer<unsigned char>> buffers; ///< bounce (on first use)
    std::vector<event> done;                           ///< last copy from buffers[i]
    event finished;                                    ///< end of this call's copies
    unsigned next = 0;
    unsigned current = 0;
    /// Mapped path: per slot, the chunk's mapping, whether it is registered,
    /// and the end of its copy.
    std::vector<io::file_mapping> mapped;
    std::vector<char> registered;
    std::vector<event> mapped_done;
    unsigned mapped_next = 0;
    explicit worker(int device) : copies(device) {}
  };

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

  static event event_on(int device) {
    device_guard guard(device);
    return event();
  }

  io::parallel_io_options pool_options() {
    io::parallel_io_options po;
    po.threads = options_.threads;
    po.task_bytes = options_.task_bytes;
    po.pool = options_.persistent_threads ? &pool_ : nullptr;
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

  /// Creates missing workers (on the calling thread, device_ current), their
  /// bounce buffers when `buffers`, and orders the first `n` after the work
  /// queued so far on `stream`.
  void prepare_workers(unsigned n, stream_ref stream, bool buffers) {
    while (workers_.size() < n)
      workers_.push_back(std::make_unique<worker>(device_));
    for (unsigned w = 0; w < n && buffers; ++w) {
      worker &k = *workers_[w];
      while (k.buffers.size() < options_.buffers_per_worker) {
        k.buffers.emplace_back(options_.task_bytes);
        k.done.emplace_back();
      }
    }
    start_.record(stream);
    for (unsigned w = 0; w < n; ++w) {
      start_.make_wait(workers_[w]->copies);
      workers_[w]->next = 0;
    }
  }

  /// The next bounce buffer of worker `w`, once its previous copy is done.
  span<unsigned char> next_buffer(unsigned w, std::vector<char> &device_set) {
    if (!device_set[w]) { // worker threads start on device 0
      RESPROJ_CUDA_TRY(cudaSetDevice(device_));
      device_set[w] = 1;
    }
    worker &k = *workers_[w];
    k.current = k.next;
    k.next = (k.next + 1) % unsigned(k.buffers.size());
    k.done[k.current].synchronize();
    return k.buffers[k.current].span();
  }

  void join_workers(unsigned n, stream_ref stream) {
    for (unsigned w = 0; w < n; ++w) {
      workers_[w]->finished.record(workers_[w]->copies);
      workers_[w]->finished.make_wait(stream);
    }
  }
  void join_workers(unsigned n, stream_ref stream, std::nothrow_t) noexcept {
    for (unsigned w = 0; w < n && w < workers_.size(); ++w) {
      RESPROJ_CUDA_TRY_NOTHROW(
          cudaEventRecord(workers_[w]->finished.get(), workers_[w]->copies.get()));
      RESPROJ_CUDA_TRY_NOTHROW(
          cudaStreamWaitEvent(stream.get(), workers_[w]->finished.get(), 0));
    }
  }

  void synchronize_nothrow() noexcept {
    for (auto &w : workers_)
      if (w)
        RESPROJ_CUDA_TRY_NOTHROW(cudaStreamSynchronize(w->copies.get()));
    if (small_done_.get() != nullptr)
      RESPROJ_CUDA_TRY_NOTHROW(cudaEventSynchronize(small_done_.get()));
  }

  /// Whether this device can register read-only host memory; the reason
  /// when not (asked once).
  bool map_supported(std::string &problem) {
    if (map_support_ == 0) {
      int host_register = 0, read_only = 0;
      RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(&host_register,
                                              cudaDevAttrHostRegisterSupported, device_));
      RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(
          &read_only, cudaDevAttrHostRegisterReadOnlySupported, device_));
      map_support_ = host_register && read_only ? 1 : -1;
    }
    if (map_support_ < 0)
      problem = "the device does not support read-only host memory registration";
    return map_support_ > 0;
  }

  /// Page-cache DMA read of the whole range (see the file comment). Returns
  /// false, with `result.map_problem`, when it cannot be used (nothing has
  /// been copied then); throws as `read` otherwise.
  bool mapped_read(const std::string &path, const io::detail::pio_file &file,
                   std::uint64_t offset, unsigned char *out, std::uint64_t bytes,
                   stream_ref stream, file_io_result &result) {
    if (!map_supported(result.map_problem))
      return false;
    const io::mapped_range_plan plan = io::plan_mapped_range(
        offset, bytes, io::host_page_size(), options_.map_chunk_bytes);
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
        ::resproj::gpu::detail::discard_error(probe);
        result.map_problem =
            std::string("cudaHostRegister(read-only) of a file mapping failed: ") +
            cudaGetErrorString(probe);
        return false;
      }
      RESPROJ_CUDA_TRY(cudaHostUnregister(probe_map.data()));
    }

    const unsigned want =
        options_.threads == 0 ? io::default_io_threads() : options_.threads;
    const unsigned n = unsigned(std::min<std::uint64_t>(want, plan.chunks));
    prepare_workers(n, stream, false);
    for (unsigned w = 0; w < n; ++w) {
      worker &k = *workers_[w];
      while (k.mapped.size() < options_.map_depth) {
        k.mapped.emplace_back();
        k.registered.push_back(0);
        k.mapped_done.emplace_back();
      }
      k.mapped_next = 0;
    }
    std::vector<char> device_set(n, 0);
    std::atomic<unsigned> unpinned{0};
    auto task = [&](unsigned w, std::uint64_t t, const std::atomic<bool> &) {
      if (!device_set[w]) { // pool threads may be on another device
        RESPROJ_CUDA_TRY(cudaSetDevice(device_));
        device_set[w] = 1;
      }
      worker &k = *workers_[w];
      const unsigned slot = k.mapped_next;
      k.mapped_next = (slot + 1) % options_.map_depth;
      if (!k.mapped[slot].empty()) { // the slot's previous copy must be done
        k.mapped_done[slot].synchronize();
        if (k.registered[slot]) {
          k.registered[slot] = 0;
          RESPROJ_CUDA_TRY(cudaHostUnregister(k.mapped[slot].data()));
        }
        k.mapped[slot] = io::file_mapping(); // unmapped here, in parallel
      }
      // Each chunk has its own mapping, so that mapping and unmapping (page
      // table set-up and tear-down) are spread over the workers.
      const io::mapped_chunk c = plan.chunk(t);
      std::string problem;
      k.mapped[slot] = io::file_mapping::map_chunk(file.fd(), plan, c, problem);
      if (k.mapped[slot].empty())
        throw io_error("resproj: " + path + ": " + problem + " at offset " +
                       std::to_string(plan.map_offset + c.map_begin));
      unsigned char *base = k.mapped[slot].data();
      const cudaError_t reg =
          cudaHostRegister(base, c.register_bytes, cudaHostRegisterReadOnly);
      if (reg == cudaSuccess) {
        k.registered[slot] = 1;
      } else { // copied as pageable memory (staged by the driver): still correct
        ::resproj::gpu::detail::discard_error(reg);
        unpinned.fetch_add(1, std::memory_order_relaxed);
      }
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(out + c.dst_offset,
                                       base + (c.copy_from - c.map_begin), c.copy_bytes,
                                       cudaMemcpyHostToDevice, k.copies.get()));
      k.mapped_done[slot].record(k.copies);
    };
    try {
      io::detail::run_parallel_tasks(plan.chunks, n, pool_options().pool, task);
    } catch (...) {
      (void)release_mapped(n);
      throw;
    }
    // The last chunks are released by the workers too (in parallel); the
    // pass on this thread then only checks (and releases what a worker could
    // not).
    std::atomic<int> released{cudaSuccess};
    auto release = [&](unsigned, std::uint64_t w, const std::atomic<bool> &) {
      cudaError_t e = RESPROJ_CUDA_TRY_NOTHROW(cudaSetDevice(device_));
      if (e == cudaSuccess)
        e = release_mapped(*workers_[std::size_t(w)]);
      int none = cudaSuccess;
      if (e != cudaSuccess)
        released.compare_exchange_strong(none, int(e));
    };
    try {
      io::detail::run_parallel_tasks(n, n, pool_options().pool, release);
    } catch (...) { // only thread creation can fail here
    }
    cudaError_t err = release_mapped(n);
    if (err == cudaSuccess)
      err = cudaError_t(released.load());
    if (err != cudaSuccess)
      ::resproj::gpu::detail::throw_cuda_error(
          err, "mapped read: copy or cudaHostUnregister", __FILE__, __LINE__);
    join_workers(n, stream);
    result.method = io_method::mapped;
    result.threads = n;
    if (const unsigned u = unpinned.load())
      result.map_problem = std::to_string(u) + " of " + std::to_string(plan.chunks) +
                           " chunks could not be registered (copied as pageable memory)";
    return true;
  }

  /// Waits for all copies of worker `k` (also one whose event could not be
  /// recorded), unregisters and unmaps its chunks; returns the first error
  /// (never throws, so that no registration outlives its mapping).
  static cudaError_t release_mapped(worker &k) noexcept {
    cudaError_t first = RESPROJ_CUDA_TRY_NOTHROW(cudaStreamSynchronize(k.copies.get()));
    for (std::size_t i = 0; i < k.mapped.size(); ++i) {
      if (k.registered[i]) {
        const cudaError_t u =
            RESPROJ_CUDA_TRY_NOTHROW(cudaHostUnregister(k.mapped[i].data()));
        if (first == cudaSuccess)
          first = u;
        k.registered[i] = 0;
      }
      k.mapped[i] = io::file_mapping();
    }
    return first;
  }

  /// `release_mapped` for the first `n` workers, on the calling thread.
  cudaError_t release_mapped(unsigned n) noexcept {
    cudaError_t first = cudaSuccess;
    for (unsigned w = 0; w < n && w < workers_.size(); ++w) {
      const cudaError_t e = release_mapped(*workers_[w]);
      if (first == cudaSuccess)
        first = e;
    }
    return first;
  }

  /// cuFile transfer of the whole range. Returns false (with
  /// `result.gds_problem`) when GDS cannot be used and `gds_mode::automatic`
  /// allows the fallback; throws io_error when it is required.
  bool gds_transfer(const std::string &path, std::uint64_t offset, unsigned char *dev,
                    std::uint64_t bytes, stream_ref stream, bool writing, bool truncate,
                    file_io_result &result) {
    namespace cf = ::resproj::gpu::detail::cufile;
    std::string problem;
    const cf::api &a = cf::api::get();
    detail::posix_fd fd;
    cf::file_handle handle;
    cf::buffer_registration registration;
    if (!a.usable())
      problem = a.problem;
    else if (!fd.open(path, writing ? (O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0))
                                    : O_RDONLY))
      problem = std::string("cannot open: ") + std::strerror(errno);
    else if (handle.open(a, fd.fd, problem))
      (void)registration.open(a, dev, std::size_t(bytes), problem);
    if (!problem.empty()) {
      if (options_.gds == gds_mode::require)
        throw io_error("resproj: " + path + ": GPUDirect Storage required but " +
                       problem);
      result.gds_problem = problem;
      return false;
    }
    stream.synchronize(); // cuFile is not stream-ordered
    std::uint64_t done = 0;
    while (done < bytes) {
      const std::size_t want =
          std::size_t(std::min<std::uint64_t>(bytes - done, 1u << 30));
      const ssize_t got =
          writing ? a.write(handle.get(), dev, want, off_t(offset + done), off_t(done))
                  : a.read(handle.get(), dev, want, off_t(offset + done), off_t(done));
      if (got < 0 && done == 0 && options_.gds == gds_mode::automatic) {
        result.gds_problem = std::string(writing ? "cuFileWrite" : "cuFileRead") +
                             " failed (" + std::to_string(got) + ")";
        return false; // nothing transferred: the bounce path takes over
      }
      if (got <= 0)
        throw io_error(
            "resproj: " + path + ": GPUDirect Storage " +
            (writing ? "cuFileWrite" : "cuFileRead") +
            (got == 0 ? " made no progress" : " failed (" + std::to_string(got) + ")") +
            " at offset " + std::to_string(offset + done));
      done += std::uint64_t(got);
    }
    result.method = io_method::gds;
    result.bytes = bytes;
    result.threads = 1;
    return true;
  }

  file_io_options options_;
  int device_;
  std::mutex mutex_;
  int map_support_ = 0; ///< 0 unknown, 1 yes, -1 no
  event start_;
  std::vector<std::unique_ptr<worker>> workers_;
  pinned_buffer<unsigned char> small_;
  event small_done_;
  io::io_worker_pool pool_; ///< persistent workers (if options_.persistent_threads)
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

// ---------------------------------------------------------------- formats

/// Reads the `.npy` file `path` into a new device buffer (allocated on
/// `io.device()`, ordered on `stream`, after the header has been checked).
/// The payload goes straight to the device when the file's byte order is
/// the host's; big-endian files are converted on the host (then the call
/// also waits for the upload). `header`, if not null, receives the header.
/// @throws io_error as `io::read_npy_header`, or for an element type other
///         than `T` or Fortran order (nothing allocated); as `read`.
template <class T>
device_buffer<T> read_npy_to_device(device_file_io &io, const std::string &path,
                                    stream_ref stream,
                                    ::resproj::io::npy_header *header = nullptr) {
  namespace rio = ::resproj::io;
  detail::require_explicit_stream(stream, "stream");
  rio::npy_header h = rio::read_npy_header(path);
  rio::detail::npyio::check_readable<T>(h, path);
  device_guard guard(io.device());
  device_buffer<T> out(h.num_elements(), stream);
  if (sizeof(T) == 1 || h.order == rio::host_byte_order()) {
    io.read(path, h.data_offset, out, stream);
  } else {
    std::vector<T> host(h.num_elements());
    rio::read_npy(path, span<T>(host.data(), host.size()));
    out.copy_from_host(span<const T>(host.data(), host.size()), stream);
    stream.synchronize(); // host is pageable and goes out of scope
  }
  if (header != nullptr)
    *header = std::move(h);
  return out;
}

/// Writes `src` with `shape` (slowest first) as a C-order little-endian
/// `.npy` file `path` (created or replaced): header from the host, payload
/// from the device. Host-blocking as `device_file_io::write`.
/// @throws invalid_argument ("shape") if it does not hold `src.size()`
///         elements (before the file is touched); io_error as `write`.
template <class T>
file_io_result write_npy_from_device(device_file_io &io, const std::string &path,
                                     const device_buffer<T> &src,
                                     const std::vector<std::size_t> &shape,
                                     stream_ref stream) {
  namespace rio = ::resproj::io;
  static_assert(rio::is_dtype_type_v<T>, "write_npy_from_device: T must map to a dtype");
  static_assert(rio::host_is_little_endian(),
                "the .npy writer assumes a little-endian host");
  detail::require_explicit_stream(stream, "stream");
  const std::string hdr =
      rio::detail::npyio::header_bytes(rio::dtype_of_v<T>, shape, src.size(), "src");
  {
    const rio::detail::pio_file f = rio::detail::pio_file::open_write(path, true);
    f.pwrite_exact(path, hdr.data(), hdr.size(), 0);
  }
  return io.write(path, hdr.size(), src, stream);
}

/// Reads the NIfTI-1 image `path` into a new `device_image<T>` (geometry
/// from the header). float32/float64 data in host byte order, unscaled and
/// with no reversed axis, go straight to the device; anything else is
/// converted on the host by `io::read_nifti` and uploaded (the call then
/// also waits for the upload).
/// @throws io_error as `io::read_nifti_header` (before anything is
///         allocated); as `read`.
template <class T>
device_image<T> read_nifti_to_device(device_file_io &io, const std::string &path,
                                     stream_ref stream) {
  namespace rio = ::resproj::io;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "read_nifti_to_device: T must be float or double");
  detail::require_explicit_stream(stream, "stream");
  const rio::nifti_image_info info = rio::read_nifti_header(path);
  device_guard guard(io.device());
  device_image<T> image(info.geometry(), stream);
  const bool direct = info.type == rio::dtype_of_v<T> &&
                      info.order == rio::host_byte_order() && !info.scaled &&
                      !info.flipped[0] && !info.flipped[1] && !info.flipped[2];
  if (direct) {
    io.read(path, info.vox_offset, image.data(), info.data_bytes, stream);
  } else {
    std::vector<T> host(image.size());
    rio::read_nifti(path, span<T>(host.data(), host.size()));
    image.upload(span<const T>(host.data(), host.size()), stream);
    stream.synchronize(); // host is pageable and goes out of scope
  }
  return image;
}

/// Writes `image` as the NIfTI-1 file `path` (as `io::write_nifti`: header
/// from the host, voxels from the device). Host-blocking as `write`.
/// @throws invalid_argument as `io::write_nifti` (before the file is
///         touched); io_error as `write`.
template <class T>
file_io_result write_nifti_from_device(device_file_io &io, const std::string &path,
                                       const device_image<T> &image, stream_ref stream) {
  namespace rio = ::resproj::io;
  detail::require_explicit_stream(stream, "stream");
  const auto hdr =
      rio::detail::nifti_header_bytes<T>(image.geometry(), image.size(), "image");
  {
    const rio::detail::pio_file f = rio::detail::pio_file::open_write(path, true);
    f.pwrite_exact(path, hdr.data(), hdr.size(), 0);
  }
  return io.write(path, hdr.size(), image.buffer(), stream);
}

/// Reads every event of the list-mode file `path` into a new device buffer.
/// @throws io_error as `io::count_listmode_events` (size not a multiple of
///         10 bytes etc., before anything is allocated); as `read`.
inline device_buffer<scanner::listmode_event>
read_listmode_to_device(device_file_io &io, const std::string &path, stream_ref stream) {
  detail::require_explicit_stream(stream, "stream");
  const std::uint64_t n = ::resproj::io::count_listmode_events(path);
  device_guard guard(io.device());
  device_buffer<scanner::listmode_event> out(std::size_t(n), stream);
  io.read(path, 0, out, stream);
  return out;
}

/// Writes `events` to the list-mode file `path` (created or replaced).
/// Host-blocking as `write`. @throws as `write`.
inline file_io_result
write_listmode_from_device(device_file_io &io, const std::string &path,
                           const device_buffer<scanner::listmode_event> &events,
                           stream_ref stream) {
  return io.write(path, 0, events, stream, true);
}

/// Writes `src` as a raw array to `path` (created or replaced), host byte
/// order. Host-blocking as `write`. @throws as `write`.
template <class T>
file_io_result write_raw_from_device(device_file_io &io, const std::string &path,
                                     const device_buffer<T> &src, stream_ref stream) {
  return io.write(path, 0, src, stream, true);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
