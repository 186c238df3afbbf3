/// @file
/// @brief `pinned_buffer<T>`: owning page-locked host memory, and `is_pinned`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// `true` if `pointer` points into page-locked host memory (allocated with
/// `cudaMallocHost`/`cudaHostAlloc`, e.g. a `pinned_buffer`, or registered
/// with `cudaHostRegister`), so copies from/to it are truly asynchronous and
/// need no staging. `false` for null, pageable host memory and device or
/// managed memory. Does not block.
/// @throws gpu_error if the runtime cannot be initialised.
inline bool is_pinned(const void *pointer) { return query_pointer(pointer).pinned_host; }

/// Owning page-locked ("pinned") host memory for fast, truly asynchronous
/// transfers (`cudaHostAlloc` with `cudaHostAllocPortable`, so it counts as
/// pinned for every device). Move-only; elements are uninitialised after
/// construction; usable like a host array (`operator[]`, `begin`/`end`,
/// spans).
///
/// Allocation and release are slow, host-blocking calls: keep pinned buffers
/// for the life of a computation, do not create them per call.
/// `cudaFreeHost` in the destructor may block the host until outstanding
/// device work has finished; and the caller must make sure no queued copy
/// still uses the memory (synchronise the stream first). Both calls are
/// classed by CUDA as unsafe during graph capture; resproj makes them with the
/// thread's capture mode switched to relaxed, so that constructing or
/// destroying a pinned buffer while a capture is in progress (on this thread
/// or another) neither fails nor invalidates that capture. A graph that
/// copies from or to a pinned buffer must not be launched after the buffer is
/// destroyed.
///
/// Thread safety: like a standard container (distinct objects independent;
/// concurrent const access fine; modification needs exclusive access).
template <class T> class pinned_buffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "pinned_buffer<T> needs a trivially copyable T");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,
                "pinned_buffer<T> needs a non-const, non-volatile T");

public:
  using value_type = T;
  using iterator = T *;
  using const_iterator = const T *;

  /// Empty buffer (no runtime call).
  pinned_buffer() noexcept = default;

  /// Allocates `count` elements of pinned host memory (uninitialised);
  /// `count == 0` allocates nothing. Blocks the host for the allocation.
  /// @throws invalid_argument("count") if the byte size overflows;
  ///         gpu_out_of_memory / gpu_error on runtime failure.
  explicit pinned_buffer(std::size_t count) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw invalid_argument("count",
                             std::to_string(count) + " elements overflow the byte size");
    if (count == 0)
      return;
    void *pointer = nullptr;
    {
      detail::relaxed_capture_scope relaxed;
      RESPROJ_CUDA_TRY(cudaHostAlloc(&pointer, count * sizeof(T), cudaHostAllocPortable));
    }
    data_ = static_cast<T *>(pointer);
    size_ = count;
  }

  /// `cudaFreeHost`; may block the host (class comment); never throws.
  ~pinned_buffer() { release_storage(); }

  pinned_buffer(const pinned_buffer &) = delete;
  pinned_buffer &operator=(const pinned_buffer &) = delete;

  /// Takes `other`'s memory; `other` becomes empty.
  pinned_buffer(pinned_buffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {
  }

  /// Frees the current memory (may block), then takes `other`'s.
  pinned_buffer &operator=(pinned_buffer &&other) noexcept {
    if (this != &other) {
      release_storage();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  T *data() noexcept { return data_; }
  const T *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }

  /// Unchecked element access.
  T &operator[](std::size_t i) noexcept { return data_[i]; }
  const T &operator[](std::size_t i) const noexcept { return data_[i]; }

  T *begin() noexcept { return data_; }
  T *end() noexcept { return data_ + size_; }
  const T *begin() const noexcept { return data_; }
  const T *end() const noexcept { return data_ + size_; }
  const T *cbegin() const noexcept { return data_; }
  const T *cend() const noexcept { return data_ + size_; }

  /// All elements as a host span.
  ::resproj::span<T> span() noexcept { return ::resproj::span<T>(data_, size_); }
  ::resproj::span<const T> span() const noexcept {
    return ::resproj::span<const T>(data_, size_);
  }
  ::resproj::span<const T> cspan() const noexcept {
    return ::resproj::span<const T>(data_, size_);
  }

private:
  void release_storage() noexcept {
    if (data_ != nullptr) {
      detail::relaxed_capture_scope relaxed;
      RESPROJ_CUDA_TRY_NOTHROW(cudaFreeHost(data_));
    }
    data_ = nullptr;
    size_ = 0;
  }

  T *data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
