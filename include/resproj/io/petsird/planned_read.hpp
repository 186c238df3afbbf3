/// @file
/// @brief A PETSIRD file's events decoded varint by varint
/// (`read_planned`): each window of the file is read by several threads,
/// which also count the varint ends of every page; one thread plans the
/// window's prompt and delayed lists (io/petsird/list_plan.hpp); a backend
/// decodes the plan (the GPU kernel in gpu/petsird_events.cuh, or
/// `host_plan_decoder` on the host). Errors are those of `reader`: a
/// window that the scan or the backend finds bad is decoded again
/// sequentially to name its first problem. Standard library and POSIX only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/events.hpp"
#include "resproj/io/petsird/header_read.hpp"
#include "resproj/io/petsird/list_plan.hpp"
#include "resproj/io/petsird/parallel_decode.hpp"
#include "resproj/io/petsird/varint_index.hpp"
#include "resproj/io/petsird/window_walk.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {
namespace detail {

/// What `read_planned` read.
struct planned_read_result {
  petsird::header header;
  std::uint64_t num_prompts = 0;
  std::uint64_t num_delayeds = 0;
  std::uint64_t num_time_blocks = 0;
};

/// Bytes of file per read task (a multiple of varint_page_bytes).
inline constexpr std::size_t planned_read_task_bytes = std::size_t(1) << 20;

/// Reads the PETSIRD file `path` window by window (`o.window_bytes`,
/// `o.threads`, `o.pool`; `o.event_efficiencies` is not used) and hands
/// every window's plan to `backend`:
///
///   unsigned char *backend.window_memory(std::size_t n);  // room for a window
///   void backend.decode(const unsigned char *window, std::size_t n,
///                       const window_plan &plan, std::size_t window_index);
///   std::size_t backend.first_bad_window();  // after all decoding: the first
///                                            // window it found bad, or ~0
///
/// `decode` may work asynchronously; `window_memory` must then wait until
/// the memory it returns is free again. Events are numbered in file order,
/// prompts and delayeds separately (`coincidence_list::first_event`).
/// @throws io_error as `reader`; whatever the backend throws.
template <class Backend>
planned_read_result read_planned(const std::string &path, const parallel_read_options &o,
                                 Backend &backend) {
  planned_read_result out;
  binary_input head(path);
  read_preamble(head);
  out.header = read_header(head);
  const scanner_information &s = out.header.scanner;
  const detector_map map(s);
  std::uint64_t size = 0;
  const positional_file file = positional_file::open_read(path, size);
  const unsigned threads =
      o.threads != 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  // Workers started once for all windows, unless the caller lends some.
  std::unique_ptr<thread_pool> own_pool;
  thread_pool *pool = o.pool;
  if (pool == nullptr && threads > 1) {
    own_pool = std::make_unique<thread_pool>(threads);
    pool = own_pool.get();
  }

  varint_end_index index;
  window_plan plan;
  const unsigned char *memory = nullptr;
  std::vector<window_start> starts; // of the windows handed to the backend
  std::vector<std::uint64_t> ends;
  // The first window the backend found bad, if any, is reported first.
  const auto report_backend_error = [&] {
    const std::size_t bad = backend.first_bad_window();
    if (bad < starts.size())
      rethrow_stream_error(path, s, starts[bad], ends[bad]);
  };
  walk_windows(
      path, s, head.offset(), size, o.window_bytes,
      [&](const window_start &at, std::size_t n) {
        unsigned char *mem = backend.window_memory(n);
        index = varint_end_index(mem, n);
        const std::size_t tasks =
            (n + planned_read_task_bytes - 1) / planned_read_task_bytes;
        run_parallel_tasks(
            tasks, unsigned(std::min<std::size_t>(threads, tasks)), pool,
            [&](unsigned, std::uint64_t t, const std::atomic<bool> &) {
              const std::size_t first = std::size_t(t) * planned_read_task_bytes;
              const std::size_t bytes = std::min(planned_read_task_bytes, n - first);
              file.pread_exact(path, mem + first, bytes, at.pos + first);
              const std::size_t last_page = (first + bytes - 1) / varint_page_bytes;
              for (std::size_t p = first / varint_page_bytes; p <= last_page; ++p)
                index.count_page(p);
            });
        memory = mem;
        return static_cast<const unsigned char *>(mem);
      },
      [&](binary_input &in, const window_start &at) {
        return plan_window(in, at, memory, index, map, s, out.num_prompts,
                           out.num_delayeds, plan);
      },
      [&](const window_start &at, const unsigned char *mem, std::size_t n,
          const window_scan &w) {
        starts.push_back(at);
        ends.push_back(at.pos + w.consumed);
        backend.decode(mem, n, static_cast<const window_plan &>(plan), starts.size() - 1);
        out.num_prompts += plan.prompts;
        out.num_delayeds += plan.delayeds;
        out.num_time_blocks += w.blocks.size();
      },
      report_backend_error);
  report_backend_error();
  return out;
}

/// The backend of `read_planned` on the host: `decode_plan` into arrays
/// of detector pairs and TOF bins (those of `reader`, without energy bins).
struct host_plan_decoder {
  std::vector<unsigned char> window;
  std::vector<std::int32_t> prompt_pairs, delayed_pairs;
  std::vector<std::int16_t> prompt_tof_bins, delayed_tof_bins;
  std::size_t bad = ~std::size_t(0);

  unsigned char *window_memory(std::size_t n) {
    window.resize(n);
    return window.data();
  }
  void decode(const unsigned char *mem, std::size_t, const window_plan &plan,
              std::size_t index) {
    const auto grow = [](auto &v, std::size_t n) { v.resize(v.size() + n); };
    grow(prompt_pairs, 2 * std::size_t(plan.prompts));
    grow(prompt_tof_bins, std::size_t(plan.prompts));
    grow(delayed_pairs, 2 * std::size_t(plan.delayeds));
    grow(delayed_tof_bins, std::size_t(plan.delayeds));
    if (bad == ~std::size_t(0) &&
        !decode_plan(mem, plan, prompt_pairs.data(), prompt_tof_bins.data(),
                     delayed_pairs.data(), delayed_tof_bins.data()))
      bad = index;
  }
  std::size_t first_bad_window() const noexcept { return bad; }
};

} // namespace detail
} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
