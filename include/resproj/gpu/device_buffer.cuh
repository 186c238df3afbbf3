/// @file
/// @brief `device_buffer<T>`: owning, stream-ordered, typed device memory,
/// and `make_device_buffer`. Its fill and its capture-aware allocation and
/// release live in gpu/detail/buffer_fill.cuh and gpu/buffer_storage.cuh
/// (both included).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/buffer_storage.cuh"
#include "resproj/gpu/detail/buffer_fill.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
/// Owning, typed device memory, allocated and freed in stream order
/// (`cudaMallocAsync`/`cudaFreeAsync`) on the stream it was created with,
/// from the device's memory pool (see memory_pool.cuh). Move-only. Contents
/// are uninitialised after construction.
///
/// **Device and stream.** A buffer lives on the device current at
/// construction and remembers its stream; operations without a stream
/// argument use that stream. Using the buffer on another stream is allowed,
/// but ordering it against the buffer's own stream (an `event`) is the
/// caller's job, including before destruction: the free is queued on the
/// buffer's stream. The stream must outlive the buffer (for a buffer
/// destroyed during capture: until its parked free is drained, see below).
/// `cudaStreamPerThread` means the per-thread stream of whichever thread makes
/// the call.
///
/// **Copies** are queued on the stream and return at once. From/to pinned
/// host memory (`pinned_buffer`) they are truly asynchronous: the host array
/// must stay untouched until the stream reaches the copy. From/to pageable
/// host memory the CUDA runtime stages the data, and the call effectively
/// blocks the host until the copy is done (for device-to-host, until the
/// stream's earlier work and the copy are done). Sizes are checked, and bad
/// arguments rejected, before anything is queued.
///
/// **Destruction** never throws and never blocks; it frees on the buffer's
/// own device and stream. Graph capture (checked with
/// `cudaStreamGetCaptureInfo`, legal during capture) is handled as follows,
/// leaving no stale error and no broken capture:
/// - buffer created *during* the capture that is still active on its stream
///   (a graph allocation: `cudaMallocAsync` was recorded as an allocation
///   node): the free is recorded as a free node, so the graph allocates and
///   frees it on every launch and can be relaunched. This is the scoped
///   temporary inside a captured region.
/// - buffer created *before* the capture (ordinary pool memory): a free node
///   may only free graph allocations, and freeing on another stream would not
///   be ordered after the work already queued on the buffer's stream. So the
///   allocation is *parked* on a process-wide list and freed, stream-ordered
///   on the buffer's own stream, by the next operation that finds that stream
///   not capturing: a `device_buffer` allocation or destruction on that
///   stream, destruction of the owning `gpu::stream`, or
///   `flush_deferred_frees(stream)`. Work captured into the graph must not
///   use the buffer's memory after the parked free has run (as for any
///   buffer a graph uses: it must outlive the graph's launches).
/// - capture invalidated by an earlier error: as above, except that a graph
///   allocation of that capture is simply forgotten (it dies with the graph).
/// - a graph allocation destroyed after its capture ended is freed on its
///   stream; CUDA requires that the graph has been launched before then.
/// - buffer of a stream that is *not* capturing while other streams (of any
///   thread) capture in global mode: allocated and freed normally, in relaxed
///   capture mode, so those captures are not invalidated (CUDA otherwise
///   refuses `cudaMallocAsync`/`cudaFreeAsync` then). Copies and fills on
///   such a stream get no such treatment.
/// If the buffer's stream was destroyed first (a caller error), the capture
/// query fails and the allocation is leaked rather than freed on a dead
/// handle.
///
/// Thread safety: like a standard container. Distinct buffers are
/// independent; const member functions of one buffer may be called from
/// several threads; anything that modifies the object (assignment,
/// destruction) needs exclusive access. Queued device work is ordered by the
/// stream, not by the host thread that queued it.
template <class T> class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "device_buffer<T> needs a trivially copyable T");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,
                "device_buffer<T> needs a non-const, non-volatile T");

