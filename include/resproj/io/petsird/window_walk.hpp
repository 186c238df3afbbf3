/// @file
/// @brief The time-block stream of a PETSIRD file walked in windows, for
/// the block-parallel readers: `scan_window` finds the complete time blocks
/// of a window by skipping varints without decoding them, `walk_windows`
/// reads the file window by window (growing a window that holds no
/// complete block), and `rethrow_stream_error` lets the sequential decoder
/// name the first problem of a stretch that a parallel reader found bad, so
/// that every reader reports the same error. Standard library and POSIX only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/events.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/skip.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {
namespace detail {

/// Time blocks found in a window: `[start, end)` offsets in the window.
struct window_scan {
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  std::size_t consumed = 0;      ///< bytes up to the last complete block or count
  std::uint64_t stream_left = 0; ///< time blocks left in the stream block there
  bool ended = false;            ///< the stream's closing 0 was read
  std::exception_ptr error;      ///< why the scan stopped before the end, if it did
};

/// Scans `in` (a window starting at a time block or a stream count) for
/// complete time blocks, stopping at the first one it cannot complete (cut
/// by the window's end, or malformed: `error` says why). The prompt and
/// delayed lists of event blocks go through `list` (see
/// `skip_coincidence_matrix`, with `module_types`), also those of a block
/// the scan does not complete.
template <class List = skip_coincidence_list>
window_scan scan_window(binary_input &in, std::uint64_t stream_left, List &&list = List{},
                        std::uint64_t module_types = std::uint64_t(1) << 40) {
  window_scan w;
  w.stream_left = stream_left;
  const std::uint64_t origin = in.offset();
  auto rel = [&] { return std::size_t(in.offset() - origin); };
  try {
    for (;;) {
      if (w.stream_left == 0) {
        const std::uint64_t count = in.uvarint("time_blocks (stream block count)");
        if (count == 0) {
          if (in.remaining() != 0)
            in.fail("end of file", std::to_string(in.remaining()) +
                                       " bytes after the end of the time-block stream");
          w.consumed = rel();
          w.ended = true;
          return w;
        }
        w.stream_left = count;
        w.consumed = rel();
      }
      const std::size_t start = rel();
      const std::uint8_t tag = in.byte("time block (union tag)");
      if (tag > 5)
        in.fail("time block (union tag)",
                "tag " + std::to_string(tag) + " is not a PETSIRD time block (0-5)");
      (void)in.u32("time block .time_interval.start");
      (void)in.u32("time block .time_interval.stop");
      if (tag == 0)
        skip_event_block(in, list, module_types);
      else
        skip_other_block(in, time_block_kind(tag));
      w.blocks.emplace_back(start, rel());
      --w.stream_left;
      w.consumed = rel();
    }
  } catch (const io_error &) {
    w.error = std::current_exception();
  }
  return w;
}

/// Where a window starts: its file offset and the stream's state there.
struct window_start {
  std::uint64_t pos = 0;         ///< file offset (a time block or a stream count)
  std::uint64_t stream_left = 0; ///< time blocks left in the stream block
  std::uint64_t block_index = 0; ///< index of the window's first time block
};

/// Decodes the file `path` sequentially from `start` (at least one time
/// block or stream count) until offset `limit` and throws the first error met; if there
/// is none, rethrows `error`, or (without one) throws an io_error saying that the stretch
/// was found bad but decodes.
[[noreturn]] inline void rethrow_stream_error(const std::string &path,
                                              const scanner_information &s,
                                              const window_start &start,
                                              std::uint64_t limit,
                                              std::exception_ptr error = nullptr) {
  binary_input in(path);
  in.skip(start.pos, "time blocks");
  event_decoder d(in, s);
  d.resume(start.block_index, start.stream_left);
  event_chunk c;
  while (d.next(std::size_t(1) << 20, c) && in.offset() < limit)
    c.clear();
  if (error)
    std::rethrow_exception(error);
  throw io_error("resproj: " + path + ": time blocks from offset " +
                 std::to_string(start.pos) +
                 ": found malformed by the block scan, but they decode");
}

/// Walks the time-block stream of `path` (`size` bytes, the header ending
/// at `pos`) in windows of at least `window_bytes` bytes. For each window:
///
///   const unsigned char *mem = read(start, n);  // the caller's copy of [pos, pos + n)
///   window_scan w = scan(binary_input &window, start);
///   on(start, mem, n, w);                       // w holds >= 1 block, or ended
///
/// A window holding no complete time block grows (doubling) and is read
/// again; at the end of the file `before_error()` is called, then the
/// sequential decoder reports the problem. Returns after the window that
/// holds the stream's end.
/// @throws io_error for malformed data; whatever the callbacks throw.
template <class Read, class Scan, class On, class BeforeError>
void walk_windows(const std::string &path, const scanner_information &s,
                  std::uint64_t pos, std::uint64_t size, std::size_t window_bytes,
                  Read &&read, Scan &&scan, On &&on, BeforeError &&before_error) {
  window_start at{pos, 0, 0};
  window_bytes = std::max<std::size_t>(window_bytes, 4096);
  for (;;) {
    const std::size_t n =
        std::size_t(std::min<std::uint64_t>(window_bytes, size - at.pos));
    const unsigned char *mem = read(static_cast<const window_start &>(at), n);
    binary_input window(mem, n, path, at.pos);
    const window_scan w = scan(window, static_cast<const window_start &>(at));
    if (w.blocks.empty() && !w.ended) {
      if (at.pos + n == size) {
        before_error();
        rethrow_stream_error(path, s, at, size, w.error);
      }
      window_bytes = 2 * n; // a time block larger than the window
      continue;
    }
    on(static_cast<const window_start &>(at), mem, n, w);
    at.pos += w.consumed;
    at.stream_left = w.stream_left;
    at.block_index += w.blocks.size();
    if (w.ended)
      return;
  }
}

} // namespace detail
} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
