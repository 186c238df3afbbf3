/// @file
/// @brief PETSIRD events straight into device memory
/// (`gpu::read_petsird_to_device`): the host reads the file in windows and
/// plans each window's prompt and delayed lists (io/petsird/planned_read.hpp);
/// a kernel decodes every varint on the device
/// (gpu/detail/petsird_decode.cuh) into arrays of detector pairs and TOF
/// bins, prompts and delayeds separately: the arrays of the host reader,
/// on the device.
///
///   gpu::stream s;
///   auto ev = gpu::read_petsird_to_device("scan.petsird", s);
///   const auto table = io::petsird::make_detector_table(ev.header.scanner);
///   // ev.prompt_pairs.data(), ev.prompt_tof_bins.data(): ev.num_prompts events
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/detail/petsird_decode.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/petsird/planned_read.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Options of `read_petsird_to_device`.
struct petsird_device_options {
  /// Host side: threads reading the file (0: the hardware's), window size
  /// (two pinned windows are used in turn; 8 MiB measured fastest, see
  /// docs/petsird.md), thread pool (`event_efficiencies` is not used).
  io::petsird::parallel_read_options decode{0, std::size_t(8) << 20, false, nullptr};
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

/// Makes pinned `b` hold at least `n` elements (contents not kept).
template <class T> void reserve_pinned(pinned_buffer<T> &b, std::size_t n) {
  if (b.size() < n)
    b = pinned_buffer<T>(std::max(n, b.size() + b.size() / 2));
}

/// The backend of `io::petsird::detail::read_planned` on the device: each
/// window's bytes and plan go from one of two pinned slots to the device,
/// where `petsird_decode_kernel` writes the events into `out`'s arrays.
/// The copies and kernels run on a high-priority stream of the decoder's
/// own, so that other work queued meanwhile (a sensitivity image on
/// another stream) does not hold them back; `out`'s arrays are allocated
/// on the caller's stream `s`, which waits for the decoding at the end.
class petsird_device_decoder {
public:
  petsird_device_decoder(device_petsird_events &out, stream_ref s)
      : out_(&out), s_(s), fast_(current_device(), stream_priority::high), bad_(1, s) {
    join(s_, fast_);
    bad_.fill(~0u, fast_);
  }
  petsird_device_decoder(const petsird_device_decoder &) = delete;
  petsird_device_decoder &operator=(const petsird_device_decoder &) = delete;
  /// Waits for the decoding stream (also after an error: the copies out of
  /// the pinned slots and the kernels writing into `out`).
  ~petsird_device_decoder() {
    try {
      fast_.synchronize();
    } catch (...) { // the first error is the one reported
    }
  }

  unsigned char *window_memory(std::size_t n) {
    current_ = 1 - current_;
    slot &sl = slots_[current_];
    if (sl.busy)
      sl.copied.synchronize(); // its copies have left the pinned memory
    sl.busy = false;
    reserve_pinned(sl.bytes, n);
    return sl.bytes.data();
  }

  /// `to` waits for the work queued so far on `from`.
  void join(stream_ref from, stream_ref to) {
    joined_.record(from);
    joined_.make_wait(to);
  }

  /// Makes `b` (allocated on the caller's stream) hold at least `needed`
  /// elements, doubling, the first `used` copied on the decoding stream (no
  /// normal-priority work for the decoding to wait for).
  template <class T>
  void reserve(device_buffer<T> &b, std::size_t used, std::size_t needed) {
    if (needed <= b.size())
      return;
    device_buffer<T> bigger(std::max(needed, 2 * b.size()), s_);
    join(s_, fast_);
    if (used > 0)
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(bigger.data(), b.data(), used * sizeof(T),
                                       cudaMemcpyDeviceToDevice, fast_.get()));
    join(fast_, s_); // the old buffer is freed on s_ after the copy
    b = std::move(bigger);
  }

