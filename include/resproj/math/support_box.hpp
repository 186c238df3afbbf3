/// @file
/// @brief The index box of an image's nonzero voxels (its support box) and
/// the planes of a Joseph ray that can touch it. A forward projection of
/// an image that is zero outside the box needs only those planes: every
/// other sample is an exact zero, so the sum over the box's planes, in the
/// same order, has the same bits (`forward_lor_in_box`). Attenuation
/// images are zero in the air around the body, so per-event attenuation
/// walks skip most of their planes. Standard library only.
#pragma once

#include <cmath>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// Voxel index ranges [lo[k], hi[k]] along the three axes. The default box
/// holds every voxel of any grid; `empty()` when some lo > hi.
struct index_box {
  std::int64_t lo[3] = {-(std::int64_t(1) << 40), -(std::int64_t(1) << 40),
                        -(std::int64_t(1) << 40)};
  std::int64_t hi[3] = {std::int64_t(1) << 40, std::int64_t(1) << 40,
                        std::int64_t(1) << 40};
  RESPROJ_HD bool empty() const noexcept {
    return lo[0] > hi[0] || lo[1] > hi[1] || lo[2] > hi[2];
  }
};

/// The support box of `image` (C order, `shape`): the smallest index box
/// holding every voxel that is not == 0 (NaN counts as nonzero); empty
/// (lo = 0, hi = -1) when all are zero. Host code, one pass.
template <class T>
index_box nonzero_box(const T *image, const std::int64_t shape[3]) noexcept {
  index_box b;
  for (int k = 0; k < 3; ++k) {
    b.lo[k] = shape[k];
    b.hi[k] = -1;
  }
  const T *row = image;
  for (std::int64_t i0 = 0; i0 < shape[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < shape[1]; ++i1, row += shape[2]) {
      std::int64_t first = 0;
      while (first < shape[2] && row[first] == T(0))
        ++first;
      if (first == shape[2])
        continue;
      std::int64_t last = shape[2] - 1;
      while (row[last] == T(0))
        --last;
      b.lo[0] = i0 < b.lo[0] ? i0 : b.lo[0];
      b.hi[0] = i0 > b.hi[0] ? i0 : b.hi[0];
      b.lo[1] = i1 < b.lo[1] ? i1 : b.lo[1];
      b.hi[1] = i1 > b.hi[1] ? i1 : b.hi[1];
      b.lo[2] = first < b.lo[2] ? first : b.lo[2];
      b.hi[2] = last > b.hi[2] ? last : b.hi[2];
    }
  if (b.hi[0] < 0)
    for (int k = 0; k < 3; ++k) {
      b.lo[k] = 0;
      b.hi[k] = -1;
    }
  return b;
}

namespace detail {
/// Narrows [lo, hi] (planes) to the planes p where the fractional index
/// x(p) = x0 + p dx along one of the other axes can have a tap in
/// [b_lo, b_hi] (floor(x) in [b_lo - 1, b_hi]), widened by a margin far
/// above the rounding of x(p) and by one plane on each side.
template <class T>
RESPROJ_HD void narrow_to_taps(T x0, T dx, std::int64_t b_lo, std::int64_t b_hi,
                               std::int64_t &lo, std::int64_t &hi) noexcept {
  const double p_max = abs_of(double(lo)) > abs_of(double(hi)) ? abs_of(double(lo)) + 1.0
                                                               : abs_of(double(hi)) + 1.0;
  const double margin = 1e-5 * (abs_of(double(x0)) + abs_of(double(dx)) * p_max + 1.0);
  const double low = double(b_lo) - 1.0 - margin, high = double(b_hi) + 1.0 + margin;
  if (dx == T(0)) {
    if (!(double(x0) >= low && double(x0) <= high))
      hi = lo - 1;
    return;
  }
  double pa = (low - double(x0)) / double(dx), pb = (high - double(x0)) / double(dx);
  if (pa > pb) {
    const double t = pa;
    pa = pb;
    pb = t;
  }
  const double l = floor_of(pa) - 1.0, h = -floor_of(-pb) + 1.0;
  if (l > double(lo))
    lo = l > double(hi) ? hi + 1 : std::int64_t(l);
  if (h < double(hi))
    hi = h < double(lo) ? lo - 1 : std::int64_t(h);
}
} // namespace detail

/// The planes [lo, hi] of `r` (inside [first_plane, last_plane]) outside
/// which no sample has a tap with nonzero weight inside `b`; lo > hi when
/// no plane can. Conservative: the range may hold a few planes whose taps
/// all miss the box, never fewer.
template <class T>
RESPROJ_HD void planes_meeting_box(const joseph_ray<T> &r, const index_box &b,
                                   std::int64_t &lo, std::int64_t &hi) noexcept {
  lo = r.first_plane;
  hi = r.last_plane;
  if (r.empty() || b.empty()) {
    hi = lo - 1;
    return;
  }
  const int ax = r.axis, au = ax == 0 ? 1 : 0, av = ax == 2 ? 1 : 2;
  const std::int64_t b_lo = axis_value(b.lo, ax), b_hi = axis_value(b.hi, ax);
  lo = b_lo > lo ? b_lo : lo;
  hi = b_hi < hi ? b_hi : hi;
  if (lo > hi)
    return;
  detail::narrow_to_taps(r.u0, r.du, axis_value(b.lo, au), axis_value(b.hi, au), lo, hi);
  if (lo > hi)
    return;
  detail::narrow_to_taps(r.v0, r.dv, axis_value(b.lo, av), axis_value(b.hi, av), lo, hi);
}

/// Non-TOF forward projection of LOR a -> b through `image`, which is zero
/// outside `box` (its `nonzero_box` or a larger one): the planes of
/// `planes_meeting_box` only, in increasing order. The same bits as
/// `forward_lor(g, image, a, b)`.
template <class I = std::int64_t, class T>
RESPROJ_HD T forward_lor_in_box(const image_grid<T> &g, const T *image,
                                const index_box &box, const T a[3],
                                const T b[3]) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  std::int64_t lo, hi;
  planes_meeting_box(r, box, lo, hi);
  T acc = 0;
#if RESPROJ_IN_DEVICE_CODE
#pragma unroll 4 // several planes' loads in flight
#endif
  for (std::int64_t p = lo; p <= hi; ++p)
    acc += sample<I>(image, r, p);
  return acc * r.step;
}

} // namespace math
RESPROJ_NAMESPACE_END
