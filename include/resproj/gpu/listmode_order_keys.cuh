/// @file
/// @brief The kernels that compute one 32-bit spatial order key per
/// list-mode event from its LOR (and TOF bin), on the normalisation and
/// layout of gpu/listmode_key_layout.hpp. `listmode_order`
/// (gpu/listmode_order.cuh) sorts by these keys.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/listmode_key_layout.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

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
inline constexpr float order_pi = 3.14159265358979f;

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

/// End points of LOR i as floats.
template <class T>
__device__ void load_float_end_points(const T *__restrict__ starts,
                                      const T *__restrict__ ends, std::size_t i,
                                      float a[3], float b[3]) {
  for (int d = 0; d < 3; ++d) {
    a[d] = float(starts[3 * i + std::size_t(d)]);
    b[d] = float(ends[3 * i + std::size_t(d)]);
  }
}

/// A LOR's direction `e` modulo pi: `d` is e or -e, whichever has d_y > 0
/// (or d_y = 0 and d_x >= 0); `phi` its transaxial angle in [0, pi),
/// `tilt` its axial angle in [-pi/2, pi/2], `dxy` its transaxial length.
struct direction_mod_pi {
  float dx, dy, dz, dxy, phi, tilt;
};

__device__ inline direction_mod_pi direction_of(float ex, float ey, float ez) {
  direction_mod_pi d{ex, ey, ez, 0.f, 0.f, 0.f};
  if (d.dy < 0.f || (d.dy == 0.f && d.dx < 0.f)) {
    d.dx = -d.dx;
    d.dy = -d.dy;
    d.dz = -d.dz;
  }
  d.phi = atan2f(d.dy, d.dx); // [0, pi]
  if (d.phi >= order_pi)
    d.phi = 0.f;
  d.dxy = sqrtf(d.dx * d.dx + d.dy * d.dy);
  d.tilt = atan2f(d.dz, d.dxy);
  return d;
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
  float a[3], b[3];
  load_float_end_points(starts, ends, i, a, b);
  const direction_mod_pi d = direction_of(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
  const float mx = 0.5f * (a[0] + b[0]), my = 0.5f * (a[1] + b[1]),
              mz = 0.5f * (a[2] + b[2]);
  const float radial = d.dxy > 0.f ? (mx * d.dy - my * d.dx) / d.dxy : 0.f;
  const std::uint32_t ka = quantise(d.phi / order_pi, order_angle_bits);
  const std::uint32_t kt = quantise(d.tilt / order_pi + 0.5f, order_tilt_bits);
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
  float a[3], b[3];
  load_float_end_points(starts, ends, i, a, b);
  const float ex = b[0] - a[0], ey = b[1] - a[1], ez = b[2] - a[2];
  const float length = sqrtf(ex * ex + ey * ey + ez * ez);
  // Centre of the event's bin (clamped to the bins) on the LOR: position
  // s = (j - (N - 1)/2) w + delta from the midpoint, towards the end point.
  int j = bins[i];
  j = j < 0 ? 0 : (j > tof.num_bins - 1 ? tof.num_bins - 1 : j);
  const float sc = (float(j) - 0.5f * float(tof.num_bins - 1)) * float(tof.bin_width) +
                   float(tof.center_offset_of(i));
  const float tc = length > 0.f ? 0.5f + sc / length : 0.5f;
  const float cx = a[0] + tc * ex, cy = a[1] + tc * ey, cz = a[2] + tc * ez;
  const direction_mod_pi d = direction_of(ex, ey, ez);
  const std::uint32_t ka = cell_of(d.phi / order_pi, k.angle_bits);
  const int half_tilt_cells = k.tilt_bits > 0 ? 1 << (k.tilt_bits - 1) : 0;
  const float tilt_cell = k.tilt_cell_degrees * order_pi / 180.f;
  float kt = floorf(d.tilt / tilt_cell + 0.5f) + float(half_tilt_cells);
  const float kt_max = float(k.tilt_bits > 0 ? 2 * half_tilt_cells - 1 : 0);
  if (!(kt > 0.f)) // also NaN
    kt = 0.f;
  if (kt > kt_max)
    kt = kt_max;
  const std::uint32_t qx = cell_of(0.5f + 0.5f * cx / box.radius, k.xy_bits);
  const std::uint32_t qy = cell_of(0.5f + 0.5f * cy / box.radius, k.xy_bits);
  const std::uint32_t qz = cell_of((cz - box.z_min) / (box.z_max - box.z_min), k.z_bits);
  // Slab (the axial cell's top bits), principal axis, direction, then the Morton code of
  // the cell's remaining bits.
  const int morton_z_bits = k.z_bits - k.slab_bits;
  std::uint32_t key = qz >> morton_z_bits;
  if (k.axis_bits != 0) {
    const float e[3] = {ex, ey, ez};
    key = (key << 1) | (math::principal_axis(e) == 2 ? 1u : 0u);
  }
  key = (key << k.angle_bits) | ka;
  key = (key << k.tilt_bits) | std::uint32_t(kt);
  for (int level = k.xy_bits - 1; level >= 0; --level) {
    key = (key << 1) | ((qx >> level) & 1u);
    key = (key << 1) | ((qy >> level) & 1u);
    if (level < morton_z_bits)
      key = (key << 1) | ((qz >> level) & 1u);
  }
  keys[i] = key;
  indices[i] = std::uint32_t(i);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
