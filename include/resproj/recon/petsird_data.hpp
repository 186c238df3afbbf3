/// @file
/// @brief PETSIRD list-mode data for the reconstruction layer: the file's
/// scanner checked against the reconstruction's (detector count, TOF bins),
/// and its prompts as `listmode_data` (host). The device path is in
/// recon/gpu_petsird_events.cuh. Plain C++.
///
///   auto lm = recon::read_petsird_listmode_data("scan.petsird",
///                                               sub.num_detectors(), tof);
///   recon::listmode_corrections(sub, corr, tof, lm);
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/recon/listmode_data.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// Checks that the scanner of a PETSIRD file (`h`, read from `path`) is the
/// reconstruction's: `num_detectors` detecting elements (the file's detector
/// indices, io::petsird::detector_map, are the reconstruction's) and the TOF
/// bins of `tof` (count, width, centre offset to 1e-4 of a bin; the
/// resolution is the reconstruction's choice and not compared). With both,
/// every event the PETSIRD reader accepts (it checks each one against its
/// own header) lies inside the scanner and the TOF bins.
/// @throws io_error naming the file and the mismatch.
inline void check_petsird_scanner(const io::petsird::header &h, const std::string &path,
                                  std::int64_t num_detectors,
                                  const tof_params<float> &tof) {
  const io::petsird::detector_map map(h.scanner);
  if (std::int64_t(map.num_detectors()) != num_detectors)
    throw io_error("resproj: " + path + ": the PETSIRD scanner has " +
                   std::to_string(map.num_detectors()) +
                   " detecting elements, the reconstruction's scanner " +
                   std::to_string(num_detectors));
  const tof_params<float> t = io::petsird::common_tof_parameters<float>(h.scanner);
  const int bins = tof.num_bins > 0 ? tof.num_bins : 1;
  const bool same =
      t.num_bins == bins &&
      (bins == 1 || (std::fabs(double(t.bin_width) - double(tof.bin_width)) <=
                         1e-4 * double(tof.bin_width) &&
                     std::fabs(double(t.center_offset) - double(tof.center_offset)) <=
                         1e-4 * double(tof.bin_width)));
  if (!same)
    throw io_error("resproj: " + path + ": the PETSIRD TOF bins (" +
                   std::to_string(t.num_bins) + " of " + std::to_string(t.bin_width) +
                   ") are not the reconstruction's (" + std::to_string(bins) + " of " +
                   std::to_string(tof.bin_width) + ")");
}

/// The prompts of the PETSIRD file `path` as host list-mode data in
/// acquisition order (delayeds, and time blocks of other kinds, are not
/// used), after `check_petsird_scanner`.
/// @throws io_error if the file cannot be read, is damaged, holds no prompt
///         or its scanner is not the reconstruction's.
inline listmode_data read_petsird_listmode_data(const std::string &path,
                                                std::int64_t num_detectors,
                                                const tof_params<float> &tof) {
  io::petsird::file_contents f = io::petsird::read_file(path);
  check_petsird_scanner(f.header, path, num_detectors, tof);
  if (f.events.prompts.size() == 0)
    throw io_error("resproj: " + path + ": no prompt events");
  listmode_data lm;
  lm.pairs = std::move(f.events.prompts.pairs);
  lm.bins = std::move(f.events.prompts.tof_bins);
  return lm;
}

} // namespace recon
RESPROJ_NAMESPACE_END
