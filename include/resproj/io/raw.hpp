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
/// list-mode writers through `detail::rawio::replace_file`,
/// io/detail/replace_file.hpp) check every
/// argument and the target first, write a temporary file in the target's
/// directory and rename it over the target only on success: a failed write
/// leaves the old file as it was and no temporary file behind. Appends and
/// writes at an offset work in place.
///
/// Thread safety: the functions share no state; concurrent reads of one
/// file are safe, concurrent writes to one file are not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/detail/replace_file.hpp"
#include "resproj/io/detail/stream_file.hpp"
#include "resproj/io/dtype.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

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
