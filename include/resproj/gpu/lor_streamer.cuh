/// @file
/// @brief `lor_streamer<T>`: projection of LORs that live in host memory
/// (STIR-style callers), streamed through preallocated pinned and device
/// staging with the copy of one chunk overlapping the compute of another
/// (the staging pipeline is gpu/detail/streamer_pipeline.cuh).
/// Same call shape as the resident projectors:
///
///     streamer.forward(operation, image, host_lors, host_out, stream);
///     streamer.back(operation, image, host_lors, host_values, stream);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/streamer_pipeline.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// The host LOR sources a streamer takes for value type T: end points
/// (`lor_view`), detector pairs and packed list-mode records.
template <class L, class T> struct is_streamed_lors : std::false_type {};
template <class T> struct is_streamed_lors<lor_view<const T>, T> : std::true_type {};
template <class T> struct is_streamed_lors<lor_view<T>, T> : std::true_type {};
template <class T> struct is_streamed_lors<detector_pairs<T>, T> : std::true_type {};
template <class T>
struct is_streamed_lors<scanner::listmode_records<T>, T> : std::true_type {};

/// Enables a streamer's `forward` / `back` for an operation fitting T and
/// a host LOR source of value type T.
template <class Op, class HostLors, class T>
using if_streamed = std::enable_if_t<resproj::detail::is_operation<Op>::value &&
                                     resproj::detail::operation_fits<Op, T>::value &&
                                     is_streamed_lors<HostLors, T>::value>;

/// The list-mode bins of a streamed call come from packed records: an
/// `op::tof_listmode` with empty `bins` over `scanner::listmode_records`.
template <class Op, class Lors> bool bins_from_records(const Op &o, const Lors &) {
  if constexpr (std::is_same_v<Op, op::tof_listmode<typename Lors::value_type>> &&
                std::is_same_v<Lors,
                               scanner::listmode_records<typename Lors::value_type>>)
    return o.bins.empty();
  else
    return false;
}

/// The shared contract check (`resproj::detail::check_projection`) of a
/// streamed call; list-mode bins may be left in packed records.
template <class Op, class Lors>
void check_streamed_projection(const Op &o, const image_geometry &geometry,
                               const Lors &lors, std::size_t data_size, const void *data,
                               const char *data_name) {
  if constexpr (std::is_same_v<Op, op::tof_listmode<typename Lors::value_type>>) {
    if (bins_from_records(o, lors)) {
      resproj::detail::check_geometry_in<typename Lors::value_type>(geometry,
                                                                    "image.geometry");
      lors.check("lors");
      resproj::detail::check_operation(o, lors.count, true);
      resproj::detail::check_values(data_size, data, lors.count, data_name);
      return;
    }
  }
  resproj::detail::check_projection(o, geometry, lors, data_size, data, data_name);
}

} // namespace detail

