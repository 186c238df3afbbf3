/// @file
/// @brief Raw little-endian arrays: read a given number of elements of a
/// given `dtype` from a file at a byte offset into a caller's span, write a
/// span to a file (create, append, or at an offset).
///
/// Files hold the elements back to back, little-endian whatever the host;
/// on big-endian hosts the bytes are swapped after reading and before
/// writing. Host code, standard library only.
///
/// Strictness: before anything is read, the file is checked to exist, to be
/// a regular file and to hold `offset + count * element_size` bytes; when it
/// does not, `io_error` names the file, the offset and the sizes, and the
/// destination is untouched. (A file that shrinks, or a device that fails,
/// while the read runs can still leave the destination partly written; the
/// error then says so.)
///
/// Whole-file writes (`write_raw` truncate, and the `.npy`, NIfTI and
/// list-mode writers through `detail::rawio::replace_file`) check every
/// argument and the target first, write a temporary file in the target's
/// directory and rename it over the target only on success: a failed write
/// leaves the old file as it was and no temporary file behind. Appends and
/// writes at an offset work in place.
///
/// Thread safety: the functions share no state; concurrent reads of one
/// file are safe, concurrent writes to one file are not.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
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

/// The file that replacing `path` rewrites (`path`, or the file a chain of
/// symbolic links at `path` ends at) and what is known about it.
struct replace_target {
  std::filesystem::path file;
  bool exists = false;
  std::filesystem::perms perms = std::filesystem::perms::none;
};

/// Resolves and checks the target of `replace_file`; an existing target is
/// opened for appending (never blocks: it is a regular file by then) to
/// check that it may be written, and not modified.
/// @throws io_error for an empty path, a directory, an existing file that is
///         not a regular file (FIFO, device, socket) or cannot be written,
///         or a link loop.
inline replace_target resolve_replace_target(const std::string &path) {
  namespace fs = std::filesystem;
  if (path.empty())
    fail(path, "empty path");
  replace_target t;
  t.file = fs::path(path);
  std::error_code ec;
  for (int hops = 0;; ++hops) {
    const auto lst = fs::symlink_status(t.file, ec);
    if (ec || !fs::is_symlink(lst))
      break;
    if (hops == 40)
      fail(path, "too many levels of symbolic links");
    const fs::path link = fs::read_symlink(t.file, ec);
    if (ec)
      fail(path,
           "cannot read the symbolic link '" + t.file.string() + "': " + ec.message());
    t.file = link.is_absolute() ? link : t.file.parent_path() / link;
  }
  const auto st = fs::status(t.file, ec);
  if (st.type() == fs::file_type::not_found)
    return t;
  if (ec)
    fail(path, "cannot be inspected: " + ec.message());
  if (fs::is_directory(st))
    fail(path, "is a directory, not a file");
  if (!fs::is_regular_file(st))
    fail(path, "is not a regular file");
  t.exists = true;
  t.perms = st.permissions() & fs::perms::all;
  // Replace only a file that could be written in place (a read-only file
  // stays read-only). Opening for appending changes nothing.
  errno = 0;
  std::ofstream probe(t.file, std::ios::binary | std::ios::app);
  if (!probe)
    fail(path, "cannot open for writing" + errno_text(errno));
  return t;
}

/// Creates a new empty file, exclusively, in the directory of `target` and
/// returns its name (".<name>.tmp-<16 hex digits>").
/// @throws io_error "cannot open for writing" (naming `path`) if that fails.
inline std::filesystem::path create_temporary_beside(const std::filesystem::path &target,
                                                     const std::string &path) {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t seed =
      std::uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    seed ^= (std::uint64_t(rd()) << 32) ^ rd();
  } catch (...) {
    // Clock and counter alone still give distinct names in this process.
  }
  const std::string name = target.filename().string().substr(0, 200);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::uint64_t x = seed + 0x9e3779b97f4a7c15ull * (counter.fetch_add(1) + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; // splitmix64 finaliser
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(x));
    const std::filesystem::path tmp = target.parent_path() / ("." + name + ".tmp-" + hex);
    errno = 0;
    if (std::FILE *f = std::fopen(tmp.c_str(), "wbx")) { // "x": fails if it exists
      std::fclose(f);
      return tmp;
    }
    if (errno != EEXIST)
      fail(path, "cannot open for writing (creating the temporary file '" + tmp.string() +
                     "')" + errno_text(errno));
  }
  fail(path, "cannot open for writing: no unused temporary file name found beside it");
}

