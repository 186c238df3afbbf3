/// @file
/// @brief `gpu_listmode_data`: everything a TOF list-mode OSEM keeps resident
/// on the GPU, set up in one call: the events (from host arrays, a list-mode
/// file read straight into device memory, or device arrays such as a
/// PETSIRD file's), validated, grouped by
/// subset and reordered once per subset; their multiplicative and additive
/// corrections; and the sensitivity image with attenuation and
/// normalisation, computed on a second stream while the events are
/// prepared (over the sinogram's LORs, or over every LOR of the scanner
/// with `sensitivity_lors::all`). Optionally times each phase into a
/// `phase_table`. Needs nvcc.
///
///   recon::gpu_listmode_data data(sub, dsub, io, "scan.lm", corr, tof, s, &phases);
///   auto b = data.backend(recon::start_image(sub.image, 1.f));
///   recon::osem(b, iterations, progress);
#pragma once

#include <algorithm>
#include <cstddef>
#include <future>
#include <string>
#include <type_traits>
#include <vector>

#include <thrust/functional.h>
#include <thrust/transform.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/cpu_osem.hpp"
#include "resproj/recon/gpu_all_lor_sensitivity.cuh"
#include "resproj/recon/gpu_corrections.cuh"
#include "resproj/recon/gpu_listmode_events.cuh"
#include "resproj/recon/gpu_osem.cuh"
#include "resproj/recon/phase_timing.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// The LORs the sensitivity image of `gpu_listmode_data` sums over.
enum class sensitivity_lors {
  /// The LORs of the sinogram of `sinogram_subsets` (its radial trim and
  /// ring differences), with the detector efficiencies (`gpu_sensitivity`).
  sinogram,
  /// Every pair of distinct transaxial crystals of the scanner at every
  /// ring difference (`gpu_all_lor_sensitivity`), for list-mode data whose
  /// events may lie on any LOR; efficiencies must be uniform (their square
  /// is a common factor).
  all
};

/// A TOF (or non-TOF, `tof.num_bins == 0`) list-mode reconstruction's
/// resident data. Set-up allocates and ends with a synchronisation of `s`;
/// `backend(x0)` then runs OSEM resident. With a `phase_table`, each set-up
/// phase is timed on the host (`s` is synchronised at every phase boundary;
/// the sensitivity is timed with events on its own stream, as overlapped).
/// Keeps references to `sub` and `dsub`.
///
/// The last argument of every constructor, `lors`, chooses the LORs the
/// sensitivity sums over (`sensitivity_lors`); with `sensitivity_lors::all`
/// they also throw invalid_argument ("c.efficiency") unless the
/// efficiencies are uniform, and as `gpu_all_lor_sensitivity` for a
/// scanner or mu-map it cannot take, before any event is read.
struct gpu_listmode_data {
  const sinogram_subsets &sub;
  const device_sinogram_subsets &dsub;
  gpu::stream_ref s;
  tof_params<float> tof;
  device_corrections corr;
  device_events events;
  gpu::device_buffer<float> m, a; ///< per-event corrections
  gpu::device_image<float> sensitivity;

  /// From host events grouped by subset (`lm.offset`), optionally reordered.
  /// @throws invalid_argument ("lm") if the events are not grouped; as
  ///         `device_corrections` for `c`.
  gpu_listmode_data(const sinogram_subsets &sub_, const device_sinogram_subsets &dsub_,
                    const listmode_data &lm, const corrections &c,
                    const tof_params<float> &tof_, gpu::stream_ref stream,
                    bool reorder = true, phase_table *phases = nullptr,
                    sensitivity_lors lors = sensitivity_lors::sinogram)
      : sub(sub_), dsub(dsub_), s(stream), tof(tof_), corr(c, sub, s),
        sensitivity(sub.image, s) {
    prepare(c, lors, reorder, phases, [&](stopwatch &w) {
      events = upload_events(lm, s);
      mark(phases, w, "upload", "upload events (host -> device)", double(lm.count()),
           "events");
    });
  }

