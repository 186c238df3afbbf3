/// @file
/// @brief List-mode event files: plain arrays of 10-byte
/// `scanner::listmode_event` records; count them, read a range of events
/// into a span, write (create / replace) or append.
///
/// Format decision: no header. A list-mode file is the records back to
/// back, 10 bytes each, in the little-endian layout documented in
/// scanner/listmode.hpp, so the number of events is `file size / 10`, event
/// i starts at byte `10 i`, a byte range of the file can go straight to
/// the device, and files are portable between hosts of either byte order
/// (the record is defined bytewise). A size that is not a multiple of 10
/// means a truncated or foreign file and is an `io_error` (also when
/// appending, so nothing is appended to a damaged file). Records are not
/// validated against a scanner: use `scanner::validate_events`.
///
/// Host code, standard library only; the functions share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/raw.hpp"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Bytes per record in a list-mode file.
inline constexpr std::size_t listmode_record_bytes = sizeof(scanner::listmode_event);
static_assert(listmode_record_bytes == 10);

/// Number of events in the list-mode file `path`.
/// @throws io_error if it does not exist, is a directory, or its size is
///         not a multiple of 10 bytes.
inline std::uint64_t count_listmode_events(const std::string &path) {
  const std::uint64_t size = detail::rawio::regular_file_size(path);
  if (size % listmode_record_bytes != 0)
    detail::rawio::fail(path, "size " + std::to_string(size) +
                                  " bytes is not a multiple of the 10-byte list-mode "
                                  "record (truncated or not a list-mode file; " +
                                  std::to_string(size % listmode_record_bytes) +
                                  " bytes after the last whole record at offset " +
                                  std::to_string(size - size % listmode_record_bytes) +
                                  ")");
  return size / listmode_record_bytes;
}

/// Reads events `[first, first + count)` of the list-mode file `path` into
/// `dst[0, count)` (the rest of `dst` is untouched).
/// @throws invalid_argument ("dst") if `dst` holds fewer than `count`
///         events or is null with a nonzero size (nothing read).
/// @throws io_error (destination untouched) if the file does not exist, is
///         a directory, is not a multiple of 10 bytes, or holds fewer than
///         `first + count` events; io_error also if the read fails.
inline void read_listmode_events(const std::string &path, std::uint64_t first,
                                 std::size_t count, span<scanner::listmode_event> dst) {
  resproj::detail::check_span(dst, count, "dst");
  const std::uint64_t total = count_listmode_events(path);
  if (first > total || count > total - first)
    detail::rawio::fail(path, "holds " + std::to_string(total) + " events, events [" +
                                  std::to_string(first) + ", " +
                                  (count > ~std::uint64_t(0) - first
                                       ? std::string("2^64+")
                                       : std::to_string(first + count)) +
                                  ") requested (byte offset " +
                                  (first > ~std::uint64_t(0) / listmode_record_bytes
                                       ? std::string("> 2^64")
                                       : std::to_string(first * listmode_record_bytes)) +
                                  ")");
  if (count == 0)
    return;
  std::ifstream in = detail::rawio::open_read(path);
  detail::rawio::read_exact(in, path, first * listmode_record_bytes, dst.data(),
                            std::uint64_t(count) * listmode_record_bytes);
}

/// Reads every event of the list-mode file `path`.
/// @throws io_error as `count_listmode_events` and for a failed read.
inline std::vector<scanner::listmode_event> read_listmode_file(const std::string &path) {
  const std::uint64_t n = count_listmode_events(path);
  std::vector<scanner::listmode_event> out(static_cast<std::size_t>(n));
  read_listmode_events(path, 0, out.size(),
                       span<scanner::listmode_event>(out.data(), out.size()));
  return out;
}

/// Writes `events` to `path`, creating it or replacing it: the file is
/// written beside `path` and renamed over it on success (see raw.hpp), so on
/// any error an existing `path` is left as it was.
/// @throws invalid_argument ("events") for a null pointer with a nonzero size.
/// @throws io_error if `path` is a directory or not a regular file (checked
///         first), or cannot be created / written.
inline void write_listmode_file(const std::string &path,
                                span<const scanner::listmode_event> events) {
  if (!events.empty() && events.data() == nullptr)
    resproj::detail::throw_invalid("events", "null pointer with size " +
                                                 std::to_string(events.size()));
  detail::rawio::replace_file(path, [&](std::fstream &f) {
    detail::rawio::write_exact(f, path, false, 0, events.data(),
                               std::uint64_t(events.size()) * listmode_record_bytes, 1);
  });
}

/// Appends `events` to the list-mode file `path` (created if missing) and
/// returns the index of the first appended event (the previous count).
/// @throws invalid_argument ("events") for a null pointer with a nonzero size.
/// @throws io_error if `path` is a directory or not a regular file, an
///         existing file's size is not a multiple of 10 bytes (nothing is
///         appended then), or the write fails (it works in place: events
///         may then be partly appended).
inline std::uint64_t append_listmode_events(const std::string &path,
                                            span<const scanner::listmode_event> events) {
  if (!events.empty() && events.data() == nullptr)
    resproj::detail::throw_invalid("events", "null pointer with size " +
                                                 std::to_string(events.size()));
  std::error_code ec;
  if (std::filesystem::exists(path, ec))
    (void)count_listmode_events(path); // refuse to extend a damaged file
  std::fstream f = detail::rawio::open_write(path, detail::rawio::open_mode::append);
  const std::uint64_t start =
      detail::rawio::write_exact(f, path, true, 0, events.data(),
                                 std::uint64_t(events.size()) * listmode_record_bytes, 1);
  detail::rawio::close_checked(f, path);
  return start / listmode_record_bytes;
}

} // namespace io
RESPROJ_NAMESPACE_END
