/// @file
/// @brief What the list-mode order keys quantise and how their bits are
/// laid out: the normalisation box (`listmode_order_box`), the TOF-aware
/// key layout (`listmode_tof_key`, with the layout picked for an image,
/// `listmode_tof_key::for_image`) and their validation. Host code only
/// (standard library); the key kernels are in gpu/listmode_order_keys.cuh.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Normalisation of the order key: transaxial radius and axial range that
/// the LORs' offsets and midpoints are quantised over (values outside are
/// clamped; only locality depends on them, never results).
struct listmode_order_box {
  float radius = 1; ///< max |radial offset| in the (axis 0, axis 1) plane
  float z_min = -1; ///< axial (axis 2) range of LOR midpoints
  float z_max = 1;

  /// The box of an image: radius of its (axis 0, axis 1) bounding circle
  /// about the origin, axial extent of the image.
  static listmode_order_box from(const image_geometry &g) {
    listmode_order_box b;
    const double x = std::max(std::abs(g.box_min(0)), std::abs(g.box_max(0)));
    const double y = std::max(std::abs(g.box_min(1)), std::abs(g.box_max(1)));
    b.radius = float(std::sqrt(x * x + y * y));
    b.z_min = float(g.box_min(2));
    b.z_max = float(g.box_max(2));
    return b;
  }
};

/// Layout of the TOF-aware order key (`listmode_order` with bins), most
/// significant bits first:
///
/// 1. the axial slab: the top `slab_bits` of the axial cell of the centre
///    of the event's TOF bin on its LOR (axis 2 over [z_min, z_max] in
///    2^z_bits cells);
/// 2. with `axis_bits` = 1, whether the LOR's principal axis
///    (`math::principal_axis`, the projectors' choice) is axis 2;
/// 3. the transaxial direction angle (mod pi, in 2^angle_bits cells);
/// 4. the axial tilt (2^tilt_bits cells of `tilt_cell_degrees` centred on
///    0, clamped);
/// 5. a Morton (Z-order) code of that centre: axes 0 and 1 over +-radius,
///    `xy_bits` each, and the axial cell's remaining `z_bits - slab_bits`
///    bits.
///
/// Events of one direction whose TOF windows lie close together end up
/// adjacent, so that the planes a warp (and a block) visits touch the same
/// voxels. Slabs keep the events that run at the same time on the whole
/// GPU inside one axial section of the image: for an image larger than the
/// GPU's L2 cache, that section, not the whole image, is then the working
/// set of the projections. The slab bits are the axial cell's own top bits
/// moved up, so a layout with slabs holds the same information as one
/// without. The axis bit keeps the events of a warp on one principal axis:
/// their planes are then planes of the same axis, and the lanes of a warp
/// walk ranges that overlap. Only speed depends on the layout.
struct listmode_tof_key {
  int angle_bits = 5;             ///< 5.6 degree cells
  int tilt_bits = 3;              ///< 8 tilt cells
  float tilt_cell_degrees = 7.5f; ///< width of a tilt cell
  int xy_bits = 9;                ///< per transaxial axis
  int z_bits = 6;                 ///< axial; at most xy_bits
  int slab_bits = 0;              ///< of the z_bits, moved to the top; at most z_bits
  int axis_bits = 0;              ///< 0 or 1: the principal-axis bit

  /// Key bits in all (at most 32).
  int bits() const { return axis_bits + angle_bits + tilt_bits + 2 * xy_bits + z_bits; }

  /// Largest image (in voxels) that `for_image` leaves without slabs:
  /// 4 Mi voxels, 16 MiB of floats, about a third of an H100's 50 MB L2
  /// cache, so the whole image can be the working set.
  static constexpr double max_unsliced_voxels = 4.0 * 1024 * 1024;
  /// Most voxels of one slab of a larger image (the whole cross-section
  /// times the slab's planes): 1 Mi voxels, 4 MiB of floats, so that a
  /// slab and the TOF windows reaching beyond it stay in the L2 cache.
  static constexpr double max_slab_voxels = 1.0 * 1024 * 1024;

  /// Whether `geometry` is an image of at most `max_unsliced_voxels`, one
  /// the L2 cache holds: the unsliced layout.
  static bool unsliced(const image_geometry &geometry) {
    const auto &n = geometry.shape();
    return double(n[0]) * double(n[1]) * double(n[2]) <= max_unsliced_voxels;
  }