  /// From the list-mode file `path`, read into device memory through `io`,
  /// validated against the scanner and `tof`, split and grouped into
  /// `sub.num_subsets()` subsets and reordered on the GPU. Nothing passes
  /// through host arrays.
  /// @throws io_error if the file cannot be read, is damaged or holds events
  ///         outside the scanner or the TOF bins; as `device_corrections`.
  gpu_listmode_data(const sinogram_subsets &sub_, const device_sinogram_subsets &dsub_,
                    gpu::device_file_io &io, const std::string &path,
                    const corrections &c, const tof_params<float> &tof_,
                    gpu::stream_ref stream, phase_table *phases = nullptr,
                    sensitivity_lors lors = sensitivity_lors::sinogram)
      : sub(sub_), dsub(dsub_), s(stream), tof(tof_), corr(c, sub, s),
        sensitivity(sub.image, s) {
    prepare(c, lors, true, phases, [&](stopwatch &w) {
      const auto acquisition = read_events_to_device(
          io, path, std::int64_t(sub.num_detectors()), tof.num_bins, s);
      mark(phases, w, "read", "read file -> device, validate",
           double(acquisition.count()), "events");
      events = group_by_subset(acquisition, sub.num_subsets(), s);
      mark(phases, w, "group", "group by subset", double(events.count()), "events");
    });
  }

  /// From events already in device memory in acquisition order (one subset,
  /// e.g. from `read_petsird_events_to_device`), valid for the scanner and
  /// `tof`: grouped into `sub.num_subsets()` subsets and reordered on the
  /// GPU.
  /// @throws invalid_argument ("acquisition") unless it is one subset; as
  ///         `device_corrections`.
  gpu_listmode_data(const sinogram_subsets &sub_, const device_sinogram_subsets &dsub_,
                    device_events acquisition, const corrections &c,
                    const tof_params<float> &tof_, gpu::stream_ref stream,
                    phase_table *phases = nullptr,
                    sensitivity_lors lors = sensitivity_lors::sinogram)
      : sub(sub_), dsub(dsub_), s(stream), tof(tof_), corr(c, sub, s),
        sensitivity(sub.image, s) {
    prepare(c, lors, true, phases, [&](stopwatch &w) {
      events = group_by_subset(acquisition, sub.num_subsets(), s);
      mark(phases, w, "group", "group by subset", double(events.count()), "events");
    });
  }

  /// From the events `read(s)` returns in device memory in acquisition
  /// order (one subset, valid for the scanner and `tof`; e.g. a PETSIRD
  /// file through `read_petsird_events_to_device`): `read` runs while the
  /// sensitivity is computed on a second stream (timed as the phase "read",
  /// named `read_name`), then the events are grouped into
  /// `sub.num_subsets()` subsets and reordered on the GPU.
  /// @throws whatever `read` throws; invalid_argument ("acquisition")
  ///         unless it returns one subset; as `device_corrections`.
  template <class Read, class = std::enable_if_t<std::is_invocable_r_v<
                            device_events, Read &, gpu::stream_ref>>>
  gpu_listmode_data(const sinogram_subsets &sub_, const device_sinogram_subsets &dsub_,
                    Read &&read, const corrections &c, const tof_params<float> &tof_,
                    gpu::stream_ref stream, phase_table *phases = nullptr,
                    const char *read_name = "read events -> device",
                    sensitivity_lors lors = sensitivity_lors::sinogram)
      : sub(sub_), dsub(dsub_), s(stream), tof(tof_), corr(c, sub, s),
        sensitivity(sub.image, s) {
    prepare(c, lors, true, phases, [&](stopwatch &w) {
      const device_events acquisition = read(s);
      mark(phases, w, "read", read_name, double(acquisition.count()), "events");
      events = group_by_subset(acquisition, sub.num_subsets(), s);
      mark(phases, w, "group", "group by subset", double(events.count()), "events");
    });
  }

  /// A backend over this data starting from `x0` (host). Keeps references
  /// to this object.
  gpu_listmode_backend backend(const std::vector<float> &x0) const {
    return gpu_listmode_backend(events, detectors(), m.cspan(), a.cspan(), tof,
                                sensitivity, x0, s);
  }
  /// Number of events.
  std::size_t count() const { return events.count(); }
  /// The detector table (device).
  span<const float> detectors() const { return dsub.detectors.cspan(); }

private:
  void mark(phase_table *phases, stopwatch &w, const char *key, const char *name,
            double items = 0, const char *item_name = "") {
    mark_phase(
        phases, w, [this] { s.synchronize(); }, key, name, items, item_name);
  }