  void decode(const unsigned char *, std::size_t n,
              const io::petsird::detail::window_plan &plan, std::size_t index) {
    namespace pd = io::petsird::detail;
    slot &sl = slots_[current_];
    reserve_pinned(sl.lists, plan.lists.size());
    reserve_pinned(sl.tiles, plan.tiles.size());
    std::copy(plan.lists.begin(), plan.lists.end(), sl.lists.data());
    std::copy(plan.tiles.begin(), plan.tiles.end(), sl.tiles.data());
    device_petsird_events &o = *out_;
    const std::size_t np = std::size_t(plan.prompts), nd = std::size_t(plan.delayeds);
    reserve(o.prompt_pairs, 2 * o.num_prompts, 2 * (o.num_prompts + np));
    reserve(o.prompt_tof_bins, o.num_prompts, o.num_prompts + np);
    reserve(o.delayed_pairs, 2 * o.num_delayeds, 2 * (o.num_delayeds + nd));
    reserve(o.delayed_tof_bins, o.num_delayeds, o.num_delayeds + nd);
    const std::size_t padded = (n + io::petsird::varint_page_bytes - 1) /
                               io::petsird::varint_page_bytes *
                               io::petsird::varint_page_bytes;
    if (window_.size() < padded)
      window_ = device_buffer<unsigned char>(padded + padded / 2, fast_);
    if (lists_.size() < plan.lists.size())
      lists_ = device_buffer<pd::coincidence_list>(2 * plan.lists.size(), fast_);
    if (tiles_.size() < plan.tiles.size())
      tiles_ = device_buffer<pd::list_tile>(2 * plan.tiles.size(), fast_);
    window_.copy_from_host(sl.bytes.data(), n, 0, fast_);
    if (padded > n) // the tail of the last page is read, never decoded
      RESPROJ_CUDA_TRY(cudaMemsetAsync(window_.data() + n, 0, padded - n, fast_.get()));
    lists_.copy_from_host(sl.lists.data(), plan.lists.size(), 0, fast_);
    tiles_.copy_from_host(sl.tiles.data(), plan.tiles.size(), 0, fast_);
    sl.copied.record(fast_);
    sl.busy = true;
    const std::size_t threads = 32 * plan.tiles.size();
    launch(petsird_decode_kernel,
           (threads + petsird_decode_threads - 1) / petsird_decode_threads,
           petsird_decode_threads, fast_, "petsird_decode_kernel", window_.data(),
           tiles_.data(), std::uint64_t(plan.tiles.size()), lists_.data(),
           o.prompt_pairs.data(), o.prompt_tof_bins.data(), o.delayed_pairs.data(),
           o.delayed_tof_bins.data(), bad_.data(), unsigned(index));
    o.num_prompts += np;
    o.num_delayeds += nd;
  }

  /// Waits for the decoding; the first window the kernel found bad, or ~0.
  std::size_t first_bad_window() {
    unsigned bad = 0;
    bad_.copy_to_host(&bad, 1, 0, fast_);
    fast_.synchronize();
    join(fast_, s_);
    return bad == ~0u ? ~std::size_t(0) : std::size_t(bad);
  }

private:
  struct slot {
    pinned_buffer<unsigned char> bytes;
    pinned_buffer<io::petsird::detail::coincidence_list> lists;
    pinned_buffer<io::petsird::detail::list_tile> tiles;
    event copied;
    bool busy = false;
  };
  device_petsird_events *out_;
  stream_ref s_;
  stream fast_; // outlives the buffers below, which are freed in its order
  event joined_;
  slot slots_[2];
  int current_ = 1;
  device_buffer<unsigned char> window_;
  device_buffer<io::petsird::detail::coincidence_list> lists_;
  device_buffer<io::petsird::detail::list_tile> tiles_;
  device_buffer<unsigned> bad_;
};

} // namespace detail

/// Reads every prompt and delayed event of the PETSIRD file `path` into
/// device memory on stream `s` (the current device). The file is read in
/// windows (`options.decode`) into two pinned buffers in turn by several
/// host threads, which also count the ends of its varints per 1 KiB page;
/// one host thread plans the window's prompt and delayed lists from those
/// counts, and a kernel decodes every varint on its own into the device
/// arrays while the next window is read. The arrays equal those of
/// `io::petsird::reader`, and so do the errors: a window found bad is
/// decoded again on the host to name the problem. The decoding runs on a
/// high-priority stream of its own (kernels queued on other streams, such
/// as a sensitivity image, do not hold it back). Host-blocking: returns
/// when the file has been read and decoded; the arrays are allocated on `s`
/// and ready in its order. Not graph-capturable.
/// @throws invalid_argument ("s") for the legacy default stream.
/// @throws io_error as `io::petsird::reader` (nothing is usable then);
///         gpu_error / gpu_out_of_memory from the runtime.
inline device_petsird_events
read_petsird_to_device(const std::string &path, stream_ref s,
                       const petsird_device_options &options = {}) {
  detail::require_explicit_stream(s, "s");
  device_petsird_events out;
  detail::petsird_device_decoder decoder(out, s);
  const io::petsird::detail::planned_read_result r =
      io::petsird::detail::read_planned(path, options.decode, decoder);
  out.header = r.header;
  out.num_time_blocks = std::size_t(r.num_time_blocks);
  return out;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
