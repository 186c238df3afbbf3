/// @file
/// @brief The staging pipeline behind `lor_streamer`: per pipeline slot,
/// pinned host staging, device staging and a non-blocking stream; the
/// copies of host array chunks into a slot's staging; and the loop that
/// streams chunks through the slots so that the copies of one chunk overlap
/// the kernel of another.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/detail/parallel_copy.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// One pipeline slot of a streamer for value type T: its stream, its
/// staging (pinned host `h_*`, device `d_*`) and the state of the chunk it
/// last ran.
template <class T> struct streamer_slot {
  explicit streamer_slot(std::size_t n)
      : stream(), d_starts(3 * n, stream), d_ends(3 * n, stream), d_data(n, stream),
        h_starts(3 * n), h_ends(3 * n), h_data(n) {}
  gpu::stream stream;
  device_buffer<T> d_starts, d_ends;
  /// Values of a chunk (output or input), `values_per_lor` per LOR;
  /// grows with the first call that needs more (see `reserve`).
  device_buffer<T> d_data;
  pinned_buffer<T> h_starts, h_ends, h_data;
  event done;
  bool busy = false;
  T *pending_out = nullptr; ///< where h_data must be copied once done
  std::size_t pending_count = 0;
  // Staging allocated by the first call that needs it (see `reserve`):
  // per-LOR sigma and centre offset, list-mode bins, detector pairs and
  // packed records (split on the device).
  device_buffer<T> d_sigmas, d_offsets;
  pinned_buffer<T> h_sigmas, h_offsets;
  device_buffer<std::int16_t> d_bins;
  pinned_buffer<std::int16_t> h_bins;
  device_buffer<std::int32_t> d_pairs;
  pinned_buffer<std::int32_t> h_pairs;
  device_buffer<listmode_event> d_events;
  pinned_buffer<listmode_event> h_events;
};

/// The staging a call needs beyond end points and values: detector pairs,
/// packed records, and an operation's per-LOR TOF sigmas, centre offsets
/// and bins.
struct streamer_staging {
  bool pairs = false, events = false;
  bool sigmas = false, offsets = false, bins = false;
};

