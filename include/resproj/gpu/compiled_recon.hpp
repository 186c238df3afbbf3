/// @file
/// @brief Host-only declarations of the GPU reconstruction for translation
/// units compiled by a plain C++ compiler: the sensitivity images (over a
/// sinogram's LORs and over every LOR of a scanner), list-mode
/// events read into device memory, and the list-mode OSEM of a file on
/// disk to an image resident on the GPU, set up as `recon::gpu_listmode_data`
/// does (events read straight into device memory, validated, grouped and
/// reordered per subset; per-event corrections; the sensitivity image on a
/// second stream) and run by `recon::osem` over `recon::gpu_listmode_backend`.
/// Link `resproj::gpu_compiled`. No CUDA type appears here except
/// `cudaStream_t`.
///
///     const recon::sinogram_subsets sub(scanner::dmi(), 65, 34, geometry);
///     gpu::compiled::listmode_osem r(sub, corr, scanner::dmi_tof(), "scan.lm", s);
///     r.run(2);
///     r.write_nifti("osem.nii");
///     r.phases().print(stdout);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <driver_types.h> // cudaStream_t only

#include "resproj/core/config.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/recon/all_lor_sensitivity.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/em.hpp"
#include "resproj/recon/phase_timing.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

/// TOF (or non-TOF, `tof.num_bins == 0`) list-mode OSEM of one list-mode
/// file, resident on the GPU that is current at construction. Owns a copy
/// of the subsets and their device tables, the file reader, the events with
/// their corrections, the sensitivity image and the reconstructed image
/// (started at 1 everywhere). Every call returns with its work finished:
/// nothing is left queued on the stream between calls. One call at a time
/// per object; the stream must outlive it. Move-only.
class listmode_osem {
public:
  /// Reads and prepares everything; records the set-up phases ("mu",
  /// "read", "group", "reorder", "corr", "sens_wait", "sens", "backend") in
  /// `phases()`.
  /// Synchronises `stream` (at every phase boundary).
  /// @param subsets     scanner, sinogram subsets by view and image geometry
  /// @param corrections efficiencies (one per detector), mu-map (the
  ///                    image's size), scale, background per sinogram bin
  /// @param tof         TOF parameters of the events' bins (`num_bins == 0`:
  ///                    non-TOF, bins ignored)
  /// @param path        list-mode file of 10-byte records
  /// @param stream      a stream of the current device, not the legacy
  ///                    default stream; used by every call of this object
  /// @throws invalid_argument ("stream") for the legacy default stream,
  ///         ("c.mu", "c.efficiency") for corrections that do not match
  ///         `subsets`, or as `tof_params`; io_error if the file cannot be
  ///         read, is empty or damaged, or holds events outside the scanner
  ///         or the TOF bins; gpu_out_of_memory, gpu_error.
  listmode_osem(const recon::sinogram_subsets &subsets,
                const recon::corrections &corrections, const tof_params<float> &tof,
                const std::string &path, cudaStream_t stream);
  ~listmode_osem();
  listmode_osem(listmode_osem &&) noexcept;
  listmode_osem &operator=(listmode_osem &&) noexcept;

  /// Runs `iterations` more OSEM iterations from the current image and adds
  /// their time to the phase "osem". Synchronises at the end, and after
  /// every subset when `progress` is set (the callback then sees finished
  /// work; an exception it throws stops the run and propagates).
  /// @param iterations passes over all subsets (>= 0)
  /// @param progress   called after every subset, or empty (nullptr)
  /// @throws invalid_argument ("iterations") if negative; gpu_error.
  void run(int iterations, const recon::osem_callback &progress = nullptr);

  /// Copies the image into `host` (C order). Synchronises.
  /// @throws invalid_argument ("host") unless it has one value per voxel.
  void image(span<float> host) const;

  /// The resident image (device memory owned by this object, valid while it
  /// lives). No work is pending on it between calls; write to it only
  /// between calls (e.g. a new start image before `run`).
  device_image_view<float> image_view();
  device_image_view<const float> image_view() const;