  /// The common set-up: sensitivity on a second stream (with
  /// `sensitivity_lors::all`, from a host thread, since its plan is made
  /// on the host), `load_events` (fills `events`), reorder, per-event
  /// corrections, join.
  template <class Load>
  void prepare(const corrections &c, sensitivity_lors lors, bool reorder,
               phase_table *phases, Load &&load_events) {
    float factor = 1;
    if (lors == sensitivity_lors::all) {
      factor = all_lor_factor(c);
      detail::check_all_lor_inputs(sub.scanner, sub.image,
                                   span<const float>(c.mu.data(), c.mu.size()));
    }
    stopwatch w;
    gpu::stream side;
    gpu::event ready, t0(true), t1(true);
    ready.record(s); // the mu-map and efficiencies are uploaded on s
    ready.make_wait(side);
    t0.record(side);
    std::future<void> all_lors;
    // Over the sinogram's LORs, the sensitivity keeps each bin's mu line
    // integral; the events then read theirs instead of projecting again.
    gpu::device_buffer<float> line_integrals;
    if (lors != sensitivity_lors::all)
      line_integrals =
          gpu::device_buffer<float>(std::size_t(sub.layout.num_bins()), side);
    if (lors == sensitivity_lors::all) {
      all_lors = std::async(std::launch::async, [this, &c, &side, &t1, factor] {
        const gpu::device_guard guard(sensitivity.device());
        gpu_all_lor_sensitivity(sub.scanner, sub.image,
                                span<const float>(c.mu.data(), c.mu.size()),
                                sensitivity.view(), side);
        if (factor != 1.f) {
          float *v = sensitivity.view().data;
          thrust::transform(detail::on(side), v, v + sub.image.num_voxels(), v,
                            thrust::placeholders::_1 * factor);
        }
        t1.record(side);
      });
    } else {
      {
        gpu::device_buffer<float> work(sub.max_subset_count(), side);
        gpu_sensitivity(sub, dsub, corr, work.span(), sensitivity.view(), side, -1,
                        line_integrals.span());
      } // work freed in the side stream's order
      t1.record(side);
    }
    mark(phases, w, "mu", "mu-map upload, sensitivity queued");
    try {
      load_events(w);
      if (reorder) {
        gpu_order_subsets(sub.image, tof, detectors(), events, s);
        mark(phases, w, "reorder",
             tof.num_bins > 0 ? "reorder per subset (TOF key)" : "reorder per subset",
             double(count()), "events");
      }
      m = gpu::device_buffer<float>(count(), s);
      a = gpu::device_buffer<float>(count(), s);
      if (lors == sensitivity_lors::all) {
        gpu_event_corrections(detectors(), events.all_pairs(), corr, tof.num_bins,
                              m.span(), a.span(), s);
        mark(phases, w, "corr", "per-event corrections (attenuation, eff.)",
             double(count()), "events");
      } else {
        const scanner::sinogram_lookup lookup(sub.layout);
        const auto crystal_bins = detail::upload(lookup.crystal_table(), s);
        const auto ring_planes = detail::upload(lookup.ring_table(), s);
        t1.make_wait(s); // the line integrals
        mark(phases, w, "sens_wait", "wait for the sensitivity");
        gpu_event_corrections_from_sinogram(
            detectors(), events.all_pairs(),
            lookup.view(crystal_bins.data(), ring_planes.data()), line_integrals.cspan(),
            corr, tof.num_bins, m.span(), a.span(), s);
        mark(phases, w, "corr", "per-event corrections (from the sinogram's attenuation)",
             double(count()), "events");
      }
    } catch (...) {
      if (all_lors.valid())
        all_lors.wait();
      side.synchronize(); // the sensitivity kernels still use members
      throw;
    }
    if (all_lors.valid())
      all_lors.get(); // rethrows the thread's exception
    t1.make_wait(s);
    s.synchronize();
    if (phases) {
      const bool all = lors == sensitivity_lors::all;
      if (all)
        phases->add("sens_wait", "wait for the sensitivity", w.lap());
      phases->add("sens",
                  all ? "sensitivity, all LORs (host plan + 2nd stream)"
                      : "sensitivity with attenuation (2nd stream)",
                  1e-3 * double(gpu::event::elapsed_ms(t0, t1)),
                  all ? 0.0 : double(sub.total_count()), all ? "" : "LORs", true);
    }
  }

  /// The common factor of every LOR's correction for `sensitivity_lors::all`:
  /// `scale * e^2` for uniform efficiencies e.
  /// @throws invalid_argument ("c.efficiency") unless uniform.
  static float all_lor_factor(const corrections &c) {
    const float e = c.efficiency.empty() ? 1.f : c.efficiency.front();
    if (std::any_of(c.efficiency.begin(), c.efficiency.end(),
                    [e](float v) { return v != e; }))
      resproj::detail::throw_invalid("c.efficiency",
                                     "must be uniform for the sensitivity over all LORs");
    return c.scale * e * e;
  }
};

} // namespace recon
RESPROJ_NAMESPACE_END
