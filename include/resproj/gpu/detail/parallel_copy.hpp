/// @file
/// @brief `parallel_copier`: large host copies (pageable caller arrays into
/// pinned staging) split among the threads of a `thread_pool`, since one
/// thread's `memcpy` does not reach the bus bandwidth. Plain C++17.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "resproj/core/config.hpp"
#include "resproj/core/thread_pool.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Copies blocks with `workers + 1` threads (the caller takes one share),
/// the `workers` extra ones being persistent threads of its own
/// `thread_pool`, started at construction. Calls of `copy` on one object are
/// serialised.
class parallel_copier {
public:
  /// @param workers extra threads (0: copies run on the caller alone)
  /// @throws std::system_error if a thread cannot be started.
  explicit parallel_copier(unsigned workers) : pool_(workers), workers_(workers) {}
  parallel_copier(const parallel_copier &) = delete;
  parallel_copier &operator=(const parallel_copier &) = delete;

  /// Copies `bytes` from `src` to `dst` (non-overlapping); returns when done.
  void copy(void *dst, const void *src, std::size_t bytes) {
    if (bytes == 0)
      return; // memcpy needs valid pointers even for 0 bytes
    if (workers_ == 0 || bytes < min_parallel_bytes) {
      std::memcpy(dst, src, bytes);
      return;
    }
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    const std::size_t shares = std::size_t(workers_) + 1;
    // 64-byte aligned boundaries between shares.
    const std::size_t per = ((bytes / shares) + 63) & ~std::size_t(63);
    pool_.run(workers_ + 1, [&](unsigned share) {
      const std::size_t first = std::min(bytes, std::size_t(share) * per);
      const std::size_t last = std::min(bytes, first + per);
      if (last > first)
        std::memcpy(d + first, s + first, last - first);
    });
  }

  /// Below this size one thread copies alone (waking threads costs more).
  static constexpr std::size_t min_parallel_bytes = std::size_t(1) << 20;

private:
  thread_pool pool_;
  unsigned workers_;
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