  /// Fewest events per direction cell that `for_image` aims at when it
  /// knows how many events one call projects: a smaller call gets coarser
  /// direction cells, so that the lanes of a warp stay close in space
  /// (docs/kernel-choices.md, "Direction cells and the call's size").
  static constexpr double min_events_per_direction = 16384;

  /// The layout for events projected into `geometry`. An image of at most
  /// `max_unsliced_voxels` takes the defaults above. A larger one takes
  /// slabs, the principal-axis bit, coarser direction cells (4 angle bits,
  /// 1 tilt bit) and finer axial cells (8 z bits), and the fewest slab bits
  /// that keep a slab (2^z_bits / 2^slab_bits axial cells of the image's
  /// axial extent) within `max_slab_voxels`. So dmi's 215 x 215 x 71
  /// (3.3 M voxels) keeps the defaults, and tb's 240 x 240 x 682 gets 6 slab
  /// bits (64 slabs of 10.7 planes, 0.6 M voxels each). The thresholds and
  /// layouts are measured in docs/kernel-choices.md ("Axial slabs in the
  /// TOF order", "The principal-axis bit").
  static listmode_tof_key for_image(const image_geometry &geometry) {
    listmode_tof_key k;
    if (unsliced(geometry))
      return k;
    const auto &n = geometry.shape();
    const double voxels = double(n[0]) * double(n[1]) * double(n[2]);
    k.axis_bits = 1;
    k.angle_bits = 4;
    k.tilt_bits = 1;
    k.z_bits = 8;
    while (k.slab_bits < k.z_bits && voxels / double(1 << k.slab_bits) > max_slab_voxels)
      ++k.slab_bits;
    return k;
  }

  /// The layout for calls of `events` events projected into `geometry`:
  /// `for_image(geometry)`, and for an image of at most
  /// `max_unsliced_voxels` with fewer than `min_events_per_direction`
  /// events per direction cell, coarser cells: one angle bit less, then
  /// one tilt bit less, alternately (5/3 bits, then 4/3, 4/2, 3/2, 3/1, at
  /// least 4 bits together), each tilt cell a 2^tilt_bits-th of 60 degrees.
  /// dmi-lm-osem's subsets of 1.2 M events get 4 angle and 2 tilt bits,
  /// calls of 1e7 events the defaults.
  static listmode_tof_key for_image(const image_geometry &geometry, std::size_t events) {
    listmode_tof_key k = for_image(geometry);
    if (!unsliced(geometry))
      return k;
    while (k.angle_bits + k.tilt_bits > 4 &&
           double(events) < min_events_per_direction *
                                double(1u << unsigned(k.angle_bits + k.tilt_bits))) {
      if (k.angle_bits > k.tilt_bits + 1)
        --k.angle_bits;
      else
        --k.tilt_bits;
      k.tilt_cell_degrees = 60.f / float(1 << k.tilt_bits);
    }
    return k;
  }
};

namespace detail {

/// @throws invalid_argument ("box") unless radius > 0 and z_min < z_max,
///         all finite.
inline void check_box(const listmode_order_box &box) {
  if (!(box.radius > 0.f) || !(box.z_max > box.z_min) || !std::isfinite(box.radius) ||
      !std::isfinite(box.z_min) || !std::isfinite(box.z_max))
    resproj::detail::throw_invalid("box", "needs radius > 0 and z_min < z_max, finite");
}

/// @throws invalid_argument ("key") for negative bit counts, z_bits >
///         xy_bits, slab_bits > z_bits, axis_bits other than 0 or 1, fewer
///         than 1 or more than 32 bits in all, or a tilt cell that is not
///         finite and > 0.
inline void check_tof_key(const listmode_tof_key &key) {
  if (key.angle_bits < 0 || key.tilt_bits < 0 || key.xy_bits < 0 || key.z_bits < 0 ||
      key.slab_bits < 0 || key.slab_bits > key.z_bits || key.z_bits > key.xy_bits ||
      (key.axis_bits != 0 && key.axis_bits != 1) || key.bits() > 32 || key.bits() < 1 ||
      !(key.tilt_cell_degrees > 0.f) || !std::isfinite(key.tilt_cell_degrees))
    resproj::detail::throw_invalid(
        "key", "needs bit counts >= 0, slab_bits <= z_bits <= "
               "xy_bits, axis_bits 0 or 1, 1 to 32 bits in all, a finite tilt cell > 0");
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
