/// @file
/// @brief The taps of two consecutive samples of a ray whose principal axis
/// is the image's contiguous axis, matched by voxel column: where both
/// samples touch the same column their taps are neighbours in memory
/// (planes p and p + 1), so a backend can add them with one vector
/// operation. The same amounts as two `scatter` calls; only the grouping
/// differs. Standard library only.
#pragma once

#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// True when the planes of `r` are the image's contiguous axis (plane p + 1
/// is one element after plane p in every column): the case
/// `scatter_plane_pair` serves.
template <class T> RESPROJ_HD bool planes_contiguous(const joseph_ray<T> &r) noexcept {
  return r.stride_plane == 1;
}

/// Scatters the samples of `r` on planes p (value `v0`) and p + 1 (value
/// `v1`); a value of 0 leaves its plane out (so p or p + 1 may lie outside
/// the ray's planes). Needs `planes_contiguous(r)`. For every voxel column
/// that both samples touch with a non-zero weight it calls
/// `pair(o, v0 * w_p, v1 * w_p1)`, with `o` the offset of plane p's tap
/// (plane p + 1's is `o + 1`); for every other tap `single(o, v * w)`.
/// Every offset has `delta` added. The amounts are those of
/// `scatter<I>(image, r, p, v0, add)` and `scatter<I>(image, r, p + 1, v1,
/// add)`, each once.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Pair, class Single>
RESPROJ_HD void scatter_plane_pair(const joseph_ray<T> &r, std::int64_t p, T v0, T v1,
                                   I delta, Pair &&pair, Single &&single) noexcept {
  const I su = I(r.stride_u), sv = I(r.stride_v);
  const bool has0 = v0 != T(0), has1 = v1 != T(0);
  bilinear_point<I, T> q1{};
  if (has1)
    q1 = bilinear_at<I>(r, p + 1);
  unsigned taken = 0; // taps of plane p + 1 already added in a pair
  if (has0) {
    const bilinear_point<I, T> q0 = bilinear_at<I>(r, p);
    const I base = I(p) + q0.iu * su + q0.iv * sv + delta;
    // Tap (a, b) of plane p lies in the column of tap (a + du, b + dv) of
    // plane p + 1.
    const I du = q0.iu - q1.iu, dv = q0.iv - q1.iv;
    for (int i = 0; i < 4; ++i) {
      if (q0.weight[i] == T(0))
        continue;
      const I a = I(i & 1), b = I(i >> 1);
      const I o = base + a * su + b * sv;
      const I a1 = a + du, b1 = b + dv;
      if (has1 && a1 >= 0 && a1 <= 1 && b1 >= 0 && b1 <= 1) {
        const int j = int(a1 + 2 * b1);
        // Selected, not indexed: a run-time index would put q1 in local memory.
        const T w1 =
            j == 0 ? q1.weight[0]
                   : (j == 1 ? q1.weight[1] : (j == 2 ? q1.weight[2] : q1.weight[3]));
        if (w1 != T(0)) {
          pair(o, v0 * q0.weight[i], v1 * w1);
          taken |= 1u << j;
          continue;
        }
      }
      single(o, v0 * q0.weight[i]);
    }
  }
  if (has1) {
    const I base = I(p + 1) + q1.iu * su + q1.iv * sv + delta;
    for (int j = 0; j < 4; ++j)
      if (q1.weight[j] != T(0) && ((taken >> j) & 1u) == 0)
        single(base + I(j & 1) * su + I(j >> 1) * sv, v1 * q1.weight[j]);
  }
}

namespace detail {
/// Adders that add the taps of two consecutive contiguous planes together
/// declare `static constexpr bool scatters_plane_pairs = true` and a member
/// `template <class I, class T> void scatter_plane_pair(T *image, const
/// joseph_ray<T> &r, std::int64_t p, T v0, T v1) const` that adds the same
/// amounts as scattering `v0` on plane p and `v1` on plane p + 1 (a value
/// of 0: that plane is left out), for rays with `planes_contiguous`.
template <class Add, class = void> struct scatters_plane_pairs : std::false_type {};
template <class Add>
struct scatters_plane_pairs<Add,
                            std::enable_if_t<std::decay_t<Add>::scatters_plane_pairs>>
    : std::true_type {};
} // namespace detail

/// The first plane of the pair walk: the largest p <= lo with p + delta
/// even, so that with even column strides plane p of every column starts
/// an 8-byte aligned pair of floats (two's complement: also for negative
/// values).
RESPROJ_HD inline std::int64_t pair_start(std::int64_t lo, std::int64_t delta) noexcept {
  return ((lo + delta) & ~std::int64_t(1)) - delta;
}

} // namespace math
RESPROJ_NAMESPACE_END
