/// @file
/// @brief Read-only memory mapping of a byte range of a file, split into
/// page-aligned chunks: the host side of the page-cache DMA read path of
/// `gpu::device_file_io` (each chunk is registered with the driver and copied
/// straight to the device). Standard library and POSIX only.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/parallel_io_options.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// The host page size (4096 if the system does not say).
inline std::size_t host_page_size() noexcept {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? std::size_t(p) : std::size_t(4096);
}

/// One chunk of a `mapped_range_plan`: which part of the mapping to register
/// and which bytes of it to copy where.
struct mapped_chunk {
  std::size_t map_begin = 0;      ///< first mapped byte of the chunk (page-aligned)
  std::size_t register_bytes = 0; ///< bytes to register from `map_begin` (whole pages)
  std::size_t copy_from = 0;      ///< first byte to copy, offset in the mapping
  std::size_t copy_bytes = 0;     ///< bytes to copy
  std::uint64_t dst_offset = 0;   ///< where they go, offset from the range start
};

/// How `[offset, offset + bytes)` of a file is mapped and split: the mapping
/// starts at the page boundary at or below `offset` (`lead` bytes earlier)
/// and covers `lead + bytes` bytes; chunks of `chunk_bytes` (whole pages)
/// tile it, the first one skipping the `lead` bytes before the range.
struct mapped_range_plan {
  std::uint64_t map_offset = 0; ///< file offset of the mapping (page-aligned)
  std::size_t lead = 0;         ///< bytes mapped before `offset`
  std::size_t map_length = 0;   ///< `lead + bytes`
  std::size_t page = 0;         ///< page size used
  std::size_t chunk_bytes = 0;  ///< chunk size (a multiple of `page`)
  std::uint64_t chunks = 0;     ///< number of chunks (0 for an empty range)

  /// Chunk `t` (< `chunks`).
  mapped_chunk chunk(std::uint64_t t) const noexcept {
    mapped_chunk c;
    c.map_begin = std::size_t(t) * chunk_bytes;
    const std::size_t end = std::min(c.map_begin + chunk_bytes, map_length);
    c.register_bytes = (end - c.map_begin + page - 1) / page * page;
    c.copy_from = t == 0 ? lead : c.map_begin;
    c.copy_bytes = end - c.copy_from;
    c.dst_offset = std::uint64_t(c.copy_from - lead);
    return c;
  }
};

/// Plans the mapping of `[offset, offset + bytes)` with pages of `page`
/// bytes and chunks of at least `chunk_bytes` (rounded up to whole pages).
/// @throws invalid_argument ("page") unless a power of two, ("chunk_bytes")
///         for 0, ("offset + bytes") for a range past the largest file offset
///         or one that does not fit the address space.
inline mapped_range_plan plan_mapped_range(std::uint64_t offset, std::uint64_t bytes,
                                           std::size_t page, std::size_t chunk_bytes) {
  if (page == 0 || (page & (page - 1)) != 0)
    resproj::detail::throw_invalid("page", "must be a power of two (got " +
                                               std::to_string(page) + ")");
  if (chunk_bytes == 0)
    resproj::detail::throw_invalid("chunk_bytes", "must be > 0");
  check_file_range(offset, bytes);
  mapped_range_plan p;
  p.page = page;
  p.map_offset = offset - offset % page;
  p.lead = std::size_t(offset - p.map_offset);
  if (bytes > std::uint64_t(SIZE_MAX) - p.lead - page)
    resproj::detail::throw_invalid("offset + bytes", "range too large to map");
  p.map_length = std::size_t(bytes) + p.lead;
  p.chunk_bytes = chunk_bytes > SIZE_MAX - page ? chunk_bytes / page * page
                                                : (chunk_bytes + page - 1) / page * page;
  p.chunks = bytes == 0 ? 0 : io_task_count(p.map_length, p.chunk_bytes);
  return p;
}

/// Owning read-only shared mapping (`MAP_SHARED`, `PROT_READ`) of a file
/// range; unmapped on destruction. The bytes are the page cache's: a later
/// write to the file is seen, and truncating the file under a mapping makes
/// access past the new end raise SIGBUS.
class file_mapping {
public:
  file_mapping() = default;
  file_mapping(const file_mapping &) = delete;
  file_mapping &operator=(const file_mapping &) = delete;
  file_mapping(file_mapping &&o) noexcept
      : base_(std::exchange(o.base_, nullptr)), length_(std::exchange(o.length_, 0)) {}
  file_mapping &operator=(file_mapping &&o) noexcept {
    if (this != &o) {
      unmap();
      base_ = std::exchange(o.base_, nullptr);
      length_ = std::exchange(o.length_, 0);
    }
    return *this;
  }
  ~file_mapping() { unmap(); }

  /// Maps `plan.map_length` bytes of the open file `fd` from
  /// `plan.map_offset`. Returns an empty mapping and sets `problem` (the
  /// system's reason) if `mmap` fails; an empty plan maps nothing.
  static file_mapping map(int fd, const mapped_range_plan &plan, std::string &problem) {
    return map_bytes(fd, plan.map_offset, plan.map_length, problem);
  }

  /// Maps the `c.register_bytes` bytes (whole pages) of chunk `c` of `plan`
  /// of the open file `fd`; the chunk's bytes to copy then start at
  /// `data() + (c.copy_from - c.map_begin)`. Returns an empty mapping and
  /// sets `problem` if `mmap` fails.
  static file_mapping map_chunk(int fd, const mapped_range_plan &plan,
                                const mapped_chunk &c, std::string &problem) {
    return map_bytes(fd, plan.map_offset + c.map_begin, c.register_bytes, problem);
  }

  unsigned char *data() const noexcept { return base_; }
  std::size_t size() const noexcept { return length_; }
  bool empty() const noexcept { return base_ == nullptr; }

private:
  static file_mapping map_bytes(int fd, std::uint64_t file_offset, std::size_t length,
                                std::string &problem) {
    file_mapping m;
    if (length == 0)
      return m;
    void *p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, off_t(file_offset));
    if (p == MAP_FAILED) {
      problem = std::string("mmap failed: ") + std::strerror(errno);
      return m;
    }
    m.base_ = static_cast<unsigned char *>(p);
    m.length_ = length;
    return m;
  }

  void unmap() noexcept {
    if (base_ != nullptr)
      ::munmap(base_, length_);
    base_ = nullptr;
    length_ = 0;
  }

  unsigned char *base_ = nullptr;
  std::size_t length_ = 0;
};

} // namespace io
RESPROJ_NAMESPACE_END
