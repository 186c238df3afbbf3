/// @file
/// @brief `polygon_scanner`: a cylindrical PET scanner whose rings are
/// regular polygons of flat detector modules (docs/benchmark-problems.md,
/// "Scanner dmi").
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/scanner/detector_table.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// A scanner of identical rings; each ring is a regular polygon of
/// `num_sides` flat modules of `crystals_per_side` crystals.
///
/// Crystal `c` of a ring (0-based, counter-clockwise seen from +z):
/// `side = c / crystals_per_side`,
/// `t = c - crystals_per_side * side - (crystals_per_side - 1) / 2`,
/// `phi = 2 pi side / num_sides`,
/// `x = R cos(phi) - pitch t sin(phi)`, `y = R sin(phi) + pitch t cos(phi)`,
/// `z = ring_z[ring]`; R is the inner radius (the distance of a module's
/// centre from the axis). Coordinates are in the unit of `inner_radius`
/// (mm for the reference scanner).
///
/// The axis of symmetry `axis` (0, 1 or 2; default 2) is the image axis the
/// rings stack along: image axis `axis` holds z, axis `(axis + 1) % 3`
/// holds x and axis `(axis + 2) % 3` holds y (a cyclic permutation, so the
/// scanner keeps its handedness). With the default, x, y, z are image axes
/// 0, 1, 2; with axis 0 a crystal is at (z, x, y), with axis 1 at (y, z, x).
///
/// Detector index of crystal `c` of ring `r`: `r * crystals_per_ring() + c`
/// (ring-major), the index used by `detector_centres`,
/// `to_detector_table` and the sinogram maps.
///
/// An instance always holds validated values. Copyable; immutable, so
/// concurrent reads are safe.
class polygon_scanner {
public:
  /// @param num_sides          modules per ring, >= 3
  /// @param crystals_per_side  crystals per module, >= 1
  /// @param inner_radius       distance of the module centres from the
  ///                           axis, finite and > 0
  /// @param crystal_pitch      crystal spacing within a module, finite, > 0
  /// @param ring_z             axial position of each ring, non-empty, finite
  /// @param axis               image axis of symmetry: 0, 1 or 2 (default 2)
  /// @throws invalid_argument naming the first bad argument.
  polygon_scanner(int num_sides, int crystals_per_side, double inner_radius,
                  double crystal_pitch, std::vector<double> ring_z, int axis = 2)
      : num_sides_(num_sides), crystals_per_side_(crystals_per_side),
        inner_radius_(inner_radius), crystal_pitch_(crystal_pitch),
        ring_z_(std::move(ring_z)), axis_(axis) {
    if (num_sides < 3)
      resproj::detail::throw_invalid("num_sides", "must be >= 3 (got " +
                                                      std::to_string(num_sides) + ")");
    if (crystals_per_side < 1)
      resproj::detail::throw_invalid("crystals_per_side",
                                     "must be >= 1 (got " +
                                         std::to_string(crystals_per_side) + ")");
    if (double(num_sides) * double(crystals_per_side) > 1.0e8)
      resproj::detail::throw_invalid("crystals_per_side",
                                     "too many crystals per ring (num_sides * "
                                     "crystals_per_side must be <= 1e8)");
    if (!std::isfinite(inner_radius) || !(inner_radius > 0))
      resproj::detail::throw_invalid("inner_radius", "must be finite and > 0 (got " +
                                                         std::to_string(inner_radius) +
                                                         ")");
    if (!std::isfinite(crystal_pitch) || !(crystal_pitch > 0))
      resproj::detail::throw_invalid("crystal_pitch", "must be finite and > 0 (got " +
                                                          std::to_string(crystal_pitch) +
                                                          ")");
    if (ring_z_.empty())
      resproj::detail::throw_invalid("ring_z", "must hold at least one ring");
    if (ring_z_.size() > 1000000)
      resproj::detail::throw_invalid("ring_z", "too many rings (more than 1e6)");
    for (std::size_t r = 0; r < ring_z_.size(); ++r)
      if (!std::isfinite(ring_z_[r]))
        resproj::detail::throw_invalid("ring_z[" + std::to_string(r) + "]",
                                       "must be finite");
    if (axis < 0 || axis > 2)
      resproj::detail::throw_invalid("axis", "must be 0, 1 or 2 (got " +
                                                 std::to_string(axis) + ")");
    if (double(num_sides) * double(crystals_per_side) * double(ring_z_.size()) >
        2147483647.0)
      resproj::detail::throw_invalid("ring_z", "too many crystals in all (num_rings * "
                                               "crystals_per_ring must be < 2^31)");
  }

  /// Modules per ring.
  int num_sides() const noexcept { return num_sides_; }
  /// Crystals per module.
  int crystals_per_side() const noexcept { return crystals_per_side_; }
  /// Distance of the module centres from the axis.
  double inner_radius() const noexcept { return inner_radius_; }
  /// Crystal spacing within a module.
  double crystal_pitch() const noexcept { return crystal_pitch_; }
  /// Axial position of each ring.
  const std::vector<double> &ring_z() const noexcept { return ring_z_; }
  /// Image axis of symmetry (0, 1 or 2) the rings stack along.
  int axis() const noexcept { return axis_; }

