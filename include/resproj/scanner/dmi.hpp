/// @file
/// @brief The reference scanner "dmi" (a 36-ring GE Discovery MI-class
/// geometry) and its reference sinogram (docs/benchmark-problems.md).
/// Includes the general `polygon_scanner` and span-1 sinogram tools.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// The reference scanner "dmi" (lengths in mm): 34 sides of 16 crystals
/// (544 per ring), inner radius 0.5 * (744.1 + 2 * 8.51) = 380.56, pitch
/// 4.03125, 36 rings at `5.31556 r + 2.8 floor(r / 9)` (a 2.8 mm gap after
/// every 9 rings), shifted so that the rings are centred on z = 0.
inline polygon_scanner dmi() {
  constexpr int num_rings = 36;
  std::vector<double> z(num_rings);
  for (int r = 0; r < num_rings; ++r)
    z[std::size_t(r)] = 5.31556 * r + 2.8 * std::floor(r / 9.0);
  const double centre = 0.5 * (z.front() + z.back());
  for (double &zr : z)
    zr -= centre;
  return polygon_scanner(34, 16, 0.5 * (744.1 + 2 * 8.51), 4.03125, std::move(z));
}

/// The reference sinogram of `dmi()`: span 1, all ring differences, 65
/// radial bins trimmed at each edge: 272 views, 415 radial bins, 1296
/// planes (146,292,480 bins).
inline sinogram_layout dmi_sinogram() { return span1_sinogram(dmi(), 65); }

/// TOF parameters of `dmi()` (lengths in mm): 29 bins of 13 x 13.02 ps
/// (25.37 mm), resolution 385 ps FWHM (sigma 24.51 mm), kernels truncated
/// at 3 sigma.
template <class T = float> tof_params<T> dmi_tof() {
  tof_params<T> t;
  t.num_bins = 29;
  t.bin_width = T(13 * 0.01302 * 299.792 / 2);
  t.sigma = T(299.792 / 2 * 0.385 / 2.355);
  t.num_sigmas = 3;
  return t;
}

/// Number of OSEM subsets of the `dmi-subset` problem: subset 0 of 34 is
/// views 0, 34, ..., 238.
inline constexpr int dmi_num_subsets = 34;

} // namespace scanner
RESPROJ_NAMESPACE_END