  /// Writes the image as the NIfTI-1 file `path` straight from device
  /// memory and adds the phase "nifti". Host-blocking.
  /// @throws invalid_argument as `io::write_nifti`; io_error.
  void write_nifti(const std::string &path);

  /// Number of events read from the file.
  std::size_t num_events() const;

  /// The phases so far: set-up, then "osem" (all `run` calls) and "nifti".
  const recon::phase_table &phases() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The sensitivity image `A^T m` over every LOR of the sinogram of
/// `subsets` (m: normalisation and attenuation from `corrections`, as
/// `recon::gpu_sensitivity`) into `out`, on the device that is current.
/// Host-blocking: returns when the image is complete.
/// @param subsets     scanner, sinogram subsets and image geometry
/// @param corrections efficiencies, mu-map, scale (the background is not used)
/// @param out         device memory of the current device, geometry
///                    `subsets.image`; overwritten
/// @param stream      a stream of the current device, not the legacy default
/// @throws invalid_argument ("stream"), ("out") for another geometry,
///         ("out.data") if null or host memory, ("c.mu", "c.efficiency")
///         for corrections that do not match `subsets`; gpu_out_of_memory,
///         gpu_error.
void sensitivity_image(const recon::sinogram_subsets &subsets,
                       const recon::corrections &corrections,
                       device_image_view<float> out, cudaStream_t stream);

/// The sensitivity image over every LOR of `scanner` on the GPU that owns
/// `out`: `recon::gpu_all_lor_sensitivity` (recon/gpu_all_lor_sensitivity.cuh),
/// compiled. Host-blocking: returns with `out` written (`stream`
/// synchronised).
/// @param scanner  every ring inside the image box along its axis
/// @param geometry the image geometry
/// @param mu       attenuation per voxel on the host (1/length unit),
///                 `geometry.num_voxels()` values, or empty for none
/// @param out      device memory of `out.device`, geometry `geometry`; overwritten
/// @param stream   a stream of `out.device`, not the legacy default
/// @param stats    if not null, receives what was walked
/// @throws invalid_argument ("stream"), as `recon::all_lor_sensitivity` for
///         `geometry` and `mu`, ("out") for another geometry, ("out.data")
///         for null, host memory or memory of another device, before
///         anything is written; gpu_out_of_memory, gpu_error.
void all_lor_sensitivity(const scanner::polygon_scanner &scanner,
                         const image_geometry &geometry, span<const float> mu,
                         device_image_view<float> out, cudaStream_t stream,
                         recon::all_lor_sensitivity_stats *stats = nullptr);

/// The events of a list-mode file (10-byte records) in memory of the device
/// that is current at construction: read straight into device memory,
/// validated against `num_detectors` and `num_tof_bins` on the GPU, in file
/// order. Move-only; the arrays live as long as the object.
class device_listmode_events {
public:
  /// Reads and validates the file; host-blocking (returns with the arrays
  /// complete).
  /// @param path          list-mode file
  /// @param num_detectors detectors of the scanner (indices must be below)
  /// @param num_tof_bins  TOF bins (bins must be in [0, num_tof_bins); 0:
  ///                      non-TOF, bins not checked)
  /// @param stream        a stream of the current device, not the legacy default
  /// @throws invalid_argument ("stream"); io_error if the file cannot be
  ///         read, is empty or damaged, or holds events outside the scanner
  ///         or the TOF bins; gpu_out_of_memory, gpu_error.
  device_listmode_events(const std::string &path, std::int64_t num_detectors,
                         int num_tof_bins, cudaStream_t stream);
  ~device_listmode_events();
  device_listmode_events(device_listmode_events &&) noexcept;
  device_listmode_events &operator=(device_listmode_events &&) noexcept;

  /// Number of events.
  std::size_t count() const;
  /// Detector pairs, `[a0 b0 a1 b1 ...]` (device memory, 2 x count()).
  const std::int32_t *pairs() const;
  /// TOF bin per event (device memory, count()).
  const std::int16_t *bins() const;
  /// The device that holds the arrays.
  int device() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
