/// @file
/// @brief `polygon_scanner`: a cylindrical PET scanner whose rings are
/// regular polygons of flat detector modules (spec/benchmark-problems.md,
/// "Scanner dmi").
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

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
/// (mm for the reference scanner); x, y, z are image axes 0, 1, 2.
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
  /// @throws invalid_argument naming the first bad argument.
  polygon_scanner(int num_sides, int crystals_per_side, double inner_radius,
                  double crystal_pitch, std::vector<double> ring_z)
      : num_sides_(num_sides), crystals_per_side_(crystals_per_side),
        inner_radius_(inner_radius), crystal_pitch_(crystal_pitch),
        ring_z_(std::move(ring_z)) {
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

  /// `num_sides * crystals_per_side`.
  int crystals_per_ring() const noexcept { return num_sides_ * crystals_per_side_; }
  /// Number of rings.
  int num_rings() const noexcept { return int(ring_z_.size()); }
  /// `crystals_per_ring * num_rings`.
  std::size_t num_crystals() const noexcept {
    return std::size_t(crystals_per_ring()) * ring_z_.size();
  }

  /// Centre of crystal `crystal` of ring `ring` as (x, y, z), computed in
  /// double by the formula of the class description.
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
    return {xy[0], xy[1], ring_z_[std::size_t(ring)]};
  }

  /// All crystal centres as float xyz triplets, ring-major: crystal `c` of
  /// ring `r` is at `3 * (r * crystals_per_ring() + c)`. Each coordinate
  /// is computed in double and rounded once to float.
  std::vector<float> detector_centres() const {
    const int n = crystals_per_ring();
    std::vector<float> xy(2 * std::size_t(n));
    for (int c = 0; c < n; ++c) {
      const auto p = crystal_xy(c);
      xy[2 * std::size_t(c)] = float(p[0]);
      xy[2 * std::size_t(c) + 1] = float(p[1]);
    }
    std::vector<float> out(3 * num_crystals());
    float *o = out.data();
    for (const double z : ring_z_)
      for (int c = 0; c < n; ++c) {
        *o++ = xy[2 * std::size_t(c)];
        *o++ = xy[2 * std::size_t(c) + 1];
        *o++ = float(z);
      }
    return out;
  }

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
};

} // namespace scanner
RESPROJ_NAMESPACE_END
