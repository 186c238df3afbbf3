/// @file
/// @brief `lor_streamer<T>`: projection of LORs that live in host memory
/// (STIR-style callers), streamed through preallocated pinned and device
/// staging with the copy of one chunk overlapping the compute of another.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/parallel_copy.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tof_projector.cuh"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Streams host-resident LORs through the GPU in chunks of at most
/// `max_chunk` LORs. The LORs are explicit end points (24 bytes per LOR
/// for float), detector pairs against a resident detector table (8 bytes
/// per LOR, 10 with list-mode TOF bins) or packed `scanner::listmode_event`
/// records (10 bytes per event, split on the device). Owns, per pipeline
/// slot, pinned host staging, device staging and a non-blocking stream.
/// The end-point staging is allocated at construction; the first call that
/// needs TOF, detector-pair or record staging allocates it (once); later
/// calls allocate nothing.
///
/// Pipeline (per chunk k, slot k mod slots): host copy into pinned staging
/// (skipped when the caller's array is already pinned), host-to-device
/// copy, kernel, device-to-host copy of the results, all on the slot's
/// stream, so the transfers of chunk k+1 overlap the kernel of chunk k.
///
/// Every call is HOST-BLOCKING: it returns when the results are in the
/// caller's host arrays and the host arrays may be reused. Not
/// graph-capturable. Thread safety: one call at a time per streamer (use
/// one streamer per host thread). The streamer's memory lives on the
/// device that was current at construction; images must be on that device.
template <class T> class lor_streamer {
public:
  /// @param max_chunk  LORs per chunk (staging capacity), > 0
  /// @param slots      pipeline depth (>= 2)
  /// @param options    thread-to-LOR mapping of the kernels (`rows` is
  ///                    ignored: chunks are taken in memory order)
  /// @param copy_threads host threads that copy pageable arrays into the
  ///                    pinned staging (-1: min(4, hardware threads / 2))
  /// @throws invalid_argument for max_chunk == 0 or slots < 2;
  ///         gpu_out_of_memory if staging cannot be allocated.
  /// Synchronises the new streams once (allocation is complete on return).
  explicit lor_streamer(std::size_t max_chunk, int slots = 3,
                        const launch_options &options = {}, int copy_threads = -1)
      : max_chunk_(max_chunk), device_(current_device()), options_(options) {
    options_.rows = 0;
    options_.check_pointers = false; // staging is ours; the image is checked per call
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
    copier_ = std::make_unique<detail::parallel_copier>(
        unsigned(copy_threads > 0 ? copy_threads - 1 : 0));
  }

  std::size_t max_chunk() const noexcept { return max_chunk_; }
  int device() const noexcept { return device_; }

  /// Forward projection of host LORs: `host_out[i]` = value of LOR i.
  /// @param image     resident image on the streamer's device
  /// @param host_lors LORs in host memory (pageable or pinned), any count
  /// @param host_out  host output, at least `host_lors.count` values
  /// @param s         stream whose earlier work (e.g. the image upload) the
  ///                  projection must follow
  /// @throws invalid_argument (null pointers, device memory given as host
  ///         arrays, too-small output, image on another device) before any
  ///         work is enqueued; gpu_error on CUDA failures.
  /// Host-blocking: returns when `host_out` holds the results.
  void forward(device_image_view<const T> image, lor_view<const T> host_lors,
               span<T> host_out, stream_ref s) {
    forward_impl(image, end_point_source{host_lors}, host_out, s);
  }

  /// Forward projection of host-resident detector pairs against a
  /// resident detector table: moves 8 bytes per LOR over the bus (24 for
  /// end points). `host_lors.detectors` is device memory on the streamer's
  /// device (e.g. a `device_buffer`), `host_lors.pairs` host memory
  /// (pageable or pinned). Indices are not checked per LOR (validate them
  /// once, e.g. with scanner::validate_events).
  /// @throws as the end-point form ("host_lors.detectors", "host_lors.pairs").
  /// Host-blocking: returns when `host_out` holds the results.
  void forward(device_image_view<const T> image, detector_pairs<T> host_lors,
               span<T> host_out, stream_ref s) {
    forward_impl(image, pair_source{host_lors}, host_out, s);
  }

  /// Forward projection of host-resident packed list-mode records (10
  /// bytes per event over the bus, TOF bins ignored) against a resident
  /// detector table (`detectors`: xyz per detector, device memory). The
  /// records are split on the device. Events are not checked (validate
  /// them once, e.g. with scanner::validate_events).
  /// @throws as the end-point form ("detectors", "host_events").
  /// Host-blocking: returns when `host_out` holds the results.
  void forward(device_image_view<const T> image, span<const T> detectors,
               span<const scanner::listmode_event> host_events, span<T> host_out,
               stream_ref s) {
    forward_impl(image, event_source{detectors, host_events, false}, host_out, s);
  }

  /// Back projection of host LORs with host values (accumulates into the
  /// image; zero it first for a plain back projection).
  /// @param image       resident image on the streamer's device
  /// @param host_lors   LORs in host memory, any count
  /// @param host_values at least `host_lors.count` values in host memory
  /// @param s           stream ordering the image's earlier work
  /// @throws as `forward` ("host_values").
  /// Host-blocking: returns when the back projection is complete on the GPU.
  void back(device_image_view<T> image, lor_view<const T> host_lors,
            span<const T> host_values, stream_ref s) {
    back_impl(image, end_point_source{host_lors}, host_values, s);
  }

  /// Back projection of host detector pairs (see the detector-pair `forward`).
  /// Host-blocking.
  void back(device_image_view<T> image, detector_pairs<T> host_lors,
            span<const T> host_values, stream_ref s) {
    back_impl(image, pair_source{host_lors}, host_values, s);
  }

  /// Back projection of host packed records (see the record `forward`).
  /// Host-blocking.
  void back(device_image_view<T> image, span<const T> detectors,
            span<const scanner::listmode_event> host_events, span<const T> host_values,
            stream_ref s) {
    back_impl(image, event_source{detectors, host_events, false}, host_values, s);
  }

  /// TOF sinogram forward projection of host LORs: `host_out[i * N + j]` =
  /// value of LOR i at TOF bin j (N = `host_tof.num_bins`).
  /// @param host_tof  TOF parameters; per-LOR `sigmas` / `center_offsets`,
  ///                  when given, are host arrays indexed like `host_lors`
  /// @param host_out  host output, at least `host_lors.count * N` values
  /// @throws as `forward`, plus the TOF parameters ("tof.sigma", ...).
  /// The first TOF call (or the first with more bins than before) allocates
  /// the streamer's TOF staging (max_chunk * N values per slot); later calls
  /// allocate nothing. Host-blocking: returns when `host_out` holds the
  /// results.
  void forward_tof_sino(device_image_view<const T> image, lor_view<const T> host_lors,
                        const tof_params<T> &host_tof, span<T> host_out, stream_ref s) {
    forward_tof_sino_impl(image, end_point_source{host_lors}, host_tof, host_out, s);
  }

  /// As above for host detector pairs and a resident detector table.
  void forward_tof_sino(device_image_view<const T> image, detector_pairs<T> host_lors,
                        const tof_params<T> &host_tof, span<T> host_out, stream_ref s) {
    forward_tof_sino_impl(image, pair_source{host_lors}, host_tof, host_out, s);
  }

  /// TOF sinogram back projection of host LORs with host values
  /// (`host_values[i * N + j]`); accumulates into the image.
  /// @throws as `forward_tof_sino` ("host_values").
  /// Host-blocking: returns when the back projection is complete on the GPU.
  void back_tof_sino(device_image_view<T> image, lor_view<const T> host_lors,
                     const tof_params<T> &host_tof, span<const T> host_values,
                     stream_ref s) {
    back_tof_sino_impl(image, end_point_source{host_lors}, host_tof, host_values, s);
  }

  /// As above for host detector pairs and a resident detector table.
  void back_tof_sino(device_image_view<T> image, detector_pairs<T> host_lors,
                     const tof_params<T> &host_tof, span<const T> host_values,
                     stream_ref s) {
    back_tof_sino_impl(image, pair_source{host_lors}, host_tof, host_values, s);
  }

  /// TOF list-mode forward projection of host events: `host_out[i]` = value
  /// of event i (LOR i at bin `host_bins[i]`).
  /// @param host_bins  host array of at least `host_lors.count` bins
  /// @throws as `forward_tof_sino`, and "host_bins".
  /// Host-blocking: returns when `host_out` holds the results.
  void forward_tof_lm(device_image_view<const T> image, lor_view<const T> host_lors,
                      span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                      span<T> host_out, stream_ref s) {
    forward_tof_lm_impl(image, end_point_source{host_lors}, host_bins, true, host_tof,
                        host_out, s);
  }

  /// As above for host detector pairs (and host bins) against a resident
  /// detector table: 10 bytes per event over the bus.
  void forward_tof_lm(device_image_view<const T> image, detector_pairs<T> host_lors,
                      span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                      span<T> host_out, stream_ref s) {
    forward_tof_lm_impl(image, pair_source{host_lors}, host_bins, true, host_tof,
                        host_out, s);
  }

  /// As above for host packed records (detector pairs and TOF bins, 10
  /// bytes per event over the bus) against a resident detector table
  /// (device memory, xyz per detector). Events are not checked (validate
  /// them once, e.g. with scanner::validate_events; a bin outside the bins
  /// contributes 0).
  /// @throws as the end-point form ("detectors", "host_events").
  void forward_tof_lm(device_image_view<const T> image, span<const T> detectors,
                      span<const scanner::listmode_event> host_events,
                      const tof_params<T> &host_tof, span<T> host_out, stream_ref s) {
    forward_tof_lm_impl(image, event_source{detectors, host_events, true}, {}, false,
                        host_tof, host_out, s);
  }

  /// TOF list-mode back projection of host events with host values
  /// (accumulates into the image).
  /// @throws as `forward_tof_lm` ("host_values").
  /// Host-blocking: returns when the back projection is complete on the GPU.
  void back_tof_lm(device_image_view<T> image, lor_view<const T> host_lors,
                   span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                   span<const T> host_values, stream_ref s) {
    back_tof_lm_impl(image, end_point_source{host_lors}, host_bins, true, host_tof,
                     host_values, s);
  }

  /// As above for host detector pairs and a resident detector table.
  void back_tof_lm(device_image_view<T> image, detector_pairs<T> host_lors,
                   span<const std::int16_t> host_bins, const tof_params<T> &host_tof,
                   span<const T> host_values, stream_ref s) {
    back_tof_lm_impl(image, pair_source{host_lors}, host_bins, true, host_tof,
                     host_values, s);
  }

  /// As above for host packed records and a resident detector table.
  void back_tof_lm(device_image_view<T> image, span<const T> detectors,
                   span<const scanner::listmode_event> host_events,
                   const tof_params<T> &host_tof, span<const T> host_values,
                   stream_ref s) {
    back_tof_lm_impl(image, event_source{detectors, host_events, true}, {}, false,
                     host_tof, host_values, s);
  }

private:
  struct slot;

  // Host LOR sources. Each checks its host arrays (`check`), allocates the
  // slots' staging it needs (`reserve`) and stages chunk [first, first + n)
  // to a slot's device staging on the slot's stream (`stage`, returning the
  // chunk's device LOR source).

  /// Explicit end points in host memory (24 bytes per LOR for float).
  struct end_point_source {
    lor_view<const T> host;
    std::size_t count() const { return host.count; }
    void check(lor_streamer &) const {
      resproj::detail::check_lors(host, "host_lors");
      if (host.count == 0)
        return;
      require_host_pointer(host.starts, "host_lors.starts");
      require_host_pointer(host.ends, "host_lors.ends");
    }
    void reserve(lor_streamer &) const {}
    lor_view<const T> stage(lor_streamer &st, slot &sl, std::size_t first,
                            std::size_t n) const {
      st.stage(sl, host.starts, 3 * first, 3 * n, sl.h_starts.data(), sl.d_starts.data());
      st.stage(sl, host.ends, 3 * first, 3 * n, sl.h_ends.data(), sl.d_ends.data());
      return sl.lors(n);
    }
  };

  /// Detector pairs in host memory, detector table on the device (8 bytes
  /// per LOR).
  struct pair_source {
    detector_pairs<T> host;
    std::size_t count() const { return host.count; }
    void check(lor_streamer &st) const {
      host.check("host_lors");
      if (host.count == 0)
        return;
      require_device_pointer(host.detectors, st.device_, "host_lors.detectors");
      require_host_pointer(host.pairs, "host_lors.pairs");
    }
    void reserve(lor_streamer &st) const { st.reserve_indexed(false, false); }
    detector_pairs<T> stage(lor_streamer &st, slot &sl, std::size_t first,
                            std::size_t n) const {
      st.stage(sl, host.pairs, 2 * first, 2 * n, sl.h_pairs.data(), sl.d_pairs.data());
      return detector_pairs<T>(host.detectors, host.num_detectors, sl.d_pairs.data(), n);
    }
  };

  /// Packed records in host memory (10 bytes per event), split on the
  /// device into pairs (and TOF bins when `with_bins`).
  struct event_source {
    span<const T> detectors;
    span<const scanner::listmode_event> host;
    bool with_bins;
    std::size_t count() const { return host.size(); }
    void check(lor_streamer &st) const {
      if (host.empty())
        return;
      if (detectors.empty() || detectors.data() == nullptr)
        resproj::detail::throw_invalid("detectors", "empty detector table");
      if (detectors.size() % 3 != 0)
        resproj::detail::throw_invalid("detectors",
                                       "size must be a multiple of 3 (xyz per detector), "
                                       "got " +
                                           std::to_string(detectors.size()));
      require_device_pointer(detectors.data(), st.device_, "detectors");
      if (host.data() == nullptr)
        resproj::detail::throw_invalid("host_events", "null pointer");
      require_host_pointer(host.data(), "host_events");
    }
    void reserve(lor_streamer &st) const { st.reserve_indexed(true, with_bins); }
    detector_pairs<T> stage(lor_streamer &st, slot &sl, std::size_t first,
                            std::size_t n) const {
      st.stage(sl, host.data(), first, n, sl.h_events.data(), sl.d_events.data());
      detail::launch(detail::split_events_kernel<scanner::listmode_event>,
                     (n + 255) / 256, 256, sl.stream, "split_events_kernel",
                     sl.d_events.data(), n, sl.d_pairs.data(),
                     with_bins ? sl.d_bins.data() : static_cast<std::int16_t *>(nullptr));
      return detector_pairs<T>(detectors.data(), detectors.size() / 3, sl.d_pairs.data(),
                               n);
    }
  };

  template <class Src>
  void forward_impl(const device_image_view<const T> &image, const Src &src,
                    span<T> host_out, stream_ref s) {
    check(image, src, host_out.data(), host_out.size(), "host_out", s);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const bool direct = out_pinned_;
      T *dst = direct ? host_out.data() + first : sl.h_data.data();
      gpu::forward<T>(image, lors, sl.d_data.span().subspan(0, n), options_, sl.stream);
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, sl.d_data.data(), n * sizeof(T),
                                       cudaMemcpyDeviceToHost, sl.stream.get()));
      sl.pending_out = direct ? nullptr : host_out.data() + first;
      sl.pending_count = n;
    });
  }

  template <class Src>
  void back_impl(const device_image_view<T> &image, const Src &src,
                 span<const T> host_values, stream_ref s) {
    check(image, src, host_values.data(), host_values.size(), "host_values", s);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      stage(sl, host_values.data(), first, n, sl.h_data.data(), sl.d_data.data());
      gpu::back<T>(image, lors, sl.d_data.cspan().subspan(0, n), options_, sl.stream);
      sl.pending_out = nullptr;
      sl.pending_count = 0;
    });
  }

  template <class Src>
  void forward_tof_sino_impl(const device_image_view<const T> &image, const Src &src,
                             const tof_params<T> &host_tof, span<T> host_out,
                             stream_ref s) {
    const std::size_t nb = std::size_t(host_tof.num_bins > 0 ? host_tof.num_bins : 0);
    check(image, src, host_out.data(), host_out.size(), "host_out", s, nb);
    check_tof_host(src.count(), host_tof, nullptr, 0, false);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    reserve_tof(nb, host_tof, false);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const tof_params<T> t = stage_tof(sl, host_tof, first, n);
      const bool direct = out_pinned_;
      T *dst = direct ? host_out.data() + first * nb : sl.h_rows.data();
      gpu::forward_tof_sino<T>(image, lors, t, sl.d_rows.span().subspan(0, n * nb),
                               options_, sl.stream);
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, sl.d_rows.data(), n * nb * sizeof(T),
                                       cudaMemcpyDeviceToHost, sl.stream.get()));
      sl.pending_out = direct ? nullptr : host_out.data() + first * nb;
      sl.pending_src = sl.h_rows.data();
      sl.pending_count = n * nb;
    });
  }

  template <class Src>
  void back_tof_sino_impl(const device_image_view<T> &image, const Src &src,
                          const tof_params<T> &host_tof, span<const T> host_values,
                          stream_ref s) {
    const std::size_t nb = std::size_t(host_tof.num_bins > 0 ? host_tof.num_bins : 0);
    check(image, src, host_values.data(), host_values.size(), "host_values", s, nb);
    check_tof_host(src.count(), host_tof, nullptr, 0, false);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    reserve_tof(nb, host_tof, false);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const tof_params<T> t = stage_tof(sl, host_tof, first, n);
      stage(sl, host_values.data(), first * nb, n * nb, sl.h_rows.data(),
            sl.d_rows.data());
      gpu::back_tof_sino<T>(image, lors, t, sl.d_rows.cspan().subspan(0, n * nb),
                            options_, sl.stream);
      sl.pending_out = nullptr;
      sl.pending_count = 0;
    });
  }

  /// `host_bins_given`: bins come from `host_bins` (else the source
  /// stages them into the slot's `d_bins`).
  template <class Src>
  void forward_tof_lm_impl(const device_image_view<const T> &image, const Src &src,
                           span<const std::int16_t> host_bins, bool host_bins_given,
                           const tof_params<T> &host_tof, span<T> host_out,
                           stream_ref s) {
    check(image, src, host_out.data(), host_out.size(), "host_out", s);
    check_tof_host(src.count(), host_tof, host_bins.data(), host_bins.size(),
                   host_bins_given);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    reserve_tof(0, host_tof, true);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const tof_params<T> t = stage_tof(sl, host_tof, first, n);
      const span<const std::int16_t> bins =
          host_bins_given ? stage_bins(sl, host_bins, first, n)
                          : span<const std::int16_t>(sl.d_bins.data(), n);
      const bool direct = out_pinned_;
      T *dst = direct ? host_out.data() + first : sl.h_data.data();
      gpu::forward_tof_lm<T>(image, lors, bins, t, sl.d_data.span().subspan(0, n),
                             options_, sl.stream);
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, sl.d_data.data(), n * sizeof(T),
                                       cudaMemcpyDeviceToHost, sl.stream.get()));
      sl.pending_out = direct ? nullptr : host_out.data() + first;
      sl.pending_count = n;
    });
  }

  template <class Src>
  void back_tof_lm_impl(const device_image_view<T> &image, const Src &src,
                        span<const std::int16_t> host_bins, bool host_bins_given,
                        const tof_params<T> &host_tof, span<const T> host_values,
                        stream_ref s) {
    check(image, src, host_values.data(), host_values.size(), "host_values", s);
    check_tof_host(src.count(), host_tof, host_bins.data(), host_bins.size(),
                   host_bins_given);
    if (src.count() == 0)
      return;
    src.reserve(*this);
    reserve_tof(0, host_tof, true);
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const tof_params<T> t = stage_tof(sl, host_tof, first, n);
      const span<const std::int16_t> bins =
          host_bins_given ? stage_bins(sl, host_bins, first, n)
                          : span<const std::int16_t>(sl.d_bins.data(), n);
      stage(sl, host_values.data(), first, n, sl.h_data.data(), sl.d_data.data());
      gpu::back_tof_lm<T>(image, lors, bins, t, sl.d_data.cspan().subspan(0, n), options_,
                          sl.stream);
      sl.pending_out = nullptr;
      sl.pending_count = 0;
    });
  }

  /// Allocates the detector-pair staging (and the packed-record staging
  /// when `events`; the bin staging when `bins`), once.
  void reserve_indexed(bool events, bool bins) {
    const device_guard guard(device_);
    for (auto &sl : slots_) {
      if (sl.d_pairs.size() < 2 * max_chunk_) {
        sl.d_pairs = device_buffer<std::int32_t>(2 * max_chunk_, sl.stream);
        sl.h_pairs = pinned_buffer<std::int32_t>(2 * max_chunk_);
      }
      if (events && sl.d_events.size() < max_chunk_) {
        sl.d_events = device_buffer<scanner::listmode_event>(max_chunk_, sl.stream);
        sl.h_events = pinned_buffer<scanner::listmode_event>(max_chunk_);
      }
      if (bins && sl.d_bins.size() < max_chunk_) {
        sl.d_bins = device_buffer<std::int16_t>(max_chunk_, sl.stream);
        sl.h_bins = pinned_buffer<std::int16_t>(max_chunk_);
      }
    }
  }

  /// TOF checks of a streamer call (after `check`): parameters, host bins
  /// and host per-LOR arrays.
  void check_tof_host(std::size_t count, const tof_params<T> &tof,
                      const std::int16_t *bins, std::size_t bins_size, bool with_bins) {
    resproj::detail::check_tof(tof, count);
    if (with_bins) {
      if (bins_size < count)
        resproj::detail::throw_invalid("host_bins",
                                       "too small: holds " + std::to_string(bins_size) +
                                           " elements, needs " + std::to_string(count));
      if (count > 0 && bins == nullptr)
        resproj::detail::throw_invalid("host_bins", "null pointer");
    }
    if (count == 0)
      return;
    if (!tof.sigmas.empty())
      require_host_pointer(tof.sigmas.data(), "tof.sigmas");
    if (!tof.center_offsets.empty())
      require_host_pointer(tof.center_offsets.data(), "tof.center_offsets");
    if (with_bins)
      require_host_pointer(bins, "host_bins");
  }

  /// Allocates the TOF staging a call needs, once (grows when a call needs
  /// more sinogram bins than before).
  void reserve_tof(std::size_t bins_per_lor, const tof_params<T> &tof, bool need_bins) {
    const device_guard guard(device_);
    for (auto &sl : slots_) {
      const std::size_t rows = max_chunk_ * bins_per_lor;
      if (rows > sl.d_rows.size()) {
        sl.d_rows = device_buffer<T>(rows, sl.stream);
        sl.h_rows = pinned_buffer<T>(rows);
      }
      if (need_bins && sl.d_bins.size() < max_chunk_) {
        sl.d_bins = device_buffer<std::int16_t>(max_chunk_, sl.stream);
        sl.h_bins = pinned_buffer<std::int16_t>(max_chunk_);
      }
      if (!tof.sigmas.empty() && sl.d_sigmas.size() < max_chunk_) {
        sl.d_sigmas = device_buffer<T>(max_chunk_, sl.stream);
        sl.h_sigmas = pinned_buffer<T>(max_chunk_);
      }
      if (!tof.center_offsets.empty() && sl.d_offsets.size() < max_chunk_) {
        sl.d_offsets = device_buffer<T>(max_chunk_, sl.stream);
        sl.h_offsets = pinned_buffer<T>(max_chunk_);
      }
    }
  }

  /// Copies one host array chunk into a slot's device staging (through
  /// its pinned staging unless the array is pinned) on the slot's stream.
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

  span<const std::int16_t> stage_bins(slot &sl, span<const std::int16_t> host_bins,
                                      std::size_t first, std::size_t n) {
    stage(sl, host_bins.data(), first, n, sl.h_bins.data(), sl.d_bins.data());
    return span<const std::int16_t>(sl.d_bins.data(), n);
  }
  struct slot {
    explicit slot(std::size_t n)
        : stream(), d_starts(3 * n, stream), d_ends(3 * n, stream), d_data(n, stream),
          h_starts(3 * n), h_ends(3 * n), h_data(n) {}
    lor_view<const T> lors(std::size_t n) const {
      return lor_view<const T>(d_starts.data(), d_ends.data(), n);
    }
    gpu::stream stream;
    device_buffer<T> d_starts, d_ends, d_data;
    pinned_buffer<T> h_starts, h_ends, h_data;
    event done;
    bool busy = false;
    T *pending_out = nullptr;       ///< where h_data must be copied once done
    const T *pending_src = nullptr; ///< staged results (nullptr: h_data)
    std::size_t pending_count = 0;
    // TOF staging, allocated by the first TOF call that needs it (see
    // `reserve_tof`): N-wide sinogram rows, list-mode bins, per-LOR sigma
    // and centre offset.
    device_buffer<T> d_rows, d_sigmas, d_offsets;
    pinned_buffer<T> h_rows, h_sigmas, h_offsets;
    device_buffer<std::int16_t> d_bins;
    pinned_buffer<std::int16_t> h_bins;
    // Detector-pair staging (pairs, and packed records split on the
    // device), allocated by the first call that needs it (`reserve_indexed`).
    device_buffer<std::int32_t> d_pairs;
    pinned_buffer<std::int32_t> h_pairs;
    device_buffer<scanner::listmode_event> d_events;
    pinned_buffer<scanner::listmode_event> h_events;
  };

  /// Checks shared by every call (image, stream, output / values array),
  /// then the host source's own checks.
  template <class Src>
  void check(const device_image_view<const T> &image, const Src &src, const void *data,
             std::size_t size, const char *name, stream_ref s, std::size_t per_lor = 1) {
    detail::require_explicit_stream(s, "stream");
    if (image.data == nullptr)
      resproj::detail::throw_invalid("image.data", "null pointer");
    if (image.device != device_)
      resproj::detail::throw_invalid("image",
                                     "on device " + std::to_string(image.device) +
                                         ", the streamer's staging is on device " +
                                         std::to_string(device_));
    require_device_pointer(image.data, image.device, "image.data");
    src.check(*this);
    const std::size_t count = src.count();
    if (size < count * per_lor)
      resproj::detail::throw_invalid(name, "too small: holds " + std::to_string(size) +
                                               " elements, needs " +
                                               std::to_string(count * per_lor));
    if (count > 0 && data == nullptr)
      resproj::detail::throw_invalid(name, "null pointer");
    if (count == 0)
      return;
    require_host_pointer(data, name);
    out_pinned_ = is_pinned(data);
  }

  static void require_host_pointer(const void *p, const char *name) {
    const pointer_info info = query_pointer(p);
    if (info.device_accessible && !is_pinned(p))
      resproj::detail::throw_invalid(
          name, "device memory given where host memory is required (use "
                "gpu::forward/back for device-resident LORs)");
  }

  /// Waits for a slot's previous chunk and delivers its staged results.
  void drain(slot &sl) {
    if (!sl.busy)
      return;
    sl.done.synchronize();
    if (sl.pending_out != nullptr)
      copier_->copy(sl.pending_out,
                    sl.pending_src != nullptr ? sl.pending_src : sl.h_data.data(),
                    sl.pending_count * sizeof(T));
    sl.pending_out = nullptr;
    sl.pending_src = nullptr;
    sl.busy = false;
  }

  /// Streams the source's chunks through the slots: per chunk, waits for
  /// the slot's previous chunk, stages the LORs and calls
  /// `enqueue(slot, device_lors, first, n)` to enqueue the rest.
  template <class Src, class Enqueue>
  void run(const Src &src, stream_ref s, Enqueue &&enqueue) {
    const std::size_t count = src.count();
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
        const auto lors = src.stage(*this, sl, first, n);
        enqueue(sl, lors, first, n);
        sl.done.record(sl.stream);
        sl.busy = true;
      }
      for (auto &sl : slots_)
        drain(sl);
    } catch (...) {
      // Leave the streamer usable: wait for whatever was enqueued.
      for (auto &sl : slots_) {
        cudaStreamSynchronize(sl.stream.get());
        sl.busy = false;
        sl.pending_out = nullptr;
      }
      throw;
    }
  }

  std::size_t max_chunk_;
  int device_;
  launch_options options_;
  std::vector<slot> slots_;
  event start_;
  std::unique_ptr<detail::parallel_copier> copier_;
  bool out_pinned_ = false;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
