/// @file
/// @brief An independent float64 implementation of the non-TOF Joseph
/// projector, written from docs/projection.md alone (it does not call or
/// copy resproj::math), and helpers to compare a projector with it.
///
/// It takes its discrete decisions (principal axis, clipping, plane range)
/// in float64 from the given end points, so a float projector may disagree
/// with it on a few LORs by a whole plane sample ("decision flips", see
/// compare.hpp). Standard library only; slow and simple on purpose.
///
/// Typical use (any backend; download GPU outputs to a host vector first):
///
///     const auto g = resproj_test::grid::centred({24, 20, 12}, {2, 1, 4});
///     const auto lors = resproj_test::outside_lors<float>(g, 50000, seed);
///     const auto img = resproj_test::random_values<float>(g.num_voxels(), seed,
///     0.5, 1.5); std::vector<float> out = ...;  // the projector's forward projection
///     const auto ref = resproj_test::ref::forward(g, img.data(), lors);
///     const auto cmp = resproj_test::compare_lors(out, ref);
///     EXPECT_TRUE(resproj_test::within_bounds(cmp, resproj_test::bounds<float>::norm));
///
/// Use positive images (e.g. values in [0.5, 1.5]) with compare_lors: a
/// flip is recognised by its relative size, which needs a LOR value that
/// does not cancel.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/lors.hpp"

