/// @file
/// @brief Large scratch files for the I/O benchmarks: size and directory
/// from the environment, created once and reused, and dropping a file from
/// the page cache (no root needed).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resproj/core/errors.hpp"

namespace resproj_bench {

/// Bytes of the benchmark file: `RESPROJ_BENCH_IO_BYTES` (a positive
/// integer, optionally with a K/M/G suffix, powers of 1024) or 4 GiB.
inline std::uint64_t io_bench_bytes() {
  const std::uint64_t fallback = std::uint64_t(4) << 30;
  const char *env = std::getenv("RESPROJ_BENCH_IO_BYTES");
  if (env == nullptr || *env == '\0')
    return fallback;
  char *end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  std::uint64_t scale = 1;
  if (end && (*end == 'K' || *end == 'k'))
    scale = 1 << 10;
  else if (end && (*end == 'M' || *end == 'm'))
    scale = 1 << 20;
  else if (end && (*end == 'G' || *end == 'g'))
    scale = std::uint64_t(1) << 30;
  if (end == env || v == 0 || (scale != 1 && end[1] != '\0') ||
      (scale == 1 && *end != '\0'))
    return fallback;
  return std::uint64_t(v) * scale;
}

/// Directory for benchmark files: `RESPROJ_BENCH_DIR` or /tmp.
inline std::string io_bench_dir() {
  const char *env = std::getenv("RESPROJ_BENCH_DIR");
  return env && *env ? std::string(env) : std::string("/tmp");
}

/// Makes sure `path` is a regular file of exactly `bytes` bytes (a byte
/// pattern, not zeros, so no file system can keep it sparse); an existing
/// file of that size is reused as it is.
/// @throws resproj::io_error if it cannot be created or written.
inline void ensure_io_bench_file(const std::string &path, std::uint64_t bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      std::uint64_t(st.st_size) == bytes)
    return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw resproj::io_error("resproj bench: cannot create " + path + ": " +
                            std::strerror(errno));
  std::vector<std::uint64_t> block((std::size_t(64) << 20) / 8);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  std::uint64_t done = 0;
  while (done < bytes) {
    for (auto &w : block) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
    const std::size_t n =
        std::size_t(std::min<std::uint64_t>(bytes - done, block.size() * 8));
    std::size_t put = 0;
    while (put < n) {
      const ssize_t r = ::pwrite(fd, reinterpret_cast<const char *>(block.data()) + put,
                                 n - put, off_t(done + put));
      if (r <= 0) {
        if (r < 0 && errno == EINTR)
          continue;
        const int e = errno;
        ::close(fd);
        throw resproj::io_error("resproj bench: cannot write " + path + ": " +
                                std::strerror(e));
      }
      put += std::size_t(r);
    }
    done += n;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    throw resproj::io_error("resproj bench: cannot finish " + path);
}

/// Drops `path` from the page cache: fsync (dirty pages cannot be dropped),
/// then posix_fadvise(POSIX_FADV_DONTNEED) over the whole file. Works
/// without root. Returns false if a step failed (the run is then warm).
inline bool drop_from_page_cache(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = ::fsync(fd) == 0 || errno == EINVAL; // some file systems refuse fsync
  ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 && ok;
  ::close(fd);
  return ok;
}

} // namespace resproj_bench
