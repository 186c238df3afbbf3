/// @file
/// @brief The prompts of a PETSIRD file straight into device memory as the
/// reconstruction layer's `device_events` (acquisition order, one subset),
/// ready for `gpu_listmode_data`; `petsird_listmode_data` reads them while
/// the sensitivity image is computed. Needs nvcc.
///
///   recon::gpu_listmode_data data = recon::petsird_listmode_data(
///       sub, dsub, "scan.petsird", corr, tof, s);
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/petsird_events.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/gpu_listmode_events.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"
#include "resproj/recon/petsird_data.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// Reads the prompts of the PETSIRD file `path` into device memory on `s`
/// (gpu::read_petsird_to_device: parallel decoding, pinned staging) and
/// checks its scanner against the reconstruction's
/// (`check_petsird_scanner`), which makes every event valid without a
/// pass over them. Host-blocking until the file is read; the arrays are
/// ready in stream order on `s`.
/// @throws io_error as `read_petsird_listmode_data`; invalid_argument ("s")
///         for the legacy default stream.
inline device_events read_petsird_events_to_device(const std::string &path,
                                                   std::int64_t num_detectors,
                                                   const tof_params<float> &tof,
                                                   gpu::stream_ref s) {
  gpu::device_petsird_events ev = gpu::read_petsird_to_device(path, s);
  check_petsird_scanner(ev.header, path, num_detectors, tof);
  if (ev.num_prompts == 0)
    throw io_error("resproj: " + path + ": no prompt events");
  device_events e;
  e.offset = {0, ev.num_prompts};
  e.pairs = std::move(ev.prompt_pairs);
  e.bins = std::move(ev.prompt_tof_bins);
  return e;
}

/// A whole list-mode reconstruction's data from the PETSIRD file `path`
/// (`gpu_listmode_data`): the prompts decoded into device memory
/// (`read_petsird_events_to_device`) while the sensitivity image is
/// computed on a second stream, grouped into subsets and reordered on the
/// GPU, with their per-event corrections. Keeps references to `sub` and
/// `dsub`. Returns with everything ready (`s` synchronised).
/// @throws io_error as `read_petsird_events_to_device`; as
///         `gpu_listmode_data`.
inline gpu_listmode_data
petsird_listmode_data(const sinogram_subsets &sub, const device_sinogram_subsets &dsub,
                      const std::string &path, const corrections &c,
                      const tof_params<float> &tof, gpu::stream_ref s,
                      phase_table *phases = nullptr) {
  return gpu_listmode_data(
      sub, dsub,
      [&](gpu::stream_ref st) {
        return read_petsird_events_to_device(path, std::int64_t(sub.num_detectors()), tof,
                                             st);
      },
      c, tof, s, phases, "read PETSIRD file -> device");
}

} // namespace recon
RESPROJ_NAMESPACE_END
