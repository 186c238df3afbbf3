/// @file
/// @brief Block-parallel decoding of PETSIRD time blocks
/// (`petsird::read_parallel`, `petsird::read_file_parallel`): the file is
/// read in windows; in each window one thread finds the time-block
/// boundaries (scanning varints without decoding them), then workers decode
/// the blocks into the same arrays as `reader`. Standard library and POSIX
/// only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/efficiency.hpp"
#include "resproj/io/petsird/events.hpp"
#include "resproj/io/petsird/header_read.hpp"
#include "resproj/io/petsird/reader.hpp"
#include "resproj/io/petsird/skip.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Options of `read_parallel`.
struct parallel_read_options {
  unsigned threads = 0; ///< decoding workers (0: the hardware's threads)
  /// Bytes of file read per window (grown when one time block is larger).
  std::size_t window_bytes = std::size_t(64) << 20;
  bool event_efficiencies = false; ///< as `read_options::event_efficiencies`
  thread_pool *pool = nullptr;     ///< persistent workers, or null (not owned)
};

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
/// by the window's end, or malformed: `error` says why).
inline window_scan scan_window(binary_input &in, std::uint64_t stream_left) {
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
        skip_event_block(in);
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

/// `out` = the chunks of `parts` one after the other (events, blocks,
/// skipped counts), the events copied on `workers` workers.
inline void concatenate_parallel(event_chunk &out, const std::vector<event_chunk> &parts,
                                 unsigned workers, thread_pool *pool) {
  out.clear();
  std::vector<std::size_t> prompt_at(parts.size() + 1, 0),
      delayed_at(parts.size() + 1, 0);
  bool efficiency = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    prompt_at[i + 1] = prompt_at[i] + parts[i].prompts.size();
    delayed_at[i + 1] = delayed_at[i] + parts[i].delayeds.size();
    efficiency = efficiency || !parts[i].prompts.efficiency.empty() ||
                 !parts[i].delayeds.efficiency.empty();
    out.blocks.insert(out.blocks.end(), parts[i].blocks.begin(), parts[i].blocks.end());
    out.skipped_events += parts[i].skipped_events;
  }
  const auto size = [efficiency](coincidence_arrays &a, std::size_t n) {
    a.pairs.resize(2 * n);
    a.tof_bins.resize(n);
    a.energy_bins.resize(2 * n);
    a.efficiency.resize(efficiency ? n : 0);
  };
  size(out.prompts, prompt_at.back());
  size(out.delayeds, delayed_at.back());
  const auto copy = [](coincidence_arrays &to, const coincidence_arrays &from,
                       std::size_t at) {
    const auto into = [](auto &dst, const auto &src, std::size_t offset) {
      if (!src.empty())
        std::copy(src.begin(), src.end(), dst.begin() + std::ptrdiff_t(offset));
    };
    into(to.pairs, from.pairs, 2 * at);
    into(to.tof_bins, from.tof_bins, at);
    into(to.energy_bins, from.energy_bins, 2 * at);
    into(to.efficiency, from.efficiency, at);
  };
  run_parallel_tasks(parts.size(), unsigned(std::min<std::size_t>(workers, parts.size())),
                     pool, [&](unsigned, std::uint64_t t, const std::atomic<bool> &) {
                       copy(out.prompts, parts[std::size_t(t)].prompts, prompt_at[t]);
                       copy(out.delayeds, parts[std::size_t(t)].delayeds, delayed_at[t]);
                     });
}

} // namespace detail

namespace detail {

/// The windows of `read_parallel` before concatenation: for every window,
/// in file order, calls `g(const std::vector<event_chunk> &blocks, unsigned
/// threads)` with one chunk per complete time block of the window, in file
/// order, and the worker count.
template <class G>
petsird::header read_parallel_blocks(const std::string &path,
                                     const parallel_read_options &o, G &&g) {
  binary_input head(path);
  read_preamble(head);
  const petsird::header h = read_header(head);
  const detector_map map(h.scanner);
  std::unique_ptr<efficiency_model> model;
  if (o.event_efficiencies)
    model = std::make_unique<efficiency_model>(h.scanner);
  std::uint64_t size = 0;
  const positional_file file = positional_file::open_read(path, size);
  const unsigned threads =
      o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());

