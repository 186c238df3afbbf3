/// @file
/// @brief PETSIRD events straight into device memory
/// (`gpu::read_petsird_to_device`): the time blocks are decoded on the host
/// (block-parallel, io/petsird/parallel_decode.hpp), copied by the
/// decoding workers straight from each block's arrays into pinned buffers
/// and copied asynchronously into device arrays of detector pairs
/// and TOF bins, prompts and delayeds separately: the arrays of the host
/// reader, on the device.
///
///   gpu::stream s;
///   auto ev = gpu::read_petsird_to_device("scan.petsird", s);
///   const auto table = io::petsird::make_detector_table(ev.header.scanner);
///   // ev.prompt_pairs.data(), ev.prompt_tof_bins.data(): ev.num_prompts events
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/petsird/parallel_decode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Options of `read_petsird_to_device`.
struct petsird_device_options {
  /// Events per pinned staging buffer (two are used in turn), >= 1.
  std::size_t staging_events = std::size_t(1) << 20;
  /// Host decoding: threads, window size, thread pool
  /// (`event_efficiencies` is not used here).
  io::petsird::parallel_read_options decode{};
};

/// The events of a PETSIRD file in device memory, allocated on the stream
/// of the call: `[a0 b0 a1 b1 ...]` detector pairs (int32, the indices of
/// `io::petsird::detector_map`) and TOF bins (int16), prompts and delayeds
/// separately. The buffers may hold more elements than the events: the
/// first `2 * num_prompts` / `num_prompts` (and likewise for delayeds) are
/// the data. Move-only (owns device buffers).
struct device_petsird_events {
  io::petsird::header header;
  device_buffer<std::int32_t> prompt_pairs;
  device_buffer<std::int16_t> prompt_tof_bins;
  device_buffer<std::int32_t> delayed_pairs;
  device_buffer<std::int16_t> delayed_tof_bins;
  std::size_t num_prompts = 0;
  std::size_t num_delayeds = 0;
  std::size_t num_time_blocks = 0;
};

namespace detail {

/// Makes `b` hold at least `needed` elements, keeping the first `used`
/// (stream-ordered reallocation on `s`, doubling).
template <class T>
void reserve_on_stream(device_buffer<T> &b, std::size_t used, std::size_t needed,
                       stream_ref s) {
  if (needed <= b.size())
    return;
  device_buffer<T> bigger(std::max(needed, 2 * b.size()), s);
  if (used > 0)
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(bigger.data(), b.data(), used * sizeof(T),
                                     cudaMemcpyDeviceToDevice, s.get()));
  b = std::move(bigger);
}

/// One pinned staging slot: pairs and bins of up to `capacity` events, and
/// the event recorded after its last copy.
struct petsird_staging_slot {
  pinned_buffer<std::int32_t> pairs;
  pinned_buffer<std::int16_t> bins;
  event copied;
  bool busy = false;
};

} // namespace detail

