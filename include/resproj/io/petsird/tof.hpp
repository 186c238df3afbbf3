/// @file
/// @brief PETSIRD TOF bins and resolution as the library's `tof_params`
/// (`petsird::tof_parameters`). Standard library only.
///
/// PETSIRD gives, per module-type pair, the TOF bin edges of
/// `(t1 - t2) c / 2` in mm (t1, t2: arrival times at the first and second
/// detection of an event) and the resolution as a FWHM in mm. That value
/// is the position of the annihilation along the LOR from its midpoint,
/// positive towards the second detector, which is the library's
/// convention with detector a = the first detection: bin j has centre
/// `(j - (n - 1) / 2) w + center_offset` with `w` the (uniform) bin width
/// and `center_offset` the mean of the first and last edges, and
/// `sigma = FWHM / (2 sqrt(2 ln 2))`. PETSIRD's TOF index is the library's
/// TOF bin unchanged.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/io/petsird/header.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// The TOF parameters of module-type pair (`t1`, `t2`) (either order).
/// A single bin (a non-TOF pair: the edges are the coincidence window)
/// gives `num_bins == 1`.
/// @param rel_tolerance  largest accepted relative difference of a bin
///                       width from the mean width (float edges round)
/// @param num_sigmas     truncation of the TOF kernel (tof_params::num_sigmas)
/// @throws invalid_argument ("t1", "t2") for a module type out of range.
/// @throws io_error naming "scanner.tof_bin_edges[t1][t2]" (missing, fewer
///         than 2 edges, not increasing, non-uniform bins, more than 32767
///         bins) or "scanner.tof_resolution[t1][t2]" (missing, not finite
///         and > 0).
template <class T = float>
tof_params<T> tof_parameters(const scanner_information &s, std::size_t t1, std::size_t t2,
                             double rel_tolerance = 1e-4, double num_sigmas = 3) {
  if (t1 >= s.num_module_types())
    resproj::detail::throw_invalid("t1", "module type out of range");
  if (t2 >= s.num_module_types())
    resproj::detail::throw_invalid("t2", "module type out of range");
  if (t2 > t1)
    std::swap(t1, t2);
  const std::string at = "[" + std::to_string(t1) + "][" + std::to_string(t2) + "]";
  auto bad = [&](const char *field, const std::string &problem) {
    throw io_error(std::string("resproj: PETSIRD scanner.") + field + at + ": " +
                   problem);
  };
  const std::vector<float> *edges = s.tof_edges(t1, t2);
  if (edges == nullptr)
    bad("tof_bin_edges", "missing or fewer than 2 edges");
  const std::size_t n = edges->size() - 1;
  if (n > 32767)
    bad("tof_bin_edges", std::to_string(n) + " bins; at most 32767 are supported");
  const double first = double((*edges)[0]), last = double((*edges)[n]);
  const double width = (last - first) / double(n);
  if (!std::isfinite(first) || !std::isfinite(last) || !(width > 0))
    bad("tof_bin_edges", "edges must be finite and increasing");
  for (std::size_t j = 0; j < n; ++j) {
    const double w = double((*edges)[j + 1]) - double((*edges)[j]);
    if (!(std::fabs(w - width) <= rel_tolerance * width))
      bad("tof_bin_edges", "non-uniform TOF bins are not supported: bin " +
                               std::to_string(j) + " is " + std::to_string(w) +
                               " mm wide, the mean width is " + std::to_string(width) +
                               " mm");
  }
  if (t1 >= s.tof_resolution.size() || t2 >= s.tof_resolution[t1].size())
    bad("tof_resolution", "missing");
  const double fwhm = double(s.tof_resolution[t1][t2]);
  if (!std::isfinite(fwhm) || !(fwhm > 0))
    bad("tof_resolution", "must be finite and > 0 (got " + std::to_string(fwhm) + ")");
  tof_params<T> p;
  p.num_bins = int(n);
  p.bin_width = T(width);
  p.center_offset = T(0.5 * (first + last));
  p.sigma = T(fwhm / (2.0 * std::sqrt(2.0 * std::log(2.0))));
  p.num_sigmas = T(num_sigmas);
  return p;
}

/// The TOF parameters shared by every module-type pair of the scanner
/// (`tof_parameters` of each pair, all equal within `rel_tolerance`).
/// @throws io_error as `tof_parameters`, or naming the first pair whose
///         bins or resolution differ from pair [0][0].
template <class T = float>
tof_params<T> common_tof_parameters(const scanner_information &s,
                                    double rel_tolerance = 1e-4, double num_sigmas = 3) {
  if (s.num_module_types() == 0)
    throw io_error("resproj: PETSIRD scanner.scanner_geometry: no module type");
  const tof_params<T> p = tof_parameters<T>(s, 0, 0, rel_tolerance, num_sigmas);
  for (std::size_t t1 = 1; t1 < s.num_module_types(); ++t1)
    for (std::size_t t2 = 0; t2 <= t1; ++t2) {
      const tof_params<T> q = tof_parameters<T>(s, t1, t2, rel_tolerance, num_sigmas);
      const auto differs = [&](T a, T b) {
        return std::fabs(double(a) - double(b)) > rel_tolerance * std::fabs(double(b));
      };
      if (q.num_bins != p.num_bins || differs(q.bin_width, p.bin_width) ||
          differs(q.sigma, p.sigma) ||
          std::fabs(double(q.center_offset) - double(p.center_offset)) >
              rel_tolerance * double(p.bin_width))
        throw io_error("resproj: PETSIRD scanner.tof_bin_edges[" + std::to_string(t1) +
                       "][" + std::to_string(t2) +
                       "]: TOF bins or resolution differ from module-type pair [0][0]; "
                       "use the per-pair tof_parameters");
    }
  return p;
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