/// Streams host-resident LORs through the GPU in chunks of at most
/// `max_chunk` LORs. The LORs are explicit end points (`lor_view`, 24 bytes
/// per LOR for float), detector pairs against a resident detector table
/// (`detector_pairs`, 8 bytes per LOR) or packed list-mode records
/// (`scanner::listmode_records`, 10 bytes per event, split on the device).
/// Owns, per pipeline slot, pinned host staging, device staging and a
/// non-blocking stream. The end-point staging is allocated at
/// construction; the first call that needs other staging (detector pairs,
/// records, TOF values, per-LOR TOF arrays, bins) allocates it once; later
/// calls allocate nothing.
///
/// Pipeline (per chunk k, slot k mod slots): host copy into pinned staging
/// (skipped when the caller's array is already pinned), host-to-device
/// copy, kernel, device-to-host copy of the results, all on the slot's
/// stream, so the transfers of chunk k+1 overlap the kernel of chunk k.
/// Every chunk runs the kernel `gpu::forward` / `gpu::back` choose for it:
/// a chunk of whole sinogram planes of a source with a sinogram `layout`
/// runs with lanes along planes.
///
/// Every call is HOST-BLOCKING: it returns when the results are in the
/// caller's host arrays and the host arrays may be reused. Not
/// graph-capturable. Thread safety: one call at a time per streamer (use
/// one streamer per host thread). The streamer's memory lives on the
/// device that was current at construction; images must be on that device.
template <class T> class lor_streamer {
public:
  /// @param max_chunk    LORs per chunk (staging capacity), > 0
  /// @param slots        pipeline depth (>= 2)
  /// @param copy_threads host threads that copy pageable arrays into the
  ///                     pinned staging (-1: min(4, hardware threads / 2))
  /// @throws invalid_argument for max_chunk == 0 or slots < 2;
  ///         gpu_out_of_memory if staging cannot be allocated.
  /// Synchronises the new streams once (allocation is complete on return).
  explicit lor_streamer(std::size_t max_chunk, int slots = 3, int copy_threads = -1)
      : pipeline_(max_chunk, slots, copy_threads) {
    tuning_.check_pointers = false; // staging is ours; the rest is checked per call
  }

  std::size_t max_chunk() const noexcept { return pipeline_.max_chunk(); }
  int device() const noexcept { return pipeline_.device(); }

  /// Forward projection of host LORs: the operation's values of every LOR
  /// (`op::tof_sinogram`: `[lor][bin]`) into `host_out`.
  /// @param operation  `op::non_tof{}`, `op::tof_sinogram{tof}` or
  ///                   `op::tof_listmode{tof, bins}`; per-LOR TOF arrays and
  ///                   bins in host memory, indexed like `host_lors`. Over
  ///                   `scanner::listmode_records`, `op::tof_listmode{tof}`
  ///                   (empty bins) takes the records' TOF bins.
  /// @param image      resident image on the streamer's device
  /// @param host_lors  `lor_view` (host end points), `detector_pairs`
  ///                   (detector table on the streamer's device, pairs in
  ///                   host memory) or `scanner::listmode_records` (table on
  ///                   the device, records in host memory); pageable or
  ///                   pinned, any count. Indices are not checked per LOR
  ///                   (validate them once, scanner::validate_events).
  /// @param host_out   host output, `count * values_per_lor` values
  /// @param s          stream whose earlier work (e.g. the image upload)
  ///                   the projection must follow
  /// @throws invalid_argument naming the argument ("host_out",
  ///         "host_lors.pairs", "host_lors.detectors", "tof.sigma", "bins",
  ///         "image", ...) for null pointers, device memory given as host
  ///         arrays (or a host detector table), too-small arrays, bad TOF
  ///         parameters or an image on another device, before any work is
  ///         enqueued; gpu_error on CUDA failures.
  /// Host-blocking: returns when `host_out` holds the results.
  template <class Op, class HostLors, class = detail::if_streamed<Op, HostLors, T>>
  void forward(const Op &operation, device_image_view<const T> image,
               const HostLors &host_lors, span<T> host_out, stream_ref s) {
    forward_impl(operation, image, source_of(operation, host_lors), host_out, s);
  }

  /// Back projection of host LORs with host values (`count *
  /// values_per_lor`); accumulates into the image (zero it first for a
  /// plain back projection).
  /// @param operation, host_lors, s  as `forward`
  /// @param image        resident image on the streamer's device, updated
  /// @param host_values  host values, `count * values_per_lor`
  /// @throws as `forward` ("host_values" instead of "host_out").
  /// Host-blocking: returns when the back projection is complete on the GPU.
  template <class Op, class HostLors, class = detail::if_streamed<Op, HostLors, T>>
  void back(const Op &operation, device_image_view<T> image, const HostLors &host_lors,
            span<const T> host_values, stream_ref s) {
    back_impl(operation, image, source_of(operation, host_lors), host_values, s);
  }

private:
  using slot = detail::streamer_slot<T>;
  using pipeline = detail::streamer_pipeline<T>;

  // Host LOR sources. Each names its host arrays (`lors`, for the shared
  // check), checks where they live (`check_residency`), says which staging
  // it needs and stages chunk [first, first + n) to a slot's device staging
  // on the slot's stream (`stage`, returning the chunk's device LOR source,
  // with the host source's layout).

  /// Explicit end points in host memory (24 bytes per LOR for float).
  struct end_point_source {
    static constexpr bool pairs = false, events = false;
    lor_view<const T> lors;
    void check_residency(int) const {
      require_host_pointer(lors.starts, "host_lors.starts");
      require_host_pointer(lors.ends, "host_lors.ends");
    }
    lor_view<const T> stage(pipeline &p, slot &sl, std::size_t first,
                            std::size_t n) const {
      p.stage(sl, lors.starts, 3 * first, 3 * n, sl.h_starts.data(), sl.d_starts.data());
      p.stage(sl, lors.ends, 3 * first, 3 * n, sl.h_ends.data(), sl.d_ends.data());
      return lor_view<const T>(sl.d_starts.data(), sl.d_ends.data(), n, lors.layout);
    }
  };

  /// Detector pairs in host memory, detector table on the device (8 bytes
  /// per LOR).
  struct pair_source {
    static constexpr bool pairs = true, events = false;
    detector_pairs<T> lors;
    void check_residency(int device) const {
      require_device_pointer(lors.detectors, device, "host_lors.detectors");
      require_host_pointer(lors.pairs, "host_lors.pairs");
    }
    detector_pairs<T> stage(pipeline &p, slot &sl, std::size_t first,
                            std::size_t n) const {
      p.stage(sl, lors.pairs, 2 * first, 2 * n, sl.h_pairs.data(), sl.d_pairs.data());
      return detector_pairs<T>(lors.detectors, lors.num_detectors, sl.d_pairs.data(), n,
                               lors.layout);
    }
  };

  /// Packed records in host memory (10 bytes per event), split on the
  /// device into pairs (and into the slot's bins when `with_bins`).
  struct event_source {
    static constexpr bool pairs = true, events = true;
    scanner::listmode_records<T> lors;
    bool with_bins;
    void check_residency(int device) const {
      require_device_pointer(lors.detectors, device, "host_lors.detectors");
      require_host_pointer(lors.events, "host_lors.events");
    }
    detector_pairs<T> stage(pipeline &p, slot &sl, std::size_t first,
                            std::size_t n) const {
      p.stage(sl, lors.events, first, n, sl.h_events.data(), sl.d_events.data());
      detail::launch(detail::split_events_kernel<listmode_event>, (n + 255) / 256, 256,
                     sl.stream, "split_events_kernel", sl.d_events.data(), n,
                     sl.d_pairs.data(),
                     with_bins ? sl.d_bins.data() : static_cast<std::int16_t *>(nullptr));
      return detector_pairs<T>(lors.detectors, lors.num_detectors, sl.d_pairs.data(), n,
                               lors.layout);
    }
  };

  template <class Op, class U>
  static end_point_source source_of(const Op &, const lor_view<U> &l) {
    return end_point_source{l.normalized()};
  }
  template <class Op>
  static pair_source source_of(const Op &, const detector_pairs<T> &l) {
    return pair_source{l};
  }
  template <class Op>
  static event_source source_of(const Op &o, const scanner::listmode_records<T> &l) {
    return event_source{l, detail::bins_from_records(o, l)};
  }

  template <class Op, class Src>
  void forward_impl(const Op &o, const device_image_view<const T> &image, const Src &src,
                    span<T> host_out, stream_ref s) {
    check(o, image, src, host_out.data(), host_out.size(), "host_out", s);
    const std::size_t per_lor = o.values_per_lor();
    if (src.lors.count == 0)
      return;
    pipeline_.reserve(per_lor, staging_of(o, src));
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const Op chunk = pipeline_.stage_operation(sl, o, first, n);
      const std::size_t m = n * per_lor;
      const bool direct = out_pinned_;
      T *dst = direct ? host_out.data() + first * per_lor : sl.h_data.data();
      gpu::forward(chunk, image, lors, sl.d_data.span().subspan(0, m), sl.stream,
                   tuning_);
      RESPROJ_CUDA_TRY(cudaMemcpyAsync(dst, sl.d_data.data(), m * sizeof(T),
                                       cudaMemcpyDeviceToHost, sl.stream.get()));
      sl.pending_out = direct ? nullptr : host_out.data() + first * per_lor;
      sl.pending_count = m;
    });
  }

  template <class Op, class Src>
  void back_impl(const Op &o, const device_image_view<T> &image, const Src &src,
                 span<const T> host_values, stream_ref s) {
    check(o, image, src, host_values.data(), host_values.size(), "host_values", s);
    const std::size_t per_lor = o.values_per_lor();
    if (src.lors.count == 0)
      return;
    pipeline_.reserve(per_lor, staging_of(o, src));
    run(src, s, [&](slot &sl, const auto &lors, std::size_t first, std::size_t n) {
      const Op chunk = pipeline_.stage_operation(sl, o, first, n);
      const std::size_t m = n * per_lor;
      pipeline_.stage(sl, host_values.data(), first * per_lor, m, sl.h_data.data(),
                      sl.d_data.data());
      gpu::back(chunk, image, lors, sl.d_data.cspan().subspan(0, m), sl.stream, tuning_);
      sl.pending_out = nullptr;
      sl.pending_count = 0;
    });
  }

  /// Checks a call before anything is enqueued: stream and image, the
  /// shared contract (host LORs, operation, size of the output / values),
  /// then where every array lives.
  template <class Op, class Src>
  void check(const Op &o, const device_image_view<const T> &image, const Src &src,
             const void *data, std::size_t size, const char *name, stream_ref s) {
    detail::require_explicit_stream(s, "stream");
    if (image.data == nullptr)
      resproj::detail::throw_invalid("image.data", "null pointer");
    const int device = pipeline_.device();
    if (image.device != device)
      resproj::detail::throw_invalid(
          "image", "on device " + std::to_string(image.device) +
                       ", the streamer's staging is on device " + std::to_string(device));
    require_device_pointer(image.data, image.device, "image.data");
    src.lors.check("host_lors"); // null host LOR arrays, named as the argument
    detail::check_streamed_projection(o, image.geometry, src.lors, size, data, name);
    if (src.lors.count == 0)
      return;
    src.check_residency(device);
    resproj::detail::for_each_operation_region(
        o, [](const void *p, const char *region) { require_host_pointer(p, region); });
    require_host_pointer(data, name);
    out_pinned_ = is_pinned(data);
  }

  /// The staging a call needs: the source's pairs / records, the
  /// operation's per-LOR TOF arrays and bins (staged from the operation or
  /// split from the records).
  template <class Src>
  static detail::streamer_staging staging_of(const op::non_tof &, const Src &) {
    return {Src::pairs, Src::events, false, false, false};
  }
  template <class Src>
  static detail::streamer_staging staging_of(const op::tof_sinogram<T> &o, const Src &) {
    return {Src::pairs, Src::events, !o.tof.sigmas.empty(), !o.tof.center_offsets.empty(),
            false};
  }
  template <class Src>
  static detail::streamer_staging staging_of(const op::tof_listmode<T> &o, const Src &) {
    return {Src::pairs, Src::events, !o.tof.sigmas.empty(), !o.tof.center_offsets.empty(),
            true};
  }

  static void require_host_pointer(const void *p, const char *name) {
    const pointer_info info = query_pointer(p);
    if (info.device_accessible && !is_pinned(p))
      resproj::detail::throw_invalid(
          name, "device memory given where host memory is required (use "
                "gpu::forward/back for device-resident LORs)");
  }

  /// Streams the source's chunks through the pipeline: per chunk, stages
  /// the LORs and calls `enqueue(slot, device_lors, first, n)` to enqueue
  /// the rest.
  template <class Src, class Enqueue>
  void run(const Src &src, stream_ref s, Enqueue &&enqueue) {
    pipeline_.run(src.lors.count, s, [&](slot &sl, std::size_t first, std::size_t n) {
      const auto lors = src.stage(pipeline_, sl, first, n);
      enqueue(sl, lors, first, n);
    });
  }

  pipeline pipeline_;
  tuning tuning_;
  bool out_pinned_ = false;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
