/// @file
/// @brief Checked access to files through standard streams, shared by the
/// raw, `.npy`, NIfTI and list-mode readers and writers: file size and type
/// checks, exact reads and writes at an offset (little-endian on disk), and
/// error messages naming the file. Standard library only.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/dtype.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace detail {
namespace rawio {

/// Throws `io_error("resproj: file '<path>': <problem>")`.
[[noreturn]] inline void fail(const std::string &path, const std::string &problem) {
  throw io_error("resproj: file '" + path + "': " + problem);
}

/// " (<strerror>)" for a nonzero errno, else "".
inline std::string errno_text(int e) {
  return e != 0 ? std::string(" (") + std::strerror(e) + ")" : std::string();
}

/// Size of the regular file at `path`; io_error if it does not exist, is a
/// directory or anything but a regular file.
inline std::uint64_t regular_file_size(const std::string &path) {
  if (path.empty())
    fail(path, "empty path");
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    if (st.type() == std::filesystem::file_type::not_found ||
        ec == std::errc::no_such_file_or_directory)
      fail(path, "does not exist");
    fail(path, "cannot be inspected: " + ec.message());
  }
  if (std::filesystem::is_directory(st))
    fail(path, "is a directory, not a file");
  if (!std::filesystem::is_regular_file(st))
    fail(path, "is not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec)
    fail(path, "cannot read its size: " + ec.message());
  return static_cast<std::uint64_t>(size);
}

/// Sets `out = a * b` and returns false, or returns true on overflow.
inline bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t &out) noexcept {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    return true;
  out = a * b;
  return false;
}

/// Throws io_error unless `[offset, offset + bytes)` lies inside a file of
/// `file_size` bytes. `what` names the data ("3 float32 elements").
inline void check_range(const std::string &path, std::uint64_t file_size,
                        std::uint64_t offset, std::uint64_t bytes,
                        const std::string &what) {
  if (offset > file_size || bytes > file_size - offset)
    fail(path, "too short: reading " + what + " (" + std::to_string(bytes) +
                   " bytes) at offset " + std::to_string(offset) + " needs " +
                   (bytes > std::numeric_limits<std::uint64_t>::max() - offset
                        ? std::string("more than 2^64")
                        : std::to_string(offset + bytes)) +
                   " bytes, the file holds " + std::to_string(file_size));
}

constexpr std::uint64_t max_chunk = std::uint64_t(1) << 30; // per stream call

/// Reads exactly `bytes` bytes at `offset` of the open file into `dst`.
inline void read_exact(std::ifstream &in, const std::string &path, std::uint64_t offset,
                       void *dst, std::uint64_t bytes) {
  if (bytes == 0)
    return;
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<std::streamoff>::max()))
    fail(path, "offset " + std::to_string(offset) + " is beyond what streams address");
  errno = 0;
  in.seekg(static_cast<std::streamoff>(offset), std::ios::beg);
  if (!in)
    fail(path, "cannot seek to offset " + std::to_string(offset) + errno_text(errno));
  auto *p = static_cast<char *>(dst);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::uint64_t n = bytes - done < max_chunk ? bytes - done : max_chunk;
    errno = 0;
    in.read(p + done, static_cast<std::streamsize>(n));
    const auto got = static_cast<std::uint64_t>(in.gcount());
    done += got;
    if (got != n)
      fail(path, "read failed at offset " + std::to_string(offset + done) + " after " +
                     std::to_string(done) + " of " + std::to_string(bytes) +
                     " bytes (file changed or device error; destination partly "
                     "written)" +
                     errno_text(errno));
  }
}

/// Opens `path` for binary reading (the caller has checked it is a file).
inline std::ifstream open_read(const std::string &path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, "cannot open for reading" + errno_text(errno));
  return in;
}

/// How `open_write` opens a file.
enum class open_mode { truncate, append, update };

/// Opens `path` for binary writing: truncate (create or empty it), append
/// (create or keep it, position at the end), update (create or keep it,
/// position anywhere). A directory, or any other existing file that is not
/// a regular file (a FIFO, a device), is rejected before anything is opened.
inline std::fstream open_write(const std::string &path, open_mode mode) {
  if (path.empty())
    fail(path, "empty path");
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  const bool exists = !ec && std::filesystem::exists(st);
  if (exists && std::filesystem::is_directory(st))
    fail(path, "is a directory, not a file");
  if (exists && !std::filesystem::is_regular_file(st))
    fail(path, "is not a regular file");
  std::ios::openmode m = std::ios::binary | std::ios::out;
  if (mode == open_mode::truncate || !exists)
    m |= std::ios::trunc;
  else
    m |= std::ios::in; // keep the contents
  if (mode == open_mode::append)
    m |= std::ios::ate;
  errno = 0;
  std::fstream f(path, m);
  if (!f)
    fail(path, "cannot open for writing" + errno_text(errno));
  return f;
}

/// Writes `bytes` bytes from `src` at `offset` (or at the current end when
/// `at_end`), converting elements of `element_size` bytes to little-endian
/// on big-endian hosts (through a bounce buffer; `src` is not modified).
/// Returns the offset where the data starts.
inline std::uint64_t write_exact(std::fstream &f, const std::string &path, bool at_end,
                                 std::uint64_t offset, const void *src,
                                 std::uint64_t bytes, std::size_t element_size) {
  errno = 0;
  if (at_end)
    f.seekp(0, std::ios::end);
  else {
    if (offset > static_cast<std::uint64_t>(std::numeric_limits<std::streamoff>::max()))
      fail(path, "offset " + std::to_string(offset) + " is beyond what streams address");
    f.seekp(static_cast<std::streamoff>(offset), std::ios::beg);
  }
  if (!f)
    fail(path, "cannot seek for writing" + errno_text(errno));
  const auto start = static_cast<std::uint64_t>(static_cast<std::streamoff>(f.tellp()));
  const auto *p = static_cast<const char *>(src);
  const bool swap = !host_is_little_endian() && element_size > 1;
  std::vector<char> bounce;
  std::uint64_t done = 0;
  while (done < bytes) {
    std::uint64_t n = bytes - done < max_chunk ? bytes - done : max_chunk;
    const char *chunk = p + done;
    if (swap) {
      n = bytes - done < (std::uint64_t(1) << 22) ? bytes - done
                                                  : (std::uint64_t(1) << 22);
      bounce.assign(chunk, chunk + n);
      byteswap_elements(bounce.data(), n / element_size, element_size);
      chunk = bounce.data();
    }
    errno = 0;
    f.write(chunk, static_cast<std::streamsize>(n));
    if (!f)
      fail(path, "write failed at offset " + std::to_string(start + done) + " (" +
                     std::to_string(bytes) + " bytes to write)" + errno_text(errno));
    done += n;
  }
  errno = 0;
  f.flush();
  if (!f)
    fail(path, "flush failed after writing " + std::to_string(bytes) + " bytes" +
                   errno_text(errno));
  return start;
}

/// Closes `f`, throwing io_error if buffered data could not be written.
inline void close_checked(std::fstream &f, const std::string &path) {
  errno = 0;
  f.close();
  if (f.fail())
    fail(path, "close failed" + errno_text(errno));
}

} // namespace rawio
} // namespace detail
} // namespace io
RESPROJ_NAMESPACE_END