/// The slots of a streamer for value type T, the host copy threads, and the
/// chunk loop. Lives on the device current at construction.
template <class T> class streamer_pipeline {
public:
  using slot = streamer_slot<T>;

  /// @throws invalid_argument ("max_chunk", "slots"); gpu_out_of_memory.
  /// Synchronises the new streams once (allocation is complete on return).
  streamer_pipeline(std::size_t max_chunk, int slots, int copy_threads)
      : max_chunk_(max_chunk), device_(current_device()) {
    if (max_chunk == 0)
      resproj::detail::throw_invalid("max_chunk", "must be > 0");
    if (slots < 2)
      resproj::detail::throw_invalid("slots",
                                     "must be >= 2 (got " + std::to_string(slots) + ")");
    slots_.reserve(std::size_t(slots));
    for (int i = 0; i < slots; ++i)
      slots_.emplace_back(max_chunk);
    for (auto &sl : slots_)
      sl.stream.synchronize();
    if (copy_threads < 0)
      copy_threads =
          int(std::min(4u, std::max(1u, std::thread::hardware_concurrency() / 2)));
    copier_ = std::make_unique<parallel_copier>(
        unsigned(copy_threads > 0 ? copy_threads - 1 : 0));
  }

  std::size_t max_chunk() const noexcept { return max_chunk_; }
  int device() const noexcept { return device_; }

  /// Allocates the staging a call needs, once (the values staging grows
  /// when a call needs more values per LOR than before).
  void reserve(std::size_t per_lor, const streamer_staging &need) {
    const std::size_t n = max_chunk_;
    const device_guard guard(device_);
    for (auto &sl : slots_) {
      grow(sl, sl.d_data, sl.h_data, n * per_lor);
      if (need.pairs)
        grow(sl, sl.d_pairs, sl.h_pairs, 2 * n);
      if (need.events)
        grow(sl, sl.d_events, sl.h_events, n);
      if (need.bins)
        grow(sl, sl.d_bins, sl.h_bins, n);
      if (need.sigmas)
        grow(sl, sl.d_sigmas, sl.h_sigmas, n);
      if (need.offsets)
        grow(sl, sl.d_offsets, sl.h_offsets, n);
    }
  }

  /// Copies one host array chunk `host[first, first + n)` into a slot's
  /// device staging (through its pinned staging unless the array is
  /// pinned) on the slot's stream.
  template <class E>
  void stage(slot &sl, const E *host, std::size_t first, std::size_t n, E *pinned,
             E *device) {
    const E *src = host + first;
    if (!is_pinned(host)) {
      copier_->copy(pinned, src, n * sizeof(E));
      src = pinned;
    }
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(device, src, n * sizeof(E), cudaMemcpyHostToDevice,
                                     sl.stream.get()));
  }

  /// The operation of chunk [first, first + n): its per-LOR host arrays
  /// staged to the slot's device staging. Empty list-mode bins are the
  /// records' bins, split into the slot's bins when the records are staged.
  op::non_tof stage_operation(slot &, const op::non_tof &o, std::size_t, std::size_t) {
    return o;
  }
  op::tof_sinogram<T> stage_operation(slot &sl, const op::tof_sinogram<T> &o,
                                      std::size_t first, std::size_t n) {
    return op::tof_sinogram<T>(stage_tof(sl, o.tof, first, n));
  }
  op::tof_listmode<T> stage_operation(slot &sl, const op::tof_listmode<T> &o,
                                      std::size_t first, std::size_t n) {
    const tof_params<T> t = stage_tof(sl, o.tof, first, n);
    if (o.bins.empty())
      return op::tof_listmode<T>(t, span<const std::int16_t>(sl.d_bins.data(), n));
    stage(sl, o.bins.data(), first, n, sl.h_bins.data(), sl.d_bins.data());
    return op::tof_listmode<T>(t, span<const std::int16_t>(sl.d_bins.data(), n));
  }

  /// Streams chunks of at most `max_chunk` of `count` LORs through the
  /// slots, after the work queued so far on `s`: per chunk, waits for the
  /// slot's previous chunk (delivering its staged results) and calls
  /// `enqueue(slot, first, n)` to stage and enqueue the chunk on the slot's
  /// stream. Returns when every chunk is done and delivered; on an
  /// exception, waits for whatever was enqueued and rethrows.
  template <class Enqueue> void run(std::size_t count, stream_ref s, Enqueue &&enqueue) {
    if (count == 0)
      return;
    const device_guard guard(device_);
    // The slots follow the caller's stream (image upload, zeroing, ...).
    start_.record(s);
    for (auto &sl : slots_)
      start_.make_wait(sl.stream);
    try {
      std::size_t k = 0;
      for (std::size_t first = 0; first < count; first += max_chunk_, ++k) {
        const std::size_t n = std::min(max_chunk_, count - first);
        slot &sl = slots_[k % slots_.size()];
        drain(sl);
        enqueue(sl, first, n);
        sl.done.record(sl.stream);
        sl.busy = true;
      }
      for (auto &sl : slots_)
        drain(sl);
    } catch (...) {
      // Leave the pipeline usable: wait for whatever was enqueued.
      for (auto &sl : slots_) {
        cudaStreamSynchronize(sl.stream.get());
        sl.busy = false;
        sl.pending_out = nullptr;
      }
      throw;
    }
  }

private:
  template <class E>
  static void grow(slot &sl, device_buffer<E> &d, pinned_buffer<E> &h, std::size_t n) {
    if (d.size() >= n && h.size() >= n)
      return;
    // Both made before either is replaced: a failed allocation leaves the
    // slot's staging as it was (device and host of one size).
    device_buffer<E> bigger_d(n, sl.stream);
    pinned_buffer<E> bigger_h(n);
    d = std::move(bigger_d);
    h = std::move(bigger_h);
  }

  /// The chunk's TOF parameters with per-LOR arrays staged to the device.
  tof_params<T> stage_tof(slot &sl, const tof_params<T> &host_tof, std::size_t first,
                          std::size_t n) {
    tof_params<T> t = host_tof;
    if (!host_tof.sigmas.empty()) {
      stage(sl, host_tof.sigmas.data(), first, n, sl.h_sigmas.data(), sl.d_sigmas.data());
      t.sigmas = span<const T>(sl.d_sigmas.data(), n);
    }
    if (!host_tof.center_offsets.empty()) {
      stage(sl, host_tof.center_offsets.data(), first, n, sl.h_offsets.data(),
            sl.d_offsets.data());
      t.center_offsets = span<const T>(sl.d_offsets.data(), n);
    }
    return t;
  }

  /// Waits for a slot's previous chunk and delivers its staged results.
  void drain(slot &sl) {
    if (!sl.busy)
      return;
    sl.done.synchronize();
    if (sl.pending_out != nullptr)
      copier_->copy(sl.pending_out, sl.h_data.data(), sl.pending_count * sizeof(T));
    sl.pending_out = nullptr;
    sl.busy = false;
  }

  std::size_t max_chunk_;
  int device_;
  std::vector<slot> slots_;
  event start_;
  std::unique_ptr<parallel_copier> copier_;
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