  /// `num_sides * crystals_per_side`.
  int crystals_per_ring() const noexcept { return num_sides_ * crystals_per_side_; }
  /// Number of rings.
  int num_rings() const noexcept { return int(ring_z_.size()); }
  /// `crystals_per_ring * num_rings`.
  std::size_t num_crystals() const noexcept {
    return std::size_t(crystals_per_ring()) * ring_z_.size();
  }

  /// Centre of crystal `crystal` of ring `ring` in image axes 0, 1, 2
  /// (x, y, z placed according to `axis()`), computed in double by the
  /// formula of the class description.
  /// @throws invalid_argument if `ring` or `crystal` is out of range.
  std::array<double, 3> crystal_position(int ring, int crystal) const {
    if (ring < 0 || ring >= num_rings())
      resproj::detail::throw_invalid("ring", "must be in [0, " +
                                                 std::to_string(num_rings()) + ") (got " +
                                                 std::to_string(ring) + ")");
    if (crystal < 0 || crystal >= crystals_per_ring())
      resproj::detail::throw_invalid(
          "crystal", "must be in [0, " + std::to_string(crystals_per_ring()) + ") (got " +
                         std::to_string(crystal) + ")");
    const auto xy = crystal_xy(crystal);
    std::array<double, 3> p{};
    p[std::size_t(axis_)] = ring_z_[std::size_t(ring)];
    p[std::size_t((axis_ + 1) % 3)] = xy[0];
    p[std::size_t((axis_ + 2) % 3)] = xy[1];
    return p;
  }

  /// Detector index of crystal `crystal` of ring `ring`:
  /// `ring * crystals_per_ring() + crystal`.
  /// @throws invalid_argument if `ring` or `crystal` is out of range.
  std::int32_t detector_index(int ring, int crystal) const {
    (void)crystal_position(ring, crystal); // range checks
    return std::int32_t(ring) * crystals_per_ring() + crystal;
  }

  /// (ring, crystal) of detector index `detector`.
  /// @throws invalid_argument ("detector") if out of range.
  std::pair<int, int> ring_and_crystal(std::int64_t detector) const {
    if (detector < 0 || detector >= std::int64_t(num_crystals()))
      resproj::detail::throw_invalid("detector",
                                     "must be in [0, " + std::to_string(num_crystals()) +
                                         ") (got " + std::to_string(detector) + ")");
    const int n = crystals_per_ring();
    return {int(detector / n), int(detector % n)};
  }

  /// All crystal centres as float triplets (image axes 0, 1, 2), ring-major:
  /// crystal `c` of ring `r` is at `3 * (r * crystals_per_ring() + c)`.
  /// Each coordinate is computed in double and rounded once to float.
  std::vector<float> detector_centres() const {
    const int n = crystals_per_ring();
    std::vector<float> xy(2 * std::size_t(n));
    for (int c = 0; c < n; ++c) {
      const auto p = crystal_xy(c);
      xy[2 * std::size_t(c)] = float(p[0]);
      xy[2 * std::size_t(c) + 1] = float(p[1]);
    }
    std::vector<float> out(3 * num_crystals());
    const std::size_t ax = std::size_t(axis_), ix = std::size_t((axis_ + 1) % 3),
                      iy = std::size_t((axis_ + 2) % 3);
    float *o = out.data();
    for (const double z : ring_z_)
      for (int c = 0; c < n; ++c, o += 3) {
        o[ix] = xy[2 * std::size_t(c)];
        o[iy] = xy[2 * std::size_t(c) + 1];
        o[ax] = float(z);
      }
    return out;
  }

  /// The crystal centres (`detector_centres()`) as a `detector_table`.
  detector_table to_detector_table() const { return detector_table(detector_centres()); }

private:
  // Transaxial position of crystal c (unchecked).
  std::array<double, 2> crystal_xy(int c) const noexcept {
    const double pi = 3.14159265358979323846;
    const int side = c / crystals_per_side_;
    const double t =
        double(c - crystals_per_side_ * side) - double(crystals_per_side_ - 1) / 2.0;
    const double phi = 2.0 * pi * double(side) / double(num_sides_);
    const double cp = std::cos(phi), sp = std::sin(phi);
    return {inner_radius_ * cp - crystal_pitch_ * t * sp,
            inner_radius_ * sp + crystal_pitch_ * t * cp};
  }

  int num_sides_;
  int crystals_per_side_;
  double inner_radius_;
  double crystal_pitch_;
  std::vector<double> ring_z_;
  int axis_ = 2;
};

/// A small scanner for tests: 12 modules of 4 crystals (48 crystals per
/// ring), inner radius 60, pitch 7.5, 4 rings 8 apart centred on 0
/// (z = -12, -4, 4, 12); `axis` as in `polygon_scanner`.
inline polygon_scanner small_test_scanner(int axis = 2) {
  return polygon_scanner(12, 4, 60.0, 7.5, {-12.0, -4.0, 4.0, 12.0}, axis);
}

} // namespace scanner
RESPROJ_NAMESPACE_END
