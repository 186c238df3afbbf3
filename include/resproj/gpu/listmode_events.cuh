/// @file
/// @brief List-mode event records on the device: validation against a
/// detector table size and a TOF bin count (CUB reduction: how many events
/// are invalid and the first one), and conversion between packed 10-byte
/// `listmode_event` records and the projectors' split arrays
/// (detector pairs as int32 x 2, TOF bins as int16).
///
///   std::size_t bytes = gpu::validate_events_workspace_bytes(n);
///   gpu::device_buffer<unsigned char> ws(bytes, s);
///   gpu::validate_events(events, num_detectors, num_bins, ws.data(), bytes,
///                        d_result, s);                      // async
///   auto r = gpu::validate_events(events, num_detectors, num_bins, s);  // blocking
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/check_device_span.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// One event's contribution to the validation reduction: (1, i) if event i
/// is invalid, (0, count) otherwise.
struct event_check_packed {
  const listmode_event *events;
  std::int64_t num_detectors;
  int num_tof_bins;
  std::size_t count;
  RESPROJ_HD event_check_result operator()(std::size_t i) const {
    const listmode_event e = events[i];
    const bool ok = scanner::event_is_valid(e.detector_a(), e.detector_b(), e.tof_bin(),
                                            num_detectors, num_tof_bins);
    event_check_result r;
    r.num_invalid = ok ? 0 : 1;
    r.first_invalid = ok ? count : i;
    return r;
  }
};

/// As `event_check_packed` for split arrays (`bins` null: not checked).
struct event_check_split {
  const std::int32_t *pairs;
  const std::int16_t *bins;
  std::int64_t num_detectors;
  int num_tof_bins;
  std::size_t count;
  RESPROJ_HD event_check_result operator()(std::size_t i) const {
    const bool ok = scanner::event_is_valid(
        pairs[2 * i], pairs[2 * i + 1], bins != nullptr ? int(bins[i]) : 0, num_detectors,
        bins != nullptr ? num_tof_bins : 0);
    event_check_result r;
    r.num_invalid = ok ? 0 : 1;
    r.first_invalid = ok ? count : i;
    return r;
  }
};

/// Combines two partial results: counts add, the first index is the least.
struct event_check_combine {
  RESPROJ_HD event_check_result operator()(const event_check_result &a,
                                           const event_check_result &b) const {
    event_check_result r;
    r.num_invalid = a.num_invalid + b.num_invalid;
    r.first_invalid =
        a.first_invalid < b.first_invalid ? a.first_invalid : b.first_invalid;
    return r;
  }
};

template <class F> auto event_check_iterator(const F &f) {
  return thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), f);
}

/// Runs the reduction (or, with temp == nullptr, sizes it).
template <class F>
void event_check_reduce(void *temp, std::size_t &temp_bytes, const F &f,
                        event_check_result *d_result, std::size_t count, cudaStream_t s) {
  event_check_result init;
  init.num_invalid = 0;
  init.first_invalid = count;
  RESPROJ_CUDA_TRY(cub::DeviceReduce::Reduce(temp, temp_bytes, event_check_iterator(f),
                                             d_result, count, event_check_combine{}, init,
                                             s));
}

inline void check_validation_args(std::int64_t num_detectors, const void *workspace,
                                  std::size_t workspace_bytes, std::size_t needed,
                                  const event_check_result *d_result, int device) {
  scanner::detail::check_validation_sizes(num_detectors);
  if (d_result == nullptr)
    resproj::detail::throw_invalid("result", "null pointer");
  require_device_pointer(d_result, device, "result");
  if (workspace_bytes < needed)
    resproj::detail::throw_invalid("workspace_bytes",
                                   "too small: " + std::to_string(workspace_bytes) +
                                       " bytes, needs " + std::to_string(needed));
  if (needed > 0 && workspace == nullptr)
    resproj::detail::throw_invalid("workspace", "null pointer");
  require_device_pointer(workspace, device, "workspace");
}

/// The result of validating no events: (0, 0).
inline void write_empty_result(event_check_result *result, stream_ref s) {
  RESPROJ_CUDA_TRY(cudaMemsetAsync(result, 0, sizeof(event_check_result), s.get()));
}

/// Splits the pair / bin array sizes of split-array calls: returns the
/// event count. @throws invalid_argument ("pairs", "tof_bins").
inline std::size_t split_event_count(std::size_t pairs_size, std::size_t bins_size) {
  if (pairs_size % 2 != 0)
    resproj::detail::throw_invalid("pairs",
                                   "size must be even (two detectors per event), "
                                   "got " +
                                       std::to_string(pairs_size));
  const std::size_t n = pairs_size / 2;
  if (bins_size != 0 && bins_size != n)
    resproj::detail::throw_invalid(
        "tof_bins", "must be empty or hold one bin per event (" + std::to_string(n) +
                        "), holds " + std::to_string(bins_size));
  return n;
}

