/// @file
/// @brief Slabs of an image for projections in passes: the image is cut
/// across its longest axis into `count` slabs, and pass k visits only the
/// samples that lie in slab k, so that the voxels a pass touches can stay
/// in the GPU's L2 when the whole image cannot. The passes together visit
/// every plane of a ray exactly once. Shared by every backend.
#pragma once

#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// Pass `index` of `count` over the slabs of an image along `axis`.
/// Slab k holds the voxel indices `[begin(k), begin(k + 1))` along the
/// axis, with `begin(k) = k * size / count`; slab 0 extends to minus
/// infinity and the last slab to plus infinity, so that samples at the
/// image's edges (lower neighbour -1) belong to a slab too.
struct slab_pass {
  int axis = 0;          ///< image axis cut into slabs
  std::int64_t size = 1; ///< voxels along `axis`
  int count = 1;         ///< slabs (passes)
  int index = 0;         ///< this pass's slab

  /// First voxel index of slab k (k in [1, count - 1]).
  RESPROJ_HD std::int64_t begin(int k) const noexcept {
    return std::int64_t(k) * size / count;
  }
};

/// Pass `index` of `count` over `g`'s longest axis (the lowest such axis
/// on a tie).
template <class T>
RESPROJ_HD slab_pass make_slab_pass(const image_grid<T> &g, int count,
                                    int index) noexcept {
  slab_pass s;
  s.axis = 0;
  if (g.shape[1] > g.shape[s.axis])
    s.axis = 1;
  if (g.shape[2] > g.shape[s.axis])
    s.axis = 2;
  s.size = g.shape[s.axis];
  s.count = count > 0 ? count : 1;
  s.index = index;
  return s;
}

/// Voxel index along `s.axis` of the sample of `r` on plane p: p itself
/// when the slabs cut the principal axis, else the lower bilinear
/// neighbour `floor(x0 + p dx)` on that axis (uncontracted, so that every
/// pass computes the same integer).
template <class T>
RESPROJ_HD std::int64_t slab_coordinate(const joseph_ray<T> &r, const slab_pass &s,
                                        std::int64_t p) noexcept {
  if (s.axis == r.axis)
    return p;
  const bool on_u = s.axis == (r.axis == 0 ? 1 : 0);
  const T x0 = on_u ? r.u0 : r.v0, dx = on_u ? r.du : r.dv;
  return std::int64_t(floor_of(x0 + mul_no_contract(T(p), dx)));
}

namespace detail {

/// First plane p in [lo, hi] with `at_least(p)` true (hi + 1 if none), for
/// a predicate that is false and then true along [lo, hi]. Starts at
/// `guess` and steps, so an imprecise guess costs steps, not exactness.
template <class Pred>
RESPROJ_HD std::int64_t first_true(std::int64_t lo, std::int64_t hi, std::int64_t guess,
                                   Pred &&at_least) noexcept {
  std::int64_t p = guess < lo ? lo : (guess > hi + 1 ? hi + 1 : guess);
  while (p > lo && at_least(p - 1))
    --p;
  while (p <= hi && !at_least(p))
    ++p;
  return p;
}

/// Predicate "the slab coordinate of plane p has passed `bound`": >= bound
/// along a ray whose coordinate grows with p, < bound where it shrinks.
template <class T> struct slab_bound_passed {
  const joseph_ray<T> &r;
  const slab_pass &s;
  std::int64_t bound;
  bool rising;
  RESPROJ_HD bool operator()(std::int64_t p) const noexcept {
    const std::int64_t c = slab_coordinate(r, s, p);
    return rising ? c >= bound : c < bound;
  }
};

} // namespace detail

/// The planes `[lo, hi]` of `r` whose samples lie in slab `s.index`
/// (empty: lo > hi). The slab coordinate is monotonic in p, so these
/// planes are consecutive; over the passes of one `count` every plane of
/// `[r.first_plane, r.last_plane]` falls in exactly one range.
template <class T>
RESPROJ_HD void slab_plane_range(const joseph_ray<T> &r, const slab_pass &s,
                                 std::int64_t &lo, std::int64_t &hi) noexcept {
  lo = r.first_plane;
  hi = r.last_plane;
  if (s.count <= 1 || r.empty())
    return;
  const bool first_slab = s.index <= 0, last_slab = s.index >= s.count - 1;
  const std::int64_t b0 = s.begin(s.index), b1 = s.begin(s.index + 1);
  if (s.axis == r.axis) {
    if (!first_slab && b0 > lo)
      lo = b0;
    if (!last_slab && b1 - 1 < hi)
      hi = b1 - 1;
    return;
  }
  const bool on_u = s.axis == (r.axis == 0 ? 1 : 0);
  const T x0 = on_u ? r.u0 : r.v0, dx = on_u ? r.du : r.dv;
  const bool rising = !(dx < T(0));
  // Plane where the coordinate reaches `b` (a guess; NaN or far away for
  // a flat ray, which only costs steps).
  auto guess = [&](std::int64_t b) -> std::int64_t {
    const T p = (T(b) - x0) / dx;
    if (!(p > T(r.first_plane - 1)))
      return r.first_plane;
    if (!(p < T(r.last_plane + 1)))
      return r.last_plane + 1;
    return std::int64_t(floor_of(p));
  };
  const std::int64_t first = r.first_plane, last = r.last_plane;
  // Rising: the slab starts where the coordinate reaches b0 and ends before
  // it reaches b1; falling: it starts where the coordinate drops below b1.
  const std::int64_t enter = rising ? b0 : b1, leave = rising ? b1 : b0;
  const bool open_enter = rising ? first_slab : last_slab;
  const bool open_leave = rising ? last_slab : first_slab;
  if (!open_enter)
    lo = detail::first_true(first, last, guess(enter),
                            detail::slab_bound_passed<T>{r, s, enter, rising});
  if (!open_leave)
    hi = detail::first_true(first, last, guess(leave),
                            detail::slab_bound_passed<T>{r, s, leave, rising}) -
         1;
}

} // namespace math
RESPROJ_NAMESPACE_END