/// Reads every prompt and delayed event of the PETSIRD file `path` into
/// device memory on stream `s` (the current device). The host decodes
/// windows of time blocks (several threads, `options.decode`) while the
/// copies of earlier events run; each piece of at most `staging_events`
/// events goes through one of two pinned buffers. Host-blocking: returns
/// when the file has been read and the pinned buffers are free; the device
/// arrays are ready in stream order on `s` (no device-wide synchronisation).
/// Not graph-capturable.
/// @throws invalid_argument ("s") for the legacy default stream,
///         ("options.staging_events") for 0.
/// @throws io_error as `io::petsird::reader` (nothing is usable then);
///         gpu_error / gpu_out_of_memory from the runtime.
inline device_petsird_events
read_petsird_to_device(const std::string &path, stream_ref s,
                       const petsird_device_options &options = {}) {
  detail::require_explicit_stream(s, "s");
  if (options.staging_events == 0)
    throw invalid_argument("options.staging_events", "must be >= 1");
  const std::size_t cap = options.staging_events;
  std::array<detail::petsird_staging_slot, 2> slots{
      detail::petsird_staging_slot{pinned_buffer<std::int32_t>(2 * cap),
                                   pinned_buffer<std::int16_t>(cap), event(), false},
      detail::petsird_staging_slot{pinned_buffer<std::int32_t>(2 * cap),
                                   pinned_buffer<std::int16_t>(cap), event(), false}};
  std::size_t next_slot = 0;
  device_petsird_events out;

  // Copies the events of `member` of the window's time blocks, in file
  // order, to the device arrays after the `*count` events already there:
  // each pinned piece is filled by the workers, one block's share each.
  auto stage = [&](const std::vector<io::petsird::event_chunk> &blocks,
                   io::petsird::coincidence_arrays io::petsird::event_chunk::*member,
                   device_buffer<std::int32_t> &pairs, device_buffer<std::int16_t> &bins,
                   std::size_t &count, unsigned threads) {
    std::vector<std::size_t> at(blocks.size() + 1, 0);
    for (std::size_t i = 0; i < blocks.size(); ++i)
      at[i + 1] = at[i] + (blocks[i].*member).size();
    const std::size_t total = at.back();
    detail::reserve_on_stream(pairs, 2 * count, 2 * (count + total), s);
    detail::reserve_on_stream(bins, count, count + total, s);
    std::size_t block = 0;
    for (std::size_t first = 0; first < total; first += cap) {
      const std::size_t n = std::min(cap, total - first);
      detail::petsird_staging_slot &slot = slots[next_slot];
      next_slot = 1 - next_slot;
      if (slot.busy)
        slot.copied.synchronize(); // its previous copy has left the buffer
      while (at[block + 1] <= first)
        ++block;
      std::size_t last = block;
      while (at[last + 1] < first + n)
        ++last;
      run_parallel_tasks(
          last - block + 1, unsigned(std::min<std::size_t>(threads, last - block + 1)),
          options.decode.pool, [&](unsigned, std::uint64_t t, const std::atomic<bool> &) {
            const std::size_t i = block + std::size_t(t);
            const io::petsird::coincidence_arrays &a = blocks[i].*member;
            const std::size_t from = std::max(first, at[i]);
            const std::size_t to = std::min(first + n, at[i + 1]);
            if (from >= to)
              return;
            std::copy_n(a.pairs.data() + 2 * (from - at[i]), 2 * (to - from),
                        slot.pairs.data() + 2 * (from - first));
            std::copy_n(a.tof_bins.data() + (from - at[i]), to - from,
                        slot.bins.data() + (from - first));
          });
      pairs.copy_from_host(slot.pairs.data(), 2 * n, 2 * count, s);
      bins.copy_from_host(slot.bins.data(), n, count, s);
      slot.copied.record(s);
      slot.busy = true;
      count += n;
    }
  };

  io::petsird::parallel_read_options decode = options.decode;
  decode.event_efficiencies = false;
  try {
    out.header = io::petsird::detail::read_parallel_blocks(
        path, decode,
        [&](const std::vector<io::petsird::event_chunk> &blocks, unsigned threads) {
          stage(blocks, &io::petsird::event_chunk::prompts, out.prompt_pairs,
                out.prompt_tof_bins, out.num_prompts, threads);
          stage(blocks, &io::petsird::event_chunk::delayeds, out.delayed_pairs,
                out.delayed_tof_bins, out.num_delayeds, threads);
          for (const auto &b : blocks)
            out.num_time_blocks += b.blocks.size();
        });
  } catch (...) {
    for (auto &slot : slots) // the pinned buffers must outlive their copies
      if (slot.busy)
        try {
          slot.copied.synchronize();
        } catch (...) { // the first error is the one reported
        }
    throw;
  }
  for (auto &slot : slots)
    if (slot.busy)
      slot.copied.synchronize();
  return out;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
