/// @file
/// @brief Settings and results of the device file transfers:
/// `file_io_options` (threads, task and buffer sizes, GPUDirect Storage
/// mode, read path), `read_path` and `file_io_result` (which path ran and
/// why another did not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/gpu/detail/cufile.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// How reads of at least `small_bytes` travel when GPUDirect Storage is not
/// used (gpu/file_io_bounce.cuh, gpu/file_io_mapped.cuh).
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

} // namespace gpu
RESPROJ_NAMESPACE_END