template <class E>
__global__ void split_events_kernel(const E *events, std::size_t count,
                                    std::int32_t *pairs, std::int16_t *bins) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  const E e = events[i];
  const std::uint32_t a = e.detector_a(), b = e.detector_b();
  // Same rule as scanner::split_events: indices >= 2^31 become -1.
  pairs[2 * i] = a > 0x7fffffffu ? std::int32_t(-1) : std::int32_t(a);
  pairs[2 * i + 1] = b > 0x7fffffffu ? std::int32_t(-1) : std::int32_t(b);
  if (bins != nullptr)
    bins[i] = e.tof_bin();
}

template <class E>
__global__ void pack_events_kernel(const std::int32_t *pairs, const std::int16_t *bins,
                                   std::size_t count, E *events) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  events[i] = E::make(std::uint32_t(pairs[2 * i]), std::uint32_t(pairs[2 * i + 1]),
                      bins != nullptr ? bins[i] : std::int16_t(0));
}

} // namespace detail

/// Bytes of device workspace `validate_events` needs for `count` events
/// (CUB's temporary storage; the same for records and split arrays).
/// Host-only; needs a current CUDA device; enqueues nothing.
inline std::size_t validate_events_workspace_bytes(std::size_t count) {
  std::size_t a = 0, b = 0;
  detail::event_check_reduce(nullptr, a, detail::event_check_packed{nullptr, 0, 0, count},
                             nullptr, count, cudaStream_t(nullptr));
  detail::event_check_reduce(nullptr, b,
                             detail::event_check_split{nullptr, nullptr, 0, 0, count},
                             nullptr, count, cudaStream_t(nullptr));
  const std::size_t bytes = a > b ? a : b;
  return bytes > 0 ? bytes : 1;
}

/// Validates device-resident list-mode records on the GPU with the rule of
/// `scanner::event_is_valid` (detectors in `[0, num_detectors)`, TOF bin in
/// `[0, num_tof_bins)` unless `num_tof_bins <= 0`), writing to `result` (one
/// device `event_check_result`) how many events are invalid and the index
/// of the first (the event count if none).
/// @param events          records in device memory (current device)
/// @param num_detectors   detector table size, >= 0
/// @param num_tof_bins    TOF bins, or 0 for non-TOF events
/// @param workspace       device memory of `workspace_bytes` bytes
/// @param workspace_bytes at least `validate_events_workspace_bytes(events.size())`
///                        (no workspace is needed for no events)
/// @param result          device output
/// @param s               stream (not the legacy default stream)
/// @throws invalid_argument ("num_detectors", "events", "workspace",
///         "workspace_bytes", "result", "stream") before anything is enqueued;
///         gpu_error on CUDA failures.
/// Asynchronous; no allocation; graph-capturable.
inline void validate_events(span<const listmode_event> events, std::int64_t num_detectors,
                            int num_tof_bins, void *workspace,
                            std::size_t workspace_bytes, event_check_result *result,
                            stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const int device = current_device();
  const std::size_t n = events.size();
  detail::check_validation_args(num_detectors, workspace, workspace_bytes,
                                n > 0 ? validate_events_workspace_bytes(n) : 0, result,
                                device);
  if (n > 0) {
    if (events.data() == nullptr)
      resproj::detail::throw_invalid("events", "null pointer");
    require_device_pointer(events.data(), device, "events");
  }
  if (n == 0) {
    detail::write_empty_result(result, s);
    return;
  }
  std::size_t bytes = workspace_bytes;
  detail::event_check_reduce(
      workspace, bytes,
      detail::event_check_packed{events.data(), num_detectors, num_tof_bins, n}, result,
      n, s.get());
}

/// As above for split device arrays: `pairs` holds `[a b]` per event,
/// `tof_bins` one bin per event or is empty (bins not checked).
/// @throws as above, and "pairs" (odd size), "tof_bins" (wrong size).
/// Asynchronous; no allocation; graph-capturable.
inline void validate_events(span<const std::int32_t> pairs,
                            span<const std::int16_t> tof_bins, std::int64_t num_detectors,
                            int num_tof_bins, void *workspace,
                            std::size_t workspace_bytes, event_check_result *result,
                            stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const int device = current_device();
  const std::size_t n = detail::split_event_count(pairs.size(), tof_bins.size());
  detail::check_validation_args(num_detectors, workspace, workspace_bytes,
                                n > 0 ? validate_events_workspace_bytes(n) : 0, result,
                                device);
  detail::check_device_span(pairs.data(), pairs.size(), 2 * n, "pairs", device);
  detail::check_device_span(tof_bins.data(), tof_bins.size(), tof_bins.size(), "tof_bins",
                            device);
  if (n > 0 && pairs.data() == nullptr)
    resproj::detail::throw_invalid("pairs", "null pointer");
  if (!tof_bins.empty() && tof_bins.data() == nullptr)
    resproj::detail::throw_invalid("tof_bins", "null pointer");
  if (n == 0) {
    detail::write_empty_result(result, s);
    return;
  }
  std::size_t bytes = workspace_bytes;
  detail::event_check_reduce(
      workspace, bytes,
      detail::event_check_split{pairs.data(),
                                tof_bins.empty() ? nullptr : tof_bins.data(),
                                num_detectors, num_tof_bins, n},
      result, n, s.get());
}