namespace resproj_test {
namespace ref {

using vec3 = std::array<double, 3>;

/// Spec, "Non-TOF forward projection" 1: the axis with the largest
/// |b_k - a_k|; ties: axis 1 beats 0 and 2, axis 2 beats 0. Written as a
/// scan in priority order 1, 2, 0 where only a strictly larger value wins.
inline int principal_axis(const vec3 &d) {
  static const int priority[3] = {1, 2, 0};
  int best = priority[0];
  for (int i = 1; i < 3; ++i)
    if (std::fabs(d[std::size_t(priority[i])]) > std::fabs(d[std::size_t(best)]))
      best = priority[i];
  return best;
}

/// Spec, "Lines of response" and step 2: slab clipping of a + t (b - a),
/// t in [0, 1], against the closed box. False if the segment misses it.
inline bool clip_segment(const grid &g, const vec3 &a, const vec3 &b, double &t_enter,
                         double &t_leave) {
  t_enter = 0.0;
  t_leave = 1.0;
  for (int k = 0; k < 3; ++k) {
    const double dk = b[std::size_t(k)] - a[std::size_t(k)];
    const double lo = g.box_min(k), hi = g.box_max(k);
    if (dk == 0.0) { // "a_k within the closed interval", no division
      if (!(a[std::size_t(k)] >= lo && a[std::size_t(k)] <= hi))
        return false;
      continue;
    }
    const double t_lo = (lo - a[std::size_t(k)]) / dk;
    const double t_hi = (hi - a[std::size_t(k)]) / dk;
    t_enter = std::fmax(t_enter, std::fmin(t_lo, t_hi));
    t_leave = std::fmin(t_leave, std::fmax(t_lo, t_hi));
  }
  return t_enter <= t_leave;
}

/// Point of the segment at parameter t; exactly a at t = 0 and exactly b
/// at t = 1.
inline double lerp(double a, double b, double t) {
  if (t == 0.0)
    return a;
  if (t == 1.0)
    return b;
  return a + t * (b - a);
}

/// The discrete decisions of one LOR.
struct plan {
  bool zero_length = false;
  bool misses = false;
  int axis = 1;
  double f_in = 0, f_out = 0;       ///< plane-unit entry/exit along axis, sorted
  std::int64_t first = 1, last = 0; ///< sampled planes first..last
  double step = 0;                  ///< s_d / |cos theta_d|
  std::int64_t num_planes() const { return last >= first ? last - first + 1 : 0; }
};

inline plan make_plan(const grid &g, const vec3 &a, const vec3 &b) {
  plan p;
  const vec3 d = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  p.axis = principal_axis(d);
  const std::size_t ax = std::size_t(p.axis);
  if (d[0] == 0.0 && d[1] == 0.0 && d[2] == 0.0) {
    p.zero_length = true;
    return p;
  }
  double t_enter, t_leave;
  if (!clip_segment(g, a, b, t_enter, t_leave)) {
    p.misses = true;
    return p;
  }
  const double x_enter = lerp(a[ax], b[ax], t_enter);
  const double x_leave = lerp(a[ax], b[ax], t_leave);
  const double f1 = (x_enter - g.origin[ax]) / g.voxel_size[ax];
  const double f2 = (x_leave - g.origin[ax]) / g.voxel_size[ax];
  p.f_in = std::fmin(f1, f2);
  p.f_out = std::fmax(f1, f2);
  p.first = std::int64_t(std::floor(p.f_in)) + 1;
  p.last = std::int64_t(std::floor(p.f_out));
  const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const double cos_d = std::fabs(d[ax]) / len;
  p.step = g.voxel_size[ax] / cos_d;
  return p;
}

/// Calls `visit(voxel_index, weight)` for every (voxel, sampled plane) pair
/// of the LOR with a non-zero weight; weight = bilinear weight * step. The
/// forward value is sum(weight * image[voxel]); back projection adds
/// value * weight. Out-of-image neighbours are skipped (zero padding).
template <class Visit>
void for_each_weight(const grid &g, const vec3 &a, const vec3 &b, Visit &&visit) {
  const plan p = make_plan(g, a, b);
  if (p.num_planes() == 0)
    return;
  const int d = p.axis;
  const int u = d == 0 ? 1 : 0;
  const int v = d == 2 ? 1 : 2;
  const double dd = b[std::size_t(d)] - a[std::size_t(d)];
  for (std::int64_t plane = p.first; plane <= p.last; ++plane) {
    if (plane < 0 || plane >= g.shape[std::size_t(d)])
      continue; // cannot happen for a correct clip; zero padding anyway
    // Where the line crosses the centre plane `plane` of axis d.
    const double x_d =
        g.origin[std::size_t(d)] + double(plane) * g.voxel_size[std::size_t(d)];
    const double t = (x_d - a[std::size_t(d)]) / dd;
    const double x_u = a[std::size_t(u)] + t * (b[std::size_t(u)] - a[std::size_t(u)]);
    const double x_v = a[std::size_t(v)] + t * (b[std::size_t(v)] - a[std::size_t(v)]);
    const double fu = (x_u - g.origin[std::size_t(u)]) / g.voxel_size[std::size_t(u)];
    const double fv = (x_v - g.origin[std::size_t(v)]) / g.voxel_size[std::size_t(v)];
    const double iu0 = std::floor(fu), iv0 = std::floor(fv);
    const double wu[2] = {1.0 - (fu - iu0), fu - iu0};
    const double wv[2] = {1.0 - (fv - iv0), fv - iv0};
    for (int ju = 0; ju < 2; ++ju) {
      const std::int64_t iu = std::int64_t(iu0) + ju;
      if (iu < 0 || iu >= g.shape[std::size_t(u)])
        continue;
      for (int jv = 0; jv < 2; ++jv) {
        const std::int64_t iv = std::int64_t(iv0) + jv;
        if (iv < 0 || iv >= g.shape[std::size_t(v)])
          continue;
        const double w = wu[ju] * wv[jv];
        if (w == 0.0)
          continue;
        std::int64_t idx[3];
        idx[d] = plane;
        idx[u] = iu;
        idx[v] = iv;
        visit(g.index(idx[0], idx[1], idx[2]), w * p.step);
      }
    }
  }
}

/// Forward projection of one LOR.
template <class I>
double forward_lor(const grid &g, const I *image, const vec3 &a, const vec3 &b) {
  double acc = 0.0;
  for_each_weight(g, a, b,
                  [&](std::int64_t i, double w) { acc += w * double(image[i]); });
  return acc;
}

/// Forward projection of every LOR of `lors` (any element type).
template <class I, class L>
std::vector<double> forward(const grid &g, const I *image, const lor_set<L> &lors) {
  std::vector<double> out(lors.size());
  for (std::size_t i = 0; i < lors.size(); ++i)
    out[i] = forward_lor(g, image, lors.start(i), lors.end(i));
  return out;
}

/// Back projection of `values` (one per LOR) into a zeroed float64 image.
template <class L, class V>
std::vector<double> back(const grid &g, const lor_set<L> &lors, const V *values) {
  std::vector<double> image(std::size_t(g.num_voxels()), 0.0);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const double value = double(values[i]);
    for_each_weight(g, lors.start(i), lors.end(i), [&](std::int64_t j, double w) {
      image[std::size_t(j)] += value * w;
    });
  }
  return image;
}

/// Dense row of the system matrix for one LOR (length num_voxels).
inline std::vector<double> row(const grid &g, const vec3 &a, const vec3 &b) {
  std::vector<double> r(std::size_t(g.num_voxels()), 0.0);
  for_each_weight(g, a, b, [&](std::int64_t j, double w) { r[std::size_t(j)] += w; });
  return r;
}

/// Number of planes the spec samples for a LOR (0 if it misses the box or
/// has zero length).
inline std::int64_t num_sampled_planes(const grid &g, const vec3 &a, const vec3 &b) {
  return make_plan(g, a, b).num_planes();
}

} // namespace ref
} // namespace resproj_test
