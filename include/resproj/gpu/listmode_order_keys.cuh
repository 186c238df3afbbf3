/// @file
/// @brief The spatial order keys of list-mode events: the key normalisation
/// (`listmode_order_box`), the TOF-aware key layout (`listmode_tof_key`) and
/// the kernels that compute one 32-bit key per event from its LOR (and TOF
/// bin). `listmode_order` (gpu/listmode_order.cuh) sorts by these keys.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/tof.hpp"

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
/// significant bits first: transaxial direction angle (mod pi, in
/// 2^angle_bits cells), axial tilt (2^tilt_bits cells of `tilt_cell_degrees`
/// centred on 0, clamped), then a Morton (Z-order) code of the centre of
/// the event's TOF bin on its LOR (axes 0 and 1 over +-radius, xy_bits
/// each; axis 2 over [z_min, z_max], z_bits). Events of one direction
/// whose TOF windows lie close together end up adjacent, so that the
/// planes a warp (and a block) visits touch the same voxels. Only speed
/// depends on it.
struct listmode_tof_key {
  int angle_bits = 5;             ///< 5.6 degree cells
  int tilt_bits = 3;              ///< 8 tilt cells
  float tilt_cell_degrees = 7.5f; ///< width of a tilt cell
  int xy_bits = 9;                ///< per transaxial axis
  int z_bits = 6;                 ///< axial; at most xy_bits
  /// Key bits in all (at most 32).
  int bits() const { return angle_bits + tilt_bits + 2 * xy_bits + z_bits; }
};

namespace detail {

/// Bits of the 32-bit order key, most significant first: transaxial
/// direction angle (mod pi), axial tilt, radial offset, axial midpoint.
/// Events with the same direction and nearly the same radial offset end up
/// adjacent, ordered along axis 2 (the image's contiguous axis), so that a
/// warp's samples are neighbours in memory, like lanes along sinogram
/// planes. Declare sorted events with `lor_layout::sorted_events()`.
inline constexpr int order_angle_bits = 6;
inline constexpr int order_tilt_bits = 3;
inline constexpr int order_radial_bits = 8;
inline constexpr int order_z_bits = 9;
inline constexpr int order_key_bits =
    order_angle_bits + order_tilt_bits + order_radial_bits + order_z_bits;
static_assert(order_key_bits <= 32, "order key must fit 32 bits");

/// Quantises x in [0, 1] to `bits` bits (clamped; NaN -> 0).
__device__ inline std::uint32_t quantise(float x, int bits) {
  const float levels = float((1u << bits) - 1u);
  float q = x * levels + 0.5f;
  if (!(q > 0.f))
    q = 0.f;
  if (q > levels)
    q = levels;
  return std::uint32_t(q);
}

template <class T>
RESPROJ_KERNEL void __launch_bounds__(256)
    listmode_key_kernel(const T *__restrict__ starts, const T *__restrict__ ends,
                        std::size_t count, listmode_order_box box,
                        std::uint32_t *__restrict__ keys,
                        std::uint32_t *__restrict__ indices) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  const float ax = float(starts[3 * i]), ay = float(starts[3 * i + 1]),
              az = float(starts[3 * i + 2]);
  const float bx = float(ends[3 * i]), by = float(ends[3 * i + 1]),
              bz = float(ends[3 * i + 2]);
  float dx = bx - ax, dy = by - ay, dz = bz - az;
  // Direction modulo pi: angle in [0, pi).
  if (dy < 0.f || (dy == 0.f && dx < 0.f)) {
    dx = -dx;
    dy = -dy;
    dz = -dz;
  }
  const float pi = 3.14159265358979f;
  float phi = atan2f(dy, dx); // [0, pi]
  if (phi >= pi)
    phi = 0.f;
  const float dxy = sqrtf(dx * dx + dy * dy);
  const float tilt = atan2f(dz, dxy); // [-pi/2, pi/2]
  const float mx = 0.5f * (ax + bx), my = 0.5f * (ay + by), mz = 0.5f * (az + bz);
  const float radial = dxy > 0.f ? (mx * dy - my * dx) / dxy : 0.f;
  const std::uint32_t ka = quantise(phi / pi, order_angle_bits);
  const std::uint32_t kt = quantise(tilt / pi + 0.5f, order_tilt_bits);
  const std::uint32_t kr = quantise(0.5f + 0.5f * radial / box.radius, order_radial_bits);
  const std::uint32_t kz =
      quantise((mz - box.z_min) / (box.z_max - box.z_min), order_z_bits);
  std::uint32_t key = ka;
  key = (key << order_tilt_bits) | kt;
  key = (key << order_radial_bits) | kr;
  key = (key << order_z_bits) | kz;
  keys[i] = key;
  indices[i] = std::uint32_t(i);
}