/// Replaces the file `path` as a whole: `write(std::fstream &f)` fills a new
/// temporary file in the same directory, which is renamed over `path` only
/// when `write` and closing succeeded. On any error the temporary file is
/// removed and `path` is left as it was (or absent). A symbolic link is
/// followed (the file it points to is replaced, the link stays); an existing
/// file keeps its permission bits (not its owner, nor its hard links: they
/// keep the old contents), a new one gets 0666 less the umask.
/// @throws io_error (nothing created) as `resolve_replace_target`; io_error
///         if the temporary file cannot be created, written or renamed;
///         whatever `write` throws.
template <class WriteFn> void replace_file(const std::string &path, WriteFn &&write) {
  namespace fs = std::filesystem;
  const replace_target target = resolve_replace_target(path);
  const fs::path tmp = create_temporary_beside(target.file, path);
  try {
    std::error_code ec;
    if (target.exists) {
      fs::permissions(tmp, target.perms, fs::perm_options::replace, ec);
      if (ec)
        fail(path, "cannot set the permissions of the temporary file '" + tmp.string() +
                       "': " + ec.message());
    }
    errno = 0;
    std::fstream f(tmp, std::ios::binary | std::ios::out | std::ios::trunc);
    if (!f)
      fail(path, "cannot open for writing (the temporary file '" + tmp.string() + "')" +
                     errno_text(errno));
    write(f);
    close_checked(f, path);
    fs::rename(tmp, target.file, ec);
    if (ec)
      fail(path, "cannot replace it with the temporary file '" + tmp.string() +
                     "': " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

} // namespace rawio
} // namespace detail

/// Size of the regular file at `path` in bytes.
/// @throws io_error if `path` does not exist, is a directory or not a
///         regular file.
inline std::uint64_t file_size(const std::string &path) {
  return detail::rawio::regular_file_size(path);
}

/// Reads `dst.size()` little-endian elements of type `dtype_of_v<T>` stored
/// at byte `offset` of the file `path` into `dst`, converting to host byte
/// order. Bytes outside the range are ignored (the file may be longer).
/// @throws io_error (destination untouched) if the file does not exist, is a
///         directory, or holds fewer than `offset + dst.size() * sizeof(T)`
///         bytes; io_error also if the read itself fails.
/// @throws invalid_argument ("dst") for a null pointer with a nonzero size.
template <class T>
void read_raw(const std::string &path, span<T> dst, std::uint64_t offset = 0) {
  static_assert(!std::is_const_v<T>, "read_raw: destination must be writable");
  static_assert(is_dtype_type_v<T>, "read_raw: T must map to an io::dtype");
  if (!dst.empty() && dst.data() == nullptr)
    resproj::detail::throw_invalid("dst", "null pointer with size " +
                                              std::to_string(dst.size()));
  const std::uint64_t size = detail::rawio::regular_file_size(path);
  std::uint64_t bytes = 0;
  if (detail::rawio::mul_overflows(dst.size(), sizeof(T), bytes))
    resproj::detail::throw_invalid("dst", "byte size overflows");
  detail::rawio::check_range(path, size, offset, bytes,
                             std::to_string(dst.size()) + " " +
                                 dtype_name(dtype_of_v<T>) + " elements");
  if (bytes == 0)
    return;
  std::ifstream in = detail::rawio::open_read(path);
  detail::rawio::read_exact(in, path, offset, dst.data(), bytes);
  little_endian_to_host(dst.data(), dst.size(), dtype_of_v<T>);
}

/// Reads `count` elements of type `type` at byte `offset` of `path` into the
/// first `count` elements of `dst` (the rest of `dst` is untouched); `type`
/// is the file's element type and must be `dtype_of_v<T>` (no conversion).
/// @throws invalid_argument ("type") if `type` is not `dtype_of_v<T>`,
///         ("dst") if `dst` holds fewer than `count` elements; nothing read.
/// @throws io_error as `read_raw(path, dst, offset)`.
template <class T>
void read_raw(const std::string &path, dtype type, std::size_t count, span<T> dst,
              std::uint64_t offset = 0) {
  static_assert(is_dtype_type_v<T>, "read_raw: T must map to an io::dtype");
  if (type != dtype_of_v<T>)
    resproj::detail::throw_invalid(
        "type", std::string("file element type ") + dtype_name(type) +
                    " does not match the destination's " + dtype_name(dtype_of_v<T>));
  if (dst.size() < count)
    resproj::detail::throw_invalid("dst",
                                   "too small: holds " + std::to_string(dst.size()) +
                                       " elements, needs " + std::to_string(count));
  read_raw(path, dst.subspan(0, count), offset);
}

/// Reads `count` elements of type `dtype_of_v<T>` at byte `offset` of
/// `path` into a new vector.
/// @throws io_error as `read_raw(path, dst, offset)`.
template <class T>
std::vector<T> read_raw_vector(const std::string &path, std::size_t count,
                               std::uint64_t offset = 0) {
  // Check before allocating, so that a huge count on a short file does not
  // allocate.
  std::uint64_t bytes = 0;
  if (detail::rawio::mul_overflows(count, sizeof(T), bytes))
    resproj::detail::throw_invalid("count", "byte size overflows");
  detail::rawio::check_range(path, detail::rawio::regular_file_size(path), offset, bytes,
                             std::to_string(count) + " " + dtype_name(dtype_of_v<T>) +
                                 " elements");
  std::vector<T> out(count);
  read_raw(path, span<T>(out.data(), out.size()), offset);
  return out;
}

/// How `write_raw` treats an existing file.
enum class write_mode {
  truncate, ///< create the file, or empty an existing one, then write
  append,   ///< create the file, or write after its current end
};

/// Writes `src` to `path` as little-endian elements of `dtype_of_v<T>`.
/// Returns the byte offset where the data starts (0 for truncate, the old
/// file size for append). `truncate` writes a temporary file beside `path`
/// and renames it over `path` (see `detail::rawio::replace_file`), so a
/// failed write leaves the old file as it was; `append` writes in place.
/// @throws io_error if `path` is a directory or not a regular file (before
///         anything is written), cannot be created (e.g. its folder does
///         not exist) or the write fails.
/// @throws invalid_argument ("src") for a null pointer with a nonzero size.
template <class T>
std::uint64_t write_raw(const std::string &path, span<const T> src,
                        write_mode mode = write_mode::truncate) {
  static_assert(is_dtype_type_v<T>, "write_raw: T must map to an io::dtype");
  if (!src.empty() && src.data() == nullptr)
    resproj::detail::throw_invalid("src", "null pointer with size " +
                                              std::to_string(src.size()));
  const std::uint64_t bytes = std::uint64_t(src.size()) * sizeof(T);
  if (mode == write_mode::truncate) {
    detail::rawio::replace_file(path, [&](std::fstream &f) {
      detail::rawio::write_exact(f, path, false, 0, src.data(), bytes, sizeof(T));
    });
    return 0;
  }
  std::fstream f = detail::rawio::open_write(path, detail::rawio::open_mode::append);
  const std::uint64_t start =
      detail::rawio::write_exact(f, path, true, 0, src.data(), bytes, sizeof(T));
  detail::rawio::close_checked(f, path);
  return start;
}

/// As above for a `span<T>`.
template <class T>
std::uint64_t write_raw(const std::string &path, span<T> src,
                        write_mode mode = write_mode::truncate) {
  return write_raw(path, span<const T>(src), mode);
}

/// Writes `src` at byte `offset` of `path`, keeping the rest of the file
/// (the file is created if missing; writing past its end extends it, with
/// zero bytes in any gap). Writes in place: a failed write can leave part
/// of `src` written.
/// @throws io_error, invalid_argument as `write_raw`.
template <class T>
void write_raw_at(const std::string &path, std::uint64_t offset, span<const T> src) {
  static_assert(is_dtype_type_v<T>, "write_raw_at: T must map to an io::dtype");
  if (!src.empty() && src.data() == nullptr)
    resproj::detail::throw_invalid("src", "null pointer with size " +
                                              std::to_string(src.size()));
  std::fstream f = detail::rawio::open_write(path, detail::rawio::open_mode::update);
  detail::rawio::write_exact(f, path, false, offset, src.data(),
                             std::uint64_t(src.size()) * sizeof(T), sizeof(T));
  detail::rawio::close_checked(f, path);
}

/// As above for a `span<T>`.
template <class T>
void write_raw_at(const std::string &path, std::uint64_t offset, span<T> src) {
  write_raw_at(path, offset, span<const T>(src));
}

} // namespace io
RESPROJ_NAMESPACE_END
