/// @file
/// @brief Block-parallel decoding of PETSIRD time blocks
/// (`petsird::read_parallel`, `petsird::read_file_parallel`): the file is
/// read in windows (io/petsird/window_walk.hpp); in each window one thread
/// finds the time-block boundaries (scanning varints without decoding
/// them), then workers decode the blocks into the same arrays as `reader`. Standard
/// library and POSIX only.
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
#include "resproj/io/petsird/window_walk.hpp"
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

  std::vector<unsigned char> window;
  std::vector<event_chunk> decoded;
  walk_windows(
      path, h.scanner, head.offset(), size, o.window_bytes,
      [&](const window_start &at, std::size_t n) {
        window.resize(n);
        file.pread_exact(path, window.data(), n, at.pos);
        return static_cast<const unsigned char *>(window.data());
      },
      [](binary_input &in, const window_start &at) {
        return scan_window(in, at.stream_left);
      },
      [&](const window_start &at, const unsigned char *, std::size_t,
          const window_scan &w) {
        decoded.resize(w.blocks.size()); // arrays kept from window to window
        // A malformed block is reported as the sequential reader reports
        // it: the first one in file order, whichever worker met an error
        // first.
        std::vector<std::exception_ptr> errors(w.blocks.size());
        std::atomic<std::size_t> first_bad{w.blocks.size()};
        run_parallel_tasks(
            w.blocks.size(), unsigned(std::min<std::size_t>(threads, w.blocks.size())),
            o.pool, [&](unsigned, std::uint64_t t64, const std::atomic<bool> &) {
              const std::size_t t = std::size_t(t64);
              if (t > first_bad.load(std::memory_order_relaxed))
                return; // a block before it is already bad
              const auto &b = w.blocks[t];
              binary_input in(window.data() + b.first, b.second - b.first, path,
                              at.pos + b.first);
              try {
                event_decoder d(in, h.scanner, model.get());
                decoded[t].clear();
                d.decode_block(at.block_index + t, decoded[t]);
                if (in.remaining() != 0)
                  in.fail("time block " + std::to_string(at.block_index + t),
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
      },
      [] {});
  return h;
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