/// Cell of x in [0, 1) among 2^bits equal cells (clamped; NaN -> 0).
__device__ inline std::uint32_t cell_of(float x, int bits) {
  const float cells = float(1u << bits);
  float q = floorf(x * cells);
  if (!(q > 0.f))
    q = 0.f;
  if (q > cells - 1.f)
    q = cells - 1.f;
  return std::uint32_t(q);
}

template <class T>
RESPROJ_KERNEL void __launch_bounds__(256)
    listmode_tof_key_kernel(const T *__restrict__ starts, const T *__restrict__ ends,
                            const std::int16_t *__restrict__ bins, tof_params<T> tof,
                            std::size_t count, listmode_order_box box, listmode_tof_key k,
                            std::uint32_t *__restrict__ keys,
                            std::uint32_t *__restrict__ indices) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  const float ax = float(starts[3 * i]), ay = float(starts[3 * i + 1]),
              az = float(starts[3 * i + 2]);
  const float bx = float(ends[3 * i]), by = float(ends[3 * i + 1]),
              bz = float(ends[3 * i + 2]);
  const float ex = bx - ax, ey = by - ay, ez = bz - az;
  const float length = sqrtf(ex * ex + ey * ey + ez * ez);
  // Centre of the event's bin (clamped to the bins) on the LOR: position
  // s = (j - (N - 1)/2) w + delta from the midpoint, towards the end point.
  int j = bins[i];
  j = j < 0 ? 0 : (j > tof.num_bins - 1 ? tof.num_bins - 1 : j);
  const float sc = (float(j) - 0.5f * float(tof.num_bins - 1)) * float(tof.bin_width) +
                   float(tof.center_offset_of(i));
  const float tc = length > 0.f ? 0.5f + sc / length : 0.5f;
  const float cx = ax + tc * ex, cy = ay + tc * ey, cz = az + tc * ez;
  // Direction modulo pi.
  float dx = ex, dy = ey, dz = ez;
  if (dy < 0.f || (dy == 0.f && dx < 0.f)) {
    dx = -dx;
    dy = -dy;
    dz = -dz;
  }
  const float pi = 3.14159265358979f;
  float phi = atan2f(dy, dx); // [0, pi]
  if (phi >= pi)
    phi = 0.f;
  const float tilt = atan2f(dz, sqrtf(dx * dx + dy * dy)); // [-pi/2, pi/2]
  const std::uint32_t ka = cell_of(phi / pi, k.angle_bits);
  const int half_tilt_cells = k.tilt_bits > 0 ? 1 << (k.tilt_bits - 1) : 0;
  const float tilt_cell = k.tilt_cell_degrees * pi / 180.f;
  float kt = floorf(tilt / tilt_cell + 0.5f) + float(half_tilt_cells);
  const float kt_max = float(k.tilt_bits > 0 ? 2 * half_tilt_cells - 1 : 0);
  if (!(kt > 0.f)) // also NaN
    kt = 0.f;
  if (kt > kt_max)
    kt = kt_max;
  const std::uint32_t qx = cell_of(0.5f + 0.5f * cx / box.radius, k.xy_bits);
  const std::uint32_t qy = cell_of(0.5f + 0.5f * cy / box.radius, k.xy_bits);
  const std::uint32_t qz = cell_of((cz - box.z_min) / (box.z_max - box.z_min), k.z_bits);
  std::uint32_t key = (ka << k.tilt_bits) | std::uint32_t(kt);
  for (int level = k.xy_bits - 1; level >= 0; --level) {
    key = (key << 1) | ((qx >> level) & 1u);
    key = (key << 1) | ((qy >> level) & 1u);
    if (level < k.z_bits)
      key = (key << 1) | ((qz >> level) & 1u);
  }
  keys[i] = key;
  indices[i] = std::uint32_t(i);
}

/// @throws invalid_argument ("box") unless radius > 0 and z_min < z_max,
///         all finite.
inline void check_box(const listmode_order_box &box) {
  if (!(box.radius > 0.f) || !(box.z_max > box.z_min) || !std::isfinite(box.radius) ||
      !std::isfinite(box.z_min) || !std::isfinite(box.z_max))
    resproj::detail::throw_invalid("box", "needs radius > 0 and z_min < z_max, finite");
}

/// @throws invalid_argument ("key") for negative bit counts, z_bits >
///         xy_bits, fewer than 1 or more than 32 bits in all, or a tilt cell
///         that is not finite and > 0.
inline void check_tof_key(const listmode_tof_key &key) {
  if (key.angle_bits < 0 || key.tilt_bits < 0 || key.xy_bits < 0 || key.z_bits < 0 ||
      key.z_bits > key.xy_bits || key.bits() > 32 || key.bits() < 1 ||
      !(key.tilt_cell_degrees > 0.f) || !std::isfinite(key.tilt_cell_degrees))
    resproj::detail::throw_invalid("key",
                                   "needs bit counts >= 0, z_bits <= xy_bits, 1 to "
                                   "32 bits in all, a finite tilt cell > 0");
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