public:
  using value_type = T;

  /// Empty buffer: no device, no stream, `data() == nullptr`. No runtime call.
  device_buffer() noexcept = default;

  /// Allocates `count` elements (uninitialised), stream-ordered on `s`, on the
  /// current device; `count == 0` allocates nothing (`data() == nullptr`) but
  /// still records device and stream. Before the first allocation on a
  /// device the pool's release threshold is configured (memory_pool.cuh).
  /// The memory may be used by work queued on `s` at once, and by other
  /// streams after an event or synchronisation. Does not block; capturable
  /// (becomes a graph allocation node).
  /// @param count  number of elements
  /// @param s      stream the buffer is allocated and freed on; must belong to
  ///               the current device; never the legacy default stream
  /// @throws invalid_argument("stream") for the legacy default stream or a
  ///         stream of another device; invalid_argument("count") if the byte
  ///         size overflows; gpu_out_of_memory when the device is full;
  ///         gpu_error for other runtime failures.
  device_buffer(std::size_t count, stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw invalid_argument("count",
                             std::to_string(count) + " elements overflow the byte size");
    const detail::stream_ordered_allocation a =
        detail::allocate_stream_ordered(count * sizeof(T), s);
    data_ = static_cast<T *>(a.pointer);
    size_ = count;
    device_ = a.device;
    stream_ = a.stream;
    capture_id_ = a.capture_id;
  }

  /// Frees stream-ordered on the buffer's stream and device; never throws,
  /// never blocks; safe during graph capture (see the class comment).
  ~device_buffer() { release_storage(); }

  device_buffer(const device_buffer &) = delete;
  device_buffer &operator=(const device_buffer &) = delete;

  /// Takes `other`'s allocation; `other` becomes empty (keeping neither
  /// device nor stream). No runtime call.
  device_buffer(device_buffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
        device_(std::exchange(other.device_, -1)),
        stream_(std::exchange(other.stream_, nullptr)),
        capture_id_(std::exchange(other.capture_id_, 0)) {}

  /// Frees the current allocation (as the destructor does), then takes
  /// `other`'s; `other` becomes empty. Never throws.
  device_buffer &operator=(device_buffer &&other) noexcept {
    if (this != &other) {
      release_storage();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      device_ = std::exchange(other.device_, -1);
      stream_ = std::exchange(other.stream_, nullptr);
      capture_id_ = std::exchange(other.capture_id_, 0);
    }
    return *this;
  }

  // ---- observers (no runtime calls) ---------------------------------------

  T *data() noexcept { return data_; }
  const T *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  /// Device the buffer lives on (-1 for a default-constructed or moved-from
  /// buffer).
  int device() const noexcept { return device_; }
  /// Stream the buffer is allocated and freed on (null handle for a
  /// default-constructed or moved-from buffer).
  stream_ref stream() const noexcept { return stream_ref(stream_); }

  /// All elements as a device span (for kernels and compute calls).
  ::resproj::span<T> span() noexcept { return ::resproj::span<T>(data_, size_); }
  ::resproj::span<const T> span() const noexcept {
    return ::resproj::span<const T>(data_, size_);
  }
  ::resproj::span<const T> cspan() const noexcept {
    return ::resproj::span<const T>(data_, size_);
  }
  /// Same as `span()` / `cspan()`.
  ::resproj::span<T> view() noexcept { return span(); }
  ::resproj::span<const T> view() const noexcept { return cspan(); }
  ::resproj::span<const T> cview() const noexcept { return cspan(); }

  // ---- host -> device ---------------------------------------------------------

  /// Queues a copy of `count` elements from host `src` to elements
  /// `[offset, offset + count)` on `s`. Pinned `src`: asynchronous; pageable
  /// `src`: effectively blocks until copied (class comment). Capturable.
  /// @throws invalid_argument("stream"|"offset"|"count"|"src") before
  ///         anything is queued; gpu_error on runtime failure.
  void copy_from_host(const T *src, std::size_t count, std::size_t offset, stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    upload(src, count, offset, s);
  }
  /// As above, on the buffer's own stream.
  void copy_from_host(const T *src, std::size_t count, std::size_t offset = 0) {
    upload(src, count, offset, stream());
  }
  /// Copies the first `size()` elements of `src` into the whole buffer.
  /// @throws invalid_argument("src") if `src` holds fewer than `size()`
  ///         elements (or is null), before anything is queued.
  void copy_from_host(::resproj::span<const T> src, stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (src.size() < size_)
      throw_too_small("src", src.size(), size_);
    upload(src.data(), size_, 0, s);
  }
  /// As above, on the buffer's own stream.
  void copy_from_host(::resproj::span<const T> src) {
    if (src.size() < size_)
      throw_too_small("src", src.size(), size_);
    upload(src.data(), size_, 0, stream());
  }
  /// Copies `src[0, count)` into elements `[offset, offset + count)`.
  /// @throws invalid_argument("src") if `src` holds fewer than `count`
  ///         elements; ("offset"|"count") if the range exceeds the buffer.
  void copy_from_host(::resproj::span<const T> src, std::size_t count, std::size_t offset,
                      stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (src.size() < count)
      throw_too_small("src", src.size(), count);
    upload(src.data(), count, offset, s);
  }

  // ---- device -> host ---------------------------------------------------------

  /// Queues a copy of elements `[offset, offset + count)` to host `dst` on
  /// `s`. Pinned `dst`: asynchronous (read `dst` after synchronising);
  /// pageable `dst`: effectively blocks until copied. Capturable.
  /// @throws invalid_argument("stream"|"offset"|"count"|"dst") before
  ///         anything is queued; gpu_error on runtime failure.
  void copy_to_host(T *dst, std::size_t count, std::size_t offset, stream_ref s) const {
    detail::require_explicit_stream(s, "stream");
    download(dst, count, offset, s);
  }
  /// As above, on the buffer's own stream.
  void copy_to_host(T *dst, std::size_t count, std::size_t offset = 0) const {
    download(dst, count, offset, stream());
  }
  /// Copies the whole buffer into the first `size()` elements of `dst`.
  /// @throws invalid_argument("dst") if `dst` holds fewer than `size()`
  ///         elements (or is null), before anything is queued; `dst` is
  ///         left untouched.
  void copy_to_host(::resproj::span<T> dst, stream_ref s) const {
    detail::require_explicit_stream(s, "stream");
    if (dst.size() < size_)
      throw_too_small("dst", dst.size(), size_);
    download(dst.data(), size_, 0, s);
  }
  /// As above, on the buffer's own stream.
  void copy_to_host(::resproj::span<T> dst) const {
    if (dst.size() < size_)
      throw_too_small("dst", dst.size(), size_);
    download(dst.data(), size_, 0, stream());
  }
  /// Copies elements `[offset, offset + count)` into `dst[0, count)`.
  /// @throws invalid_argument("dst") if `dst` holds fewer than `count`
  ///         elements; ("offset"|"count") if the range exceeds the buffer.
  void copy_to_host(::resproj::span<T> dst, std::size_t count, std::size_t offset,
                    stream_ref s) const {
    detail::require_explicit_stream(s, "stream");
    if (dst.size() < count)
      throw_too_small("dst", dst.size(), count);
    download(dst.data(), count, offset, s);
  }

  // ---- fill -------------------------------------------------------------------

  /// Queues "every element = `value`" on `s`: `cudaMemsetAsync` when all
  /// bytes of `value` are equal (e.g. zero), else a small fill kernel. Never
  /// synchronises; capturable.
  /// @throws invalid_argument("stream"); gpu_error on runtime failure.
  void fill(T value, stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (size_ == 0)
      return;
    device_guard guard(device_);
    detail::fill_async(data_, size_, value, s.get());
  }
  /// As above, on the buffer's own stream (no-op for an empty buffer).
  void fill(T value) {
    if (size_ != 0)
      fill(value, stream());
  }
  /// Queues "all bytes = 0" (`cudaMemsetAsync`) on `s`. Never synchronises;
  /// capturable.
  /// @throws invalid_argument("stream"); gpu_error on runtime failure.
  void zero(stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (size_ == 0)
      return;
    device_guard guard(device_);
    RESPROJ_CUDA_TRY(cudaMemsetAsync(data_, 0, size_bytes(), s.get()));
  }
  /// As above, on the buffer's own stream (no-op for an empty buffer).
  void zero() {
    if (size_ != 0)
      zero(stream());
  }

private:
  [[noreturn]] static void throw_too_small(const char *argument, std::size_t holds,
                                           std::size_t needs) {
    throw invalid_argument(argument, "too small: holds " + std::to_string(holds) +
                                         " elements, needs " + std::to_string(needs));
  }

  void check_range(std::size_t count, std::size_t offset) const {
    if (offset > size_)
      throw invalid_argument("offset", std::to_string(offset) +
                                           " is past the end of a buffer of " +
                                           std::to_string(size_) + " elements");
    if (count > size_ - offset)
      throw invalid_argument("count", std::to_string(count) + " elements from offset " +
                                          std::to_string(offset) +
                                          " exceed a buffer of " + std::to_string(size_) +
                                          " elements");
  }

  void upload(const T *src, std::size_t count, std::size_t offset, stream_ref s) {
    check_range(count, offset);
    if (count == 0)
      return;
    if (src == nullptr)
      throw invalid_argument("src", "null pointer with count " + std::to_string(count));
    detail::require_explicit_stream(s, "stream");
    device_guard guard(device_);
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(data_ + offset, src, count * sizeof(T),
                                     cudaMemcpyHostToDevice, s.get()));
  }

  void download(T *dst, std::size_t count, std::size_t offset, stream_ref s) const {
    check_range(count, offset);
    if (count == 0)
      return;
    if (dst == nullptr)
      throw invalid_argument("dst", "null pointer with count " + std::to_string(count));
    detail::require_explicit_stream(s, "stream");
    device_guard guard(device_);
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, data_ + offset, count * sizeof(T),
                                     cudaMemcpyDeviceToHost, s.get()));
  }

  void release_storage() noexcept {
    if (data_ != nullptr)
      detail::free_stream_ordered(data_, device_, stream_, capture_id_);
    data_ = nullptr;
    size_ = 0;
  }

  T *data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  unsigned long long capture_id_ = 0; // capture sequence of the allocation
};

/// Allocates a buffer of `host.size()` elements on `s` (current device) and
/// queues the upload of `host` (asynchronous for pinned `host`, effectively
/// blocking for pageable `host`, see `device_buffer`).
/// @throws invalid_argument("host") for a null span with non-zero size,
///         before anything is allocated; otherwise as `device_buffer`'s
///         constructor and `copy_from_host`.
template <class T>
device_buffer<std::remove_const_t<T>> make_device_buffer(::resproj::span<T> host,
                                                         stream_ref s) {
  using value_type = std::remove_const_t<T>;
  if (host.size() != 0 && host.data() == nullptr)
    throw invalid_argument("host",
                           "null pointer with size " + std::to_string(host.size()));
  device_buffer<value_type> buffer(host.size(), s);
  buffer.copy_from_host(::resproj::span<const value_type>(host.data(), host.size()), s);
  return buffer;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