/// Convenience form: validates device-resident records and returns the
/// result on the host. ALLOCATES its workspace (stream-ordered) and is
/// HOST-BLOCKING (synchronises `s`); use the workspace form in hot loops.
/// @throws as the asynchronous form.
inline event_check_result validate_events(span<const listmode_event> events,
                                          std::int64_t num_detectors, int num_tof_bins,
                                          stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const std::size_t bytes = validate_events_workspace_bytes(events.size());
  device_buffer<unsigned char> ws(bytes, s);
  device_buffer<event_check_result> d_result(1, s);
  validate_events(events, num_detectors, num_tof_bins, ws.data(), bytes, d_result.data(),
                  s);
  event_check_result r;
  d_result.copy_to_host(&r, 1, 0, s);
  s.synchronize();
  return r;
}

/// Convenience form for split device arrays (see above). ALLOCATES and is
/// HOST-BLOCKING. @throws as the asynchronous form.
inline event_check_result validate_events(span<const std::int32_t> pairs,
                                          span<const std::int16_t> tof_bins,
                                          std::int64_t num_detectors, int num_tof_bins,
                                          stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const std::size_t n = detail::split_event_count(pairs.size(), tof_bins.size());
  const std::size_t bytes = validate_events_workspace_bytes(n);
  device_buffer<unsigned char> ws(bytes, s);
  device_buffer<event_check_result> d_result(1, s);
  validate_events(pairs, tof_bins, num_detectors, num_tof_bins, ws.data(), bytes,
                  d_result.data(), s);
  event_check_result r;
  d_result.copy_to_host(&r, 1, 0, s);
  s.synchronize();
  return r;
}

/// Splits device-resident records into the projectors' device arrays, as
/// `scanner::split_events` (`pairs[2 i]`, `pairs[2 i + 1]` = detectors of
/// event i, indices >= 2^31 become -1; `tof_bins[i]` its bin). `tof_bins`
/// may be empty (non-TOF: not written). Nothing is validated beyond sizes.
/// @throws invalid_argument ("events", "pairs", "tof_bins", "stream") for
///         null, host or too-small arrays, before anything is enqueued.
/// Asynchronous; no allocation; graph-capturable.
inline void split_events(span<const listmode_event> events, span<std::int32_t> pairs,
                         span<std::int16_t> tof_bins, stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const int device = current_device();
  const std::size_t n = events.size();
  if (n > 0 && events.data() == nullptr)
    resproj::detail::throw_invalid("events", "null pointer");
  detail::check_device_span(events.data(), n, n, "events", device);
  detail::check_device_span(pairs.data(), pairs.size(), 2 * n, "pairs", device);
  if (!tof_bins.empty())
    detail::check_device_span(tof_bins.data(), tof_bins.size(), n, "tof_bins", device);
  if (n > 0 && pairs.data() == nullptr)
    resproj::detail::throw_invalid("pairs", "null pointer");
  if (!tof_bins.empty() && tof_bins.data() == nullptr)
    resproj::detail::throw_invalid("tof_bins", "null pointer");
  detail::launch(detail::split_events_kernel<listmode_event>, (n + 255) / 256, 256, s,
                 "split_events_kernel", events.data(), n, pairs.data(),
                 tof_bins.empty() ? static_cast<std::int16_t *>(nullptr)
                                  : tof_bins.data());
}

/// Packs device arrays into device records (the inverse of
/// `split_events`; as `scanner::pack_events`): `tof_bins` may be empty
/// (bins stored as 0); negative indices are stored as their uint32 bit
/// pattern. `events` must hold at least pairs.size() / 2 records.
/// @throws invalid_argument ("pairs" odd / null / host, "tof_bins" wrong
///         size, "events" too small, "stream") before anything is enqueued.
/// Asynchronous; no allocation; graph-capturable.
inline void pack_events(span<const std::int32_t> pairs, span<const std::int16_t> tof_bins,
                        span<listmode_event> events, stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const int device = current_device();
  const std::size_t n = detail::split_event_count(pairs.size(), tof_bins.size());
  if (n > 0 && pairs.data() == nullptr)
    resproj::detail::throw_invalid("pairs", "null pointer");
  if (n > 0 && events.data() == nullptr)
    resproj::detail::throw_invalid("events", "null pointer");
  detail::check_device_span(pairs.data(), pairs.size(), 2 * n, "pairs", device);
  detail::check_device_span(tof_bins.data(), tof_bins.size(), tof_bins.size(), "tof_bins",
                            device);
  detail::check_device_span(events.data(), events.size(), n, "events", device);
  detail::launch(detail::pack_events_kernel<listmode_event>, (n + 255) / 256, 256, s,
                 "pack_events_kernel", pairs.data(),
                 tof_bins.empty() ? static_cast<const std::int16_t *>(nullptr)
                                  : tof_bins.data(),
                 n, events.data());
}

} // namespace gpu
RESPROJ_NAMESPACE_END