  std::uint64_t pos = head.offset(), stream_left = 0, block_index = 0;
  std::size_t window_bytes = std::max<std::size_t>(o.window_bytes, 4096);
  std::vector<unsigned char> window;
  std::vector<event_chunk> decoded;
  for (;;) {
    const std::size_t n = std::size_t(std::min<std::uint64_t>(window_bytes, size - pos));
    const bool at_end = pos + n == size;
    window.resize(n);
    file.pread_exact(path, window.data(), n, pos);
    binary_input scan(window.data(), n, path, pos);
    const detail::window_scan w = detail::scan_window(scan, stream_left);
    if (w.blocks.empty() && !w.ended) {
      if (at_end) {
        // The next block (or the end) is malformed: the sequential
        // decoder names the problem as `reader` does; else the scan's error.
        binary_input in(window.data(), n, path, pos);
        event_decoder d(in, h.scanner, model.get());
        event_chunk c;
        if (stream_left > 0)
          d.decode_block(block_index, c);
        else
          d.next(~std::size_t(0), c);
        std::rethrow_exception(w.error);
      }
      window_bytes = 2 * n; // a time block larger than the window
      continue;
    }
    decoded.resize(w.blocks.size()); // arrays kept from window to window
    // A malformed block is reported as the sequential reader reports it:
    // the first one in file order, whichever worker met an error first.
    std::vector<std::exception_ptr> errors(w.blocks.size());
    std::atomic<std::size_t> first_bad{w.blocks.size()};
    run_parallel_tasks(w.blocks.size(),
                       unsigned(std::min<std::size_t>(threads, w.blocks.size())), o.pool,
                       [&](unsigned, std::uint64_t t64, const std::atomic<bool> &) {
                         const std::size_t t = std::size_t(t64);
                         if (t > first_bad.load(std::memory_order_relaxed))
                           return; // a block before it is already bad
                         const auto &b = w.blocks[t];
                         binary_input in(window.data() + b.first, b.second - b.first,
                                         path, pos + b.first);
                         try {
                           event_decoder d(in, h.scanner, model.get());
                           decoded[t].clear();
                           d.decode_block(block_index + t, decoded[t]);
                           if (in.remaining() != 0)
                             in.fail("time block " + std::to_string(block_index + t),
                                     "ends before its scanned length");
                         } catch (const io_error &) {
                           errors[t] = std::current_exception();
                           std::size_t seen = first_bad.load(std::memory_order_relaxed);
                           while (t < seen && !first_bad.compare_exchange_weak(seen, t))
                             ;
                         }
                       });
    if (first_bad.load() < w.blocks.size())
      std::rethrow_exception(errors[first_bad.load()]);
    g(static_cast<const std::vector<event_chunk> &>(decoded), threads);
    pos += w.consumed;
    stream_left = w.stream_left;
    block_index += w.blocks.size();
    if (w.ended)
      return h;
  }
}

/// `read_parallel`, with `f(event_chunk &)` free to take the chunk's
/// arrays (swap them out).
template <class F>
petsird::header read_parallel_chunks(const std::string &path,
                                     const parallel_read_options &o, F &&f) {
  event_chunk out;
  return read_parallel_blocks(
      path, o, [&](const std::vector<event_chunk> &blocks, unsigned threads) {
        concatenate_parallel(out, blocks, threads, o.pool);
        f(out);
      });
}

} // namespace detail

/// Reads the PETSIRD file `path` with block-parallel decoding: for every
/// window of the file, in file order, calls `f(const event_chunk &)` with
/// the events of the window's complete time blocks (the same arrays,
/// blocks and counts as `reader` gives; a chunk holds at most
/// `window_bytes / 3` events). Memory: one window and its events; a time
/// block larger than the window grows the window to hold it (also a
/// malformed block, up to the rest of the file, before its error is
/// reported). The speedup needs many time blocks per window.
/// @return the header
/// @throws io_error as `reader`; whatever `f` throws.
template <class F>
petsird::header read_parallel(const std::string &path, const parallel_read_options &o,
                              F &&f) {
  return detail::read_parallel_chunks(
      path, o, [&f](event_chunk &c) { f(static_cast<const event_chunk &>(c)); });
}

/// Reads the whole file `path` with block-parallel decoding (see
/// `read_parallel`): the same result as `read_file`.
/// @throws io_error as `reader`.
inline file_contents read_file_parallel(const std::string &path,
                                        const parallel_read_options &o = {}) {
  file_contents out;
  out.header = detail::read_parallel_chunks(path, o, [&](event_chunk &c) {
    if (out.events.num_events() == 0 && out.events.blocks.empty())
      std::swap(out.events, c); // the first window: no copy
    else
      append_events(out.events, c);
  });
  return out;
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
