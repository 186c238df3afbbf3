/// @file
/// @brief `positional_file`: an owning POSIX file descriptor of a regular
/// file with whole-buffer positional reads and writes (`pread` / `pwrite`,
/// retried until done), the handle of the parallel readers and writers.
/// Standard library and POSIX only.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Checks that the byte range `[offset, offset + bytes)` neither overflows
/// nor goes past the largest file offset (`off_t`).
/// @throws invalid_argument ("offset + bytes") if it does.
inline void check_file_range(std::uint64_t offset, std::uint64_t bytes) {
  const std::uint64_t max = std::uint64_t(std::numeric_limits<off_t>::max());
  if (offset > max || bytes > max - offset)
    resproj::detail::throw_invalid("offset + bytes",
                                   "range [" + std::to_string(offset) + ", +" +
                                       std::to_string(bytes) +
                                       ") exceeds the largest file offset");
}

/// Owning file descriptor of a regular file, opened without blocking (a
/// FIFO is rejected at once instead of waiting for a writer). Reads and
/// writes are positional, so several threads may use one handle at once.
/// Every error is an `io_error` whose message names the file.
class positional_file {
public:
  positional_file() = default;
  positional_file(const positional_file &) = delete;
  positional_file &operator=(const positional_file &) = delete;
  positional_file(positional_file &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  positional_file &operator=(positional_file &&o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~positional_file() { close(); }

  /// The descriptor (-1 when empty); still owned by this object.
  int fd() const noexcept { return fd_; }

  /// Opens `path` for reading.
  /// @param path      the file
  /// @param size_out  receives the file size in bytes
  /// @throws io_error if the file is missing, unreadable, a directory or not
  ///         a regular file.
  static positional_file open_read(const std::string &path, std::uint64_t &size_out) {
    positional_file f;
    do
      f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    while (f.fd_ < 0 && errno == EINTR);
    if (f.fd_ < 0)
      throw_errno(path, "cannot open for reading", errno);
    size_out = f.regular_size(path);
    f.clear_nonblock(path);
    return f;
  }

  /// Opens `path` for reading and checks that `[offset, offset + bytes)`
  /// lies inside it (the file must exist also when `bytes == 0`). Reads
  /// nothing.
  /// @throws invalid_argument ("offset + bytes") for an overflowing range;
  ///         io_error as `open_read`, or naming the range, the file size and
  ///         the offset where the file ends if the range extends past it.
  static positional_file open_read_range(const std::string &path, std::uint64_t offset,
                                         std::uint64_t bytes) {
    check_file_range(offset, bytes);
    std::uint64_t size = 0;
    positional_file file = open_read(path, size);
    if (bytes != 0 && (offset > size || bytes > size - offset))
      throw io_error("resproj: " + path + ": range [" + std::to_string(offset) + ", " +
                     std::to_string(offset + bytes) +
                     ") extends past the end of the file " + "(size " +
                     std::to_string(size) + "): end of file at offset " +
                     std::to_string(std::max(size, offset)));
    return file;
  }

  /// Opens `path` for writing, creating it (mode 0644) if missing.
  /// @param path      the file
  /// @param truncate  empty an existing file first (else its bytes are kept)
  /// @throws io_error if an existing `path` is a directory or not a regular
  ///         file (checked before it is opened), or it cannot be opened.
  static positional_file open_write(const std::string &path, bool truncate) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
      check_regular(path, st);
    positional_file f;
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

  /// Reads exactly `n` bytes at `offset` into `buf`, retrying short reads
  /// and EINTR.
  /// @param path  the file's name, for messages
  /// @throws io_error naming the file and the offset on end of file or a
  ///         failed read (`buf` then holds part of the data).
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

  /// Writes exactly `n` bytes from `buf` at `offset`, retrying short writes
  /// and EINTR.
  /// @param path  the file's name, for messages
  /// @throws io_error naming the file and the offset if a write fails.
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

private:
  [[noreturn]] static void throw_errno(const std::string &path, const std::string &what,
                                       int err) {
    throw io_error("resproj: " + path + ": " + what + ": " + std::strerror(err));
  }

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

  void close() noexcept {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  int fd_ = -1;
};

} // namespace io
RESPROJ_NAMESPACE_END
