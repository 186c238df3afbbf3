/// @file
/// @brief The total-body reference scanner "tb" (a 1.94 m long axial field
/// of view), its reference image geometry and TOF parameters
/// (docs/benchmark-problems.md, "Total-body scale"). Defined for
/// comparable figures; it models no vendor's system.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// Modules (sides) per ring of `tb()`.
inline constexpr int tb_num_sides = 24;
/// Crystals per module of `tb()`.
inline constexpr int tb_crystals_per_side = 35;
/// Crystals per ring of `tb()`: 840.
inline constexpr int tb_crystals_per_ring = tb_num_sides * tb_crystals_per_side;
/// Rings per axial unit of `tb()`.
inline constexpr int tb_rings_per_unit = 84;
/// Axial units of `tb()`.
inline constexpr int tb_num_units = 8;
/// Rings of `tb()`: 672.
inline constexpr int tb_num_rings = tb_rings_per_unit * tb_num_units;
/// Crystal pitch of `tb()` (mm), within a module and from ring to ring.
inline constexpr double tb_crystal_pitch = 2.85;
/// Extra axial gap between two units of `tb()` (mm).
inline constexpr double tb_unit_gap = 4.0;
/// Number of OSEM subsets of the `tb-lm-osem` problem (event i in subset
/// i mod 20).
inline constexpr int tb_num_subsets = 20;

/// Inner radius of `tb()` (mm): the radius at which 24 flat modules of
/// 35 x 2.85 mm close into a polygon, `35 * 2.85 / (2 tan(pi / 24))`
/// = 378.84.
inline double tb_inner_radius() {
  const double pi = 3.14159265358979323846;
  return double(tb_crystals_per_side) * tb_crystal_pitch /
         (2.0 * std::tan(pi / double(tb_num_sides)));
}

/// Axial centres of the rings of `tb()` (mm):
/// `z_r = 2.85 r + 4.0 floor(r / 84)`, then shifted so that the rings are
/// centred on z = 0 (end rings at -+970.175; 1940.35 from end to end).
inline std::vector<double> tb_ring_z() {
  std::vector<double> z(static_cast<std::size_t>(tb_num_rings));
  for (int r = 0; r < tb_num_rings; ++r)
    z[std::size_t(r)] =
        tb_crystal_pitch * double(r) + tb_unit_gap * double(r / tb_rings_per_unit);
  const double centre = 0.5 * (z.front() + z.back());
  for (double &zr : z)
    zr -= centre;
  return z;
}

/// The reference scanner "tb" (lengths in mm): 24 sides of 35 crystals
/// (840 per ring), pitch 2.85, inner radius `tb_inner_radius()` (378.84),
/// 672 rings in 8 units of 84 at `tb_ring_z()`; x, y, z on image axes 0,
/// 1, 2. As for every `polygon_scanner`, crystal `c` of ring `r` has
/// detector index `r * 840 + c` (564,480 detectors), and every ring
/// difference is accepted.
inline polygon_scanner tb() {
  return polygon_scanner(tb_num_sides, tb_crystals_per_side, tb_inner_radius(),
                         tb_crystal_pitch, tb_ring_z());
}

/// The reference image of `tb()`: 240 x 240 x 682 voxels of 2.85 mm,
/// centred on the origin (39.3 million voxels; the box spans +-342 mm on
/// axes 0 and 1 and +-971.85 mm on axis 2, covering the end rings).
inline image_geometry tb_image_geometry() {
  return image_geometry::centred({240, 240, 682}, {2.85, 2.85, 2.85});
}

/// TOF parameters of `tb()` (lengths in mm): 41 bins of 20 mm (+-410 mm
/// along the LOR), resolution 505 ps FWHM (sigma 299.792 / 2 x 0.505 /
/// 2.355 = 32.14 mm), kernels truncated at 3 sigma, centre offset 0.
template <class T = float> tof_params<T> tb_tof() {
  tof_params<T> t;
  t.num_bins = 41;
  t.bin_width = T(20);
  t.sigma = T(299.792 / 2 * 0.505 / 2.355);
  t.num_sigmas = 3;
  return t;
}

} // namespace scanner
RESPROJ_NAMESPACE_END
