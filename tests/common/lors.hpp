/// @file
/// @brief Seeded LOR generators for projector tests (standard library only,
/// usable from CPU and GPU tests).
///
/// Every generator works in double and rounds the end points to T once, so
/// a reference fed with the T values sees exactly what the projector sees.
/// Layout as the library's: starts/ends are `[x0 y0 z0 x1 y1 z1 ...]`.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/grid.hpp"
#include "common/random.hpp"

namespace resproj_test {

/// A set of LORs: 3 values per LOR in `starts` and in `ends`.
template <class T> struct lor_set {
  std::vector<T> starts;
  std::vector<T> ends;

  std::size_t size() const { return starts.size() / 3; }
  bool empty() const { return starts.empty(); }

  /// Appends the LOR a -> b, rounding to T.
  void push(const double a[3], const double b[3]) {
    for (int k = 0; k < 3; ++k) {
      starts.push_back(T(a[k]));
      ends.push_back(T(b[k]));
    }
  }
  void push(const std::array<double, 3> &a, const std::array<double, 3> &b) {
    push(a.data(), b.data());
  }
  void append(const lor_set &other) {
    starts.insert(starts.end(), other.starts.begin(), other.starts.end());
    ends.insert(ends.end(), other.ends.begin(), other.ends.end());
  }
  /// The same LORs in another type (exact when widening float -> double).
  template <class U> lor_set<U> cast() const {
    lor_set<U> r;
    r.starts.assign(starts.begin(), starts.end());
    r.ends.assign(ends.begin(), ends.end());
    return r;
  }
  /// End points of LOR i in double.
  std::array<double, 3> start(std::size_t i) const {
    return {double(starts[3 * i]), double(starts[3 * i + 1]), double(starts[3 * i + 2])};
  }
  std::array<double, 3> end(std::size_t i) const {
    return {double(ends[3 * i]), double(ends[3 * i + 1]), double(ends[3 * i + 2])};
  }
};

namespace detail {
/// Roots t0 <= t1 of |p + t u - c| = R for a unit vector u and |p - c| < R.
inline void sphere_roots(const double p[3], const double u[3], const double c[3],
                         double R, double &t0, double &t1) {
  double pu = 0, pp = 0;
  for (int k = 0; k < 3; ++k) {
    const double q = p[k] - c[k];
    pu += q * u[k];
    pp += q * q;
  }
  const double disc = std::sqrt(std::max(0.0, pu * pu - (pp - R * R)));
  t0 = -pu - disc;
  t1 = -pu + disc;
}
} // namespace detail

/// (a) `n` LORs with both end points outside the image box, on spheres
/// around the box centre of radius 1.1 .. 2 times the box half-diagonal
/// (start and end on different spheres, so the LOR midpoint is not the
/// centre). A fraction `through_box` of them is aimed through a uniformly
/// random point of the box (they all hit it); the others join two random
/// points of the spheres (many miss).
template <class T>
lor_set<T> outside_lors(const grid &g, std::size_t n, std::uint64_t seed,
                        double through_box = 0.8) {
  rng r(seed);
  lor_set<T> s;
  s.starts.reserve(3 * n);
  s.ends.reserve(3 * n);
  const double h = g.half_diagonal();
  const double c[3] = {g.centre(0), g.centre(1), g.centre(2)};
  for (std::size_t i = 0; i < n; ++i) {
    const double R0 = h * r.uniform(1.1, 2.0), R1 = h * r.uniform(1.1, 2.0);
    double a[3], b[3];
    if (r.uniform() < through_box) {
      double p[3], u[3];
      for (int k = 0; k < 3; ++k)
        p[k] = r.uniform(g.box_min(k), g.box_max(k));
      r.unit_vector(u);
      double t0, t1, tmp;
      detail::sphere_roots(p, u, c, R0, t0, tmp);
      detail::sphere_roots(p, u, c, R1, tmp, t1);
      for (int k = 0; k < 3; ++k) {
        a[k] = p[k] + t0 * u[k];
        b[k] = p[k] + t1 * u[k];
      }
    } else {
      double u[3], v[3];
      r.unit_vector(u);
      r.unit_vector(v);
      for (int k = 0; k < 3; ++k) {
        a[k] = c[k] + R0 * u[k];
        b[k] = c[k] + R1 * v[k];
      }
    }
    s.push(a, b);
  }
  return s;
}

/// (b) `n` LORs whose end points are uniform in the image box enlarged by
/// `margin` times its extent on every side: end points inside and outside
/// the image, short and long segments, some missing the box.
template <class T>
lor_set<T> anywhere_lors(const grid &g, std::size_t n, std::uint64_t seed,
                         double margin = 0.25) {
  rng r(seed);
  lor_set<T> s;
  s.starts.reserve(3 * n);
  s.ends.reserve(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    double a[3], b[3];
    for (int k = 0; k < 3; ++k) {
      const double lo = g.box_min(k) - margin * g.extent(k);
      const double hi = g.box_max(k) + margin * g.extent(k);
      a[k] = r.uniform(lo, hi);
      b[k] = r.uniform(lo, hi);
    }
    s.push(a, b);
  }
  return s;
}

/// A small cylindrical scanner around the image.
struct scanner_params {
  int detectors_per_ring = 64; ///< a multiple of 8 keeps the ring symmetric
  int rings = 8;
  /// Ring radius over the largest distance of a box corner from the
  /// scanner axis (the axis is the world axis `axial_axis` through 0).
  double radius_factor = 1.5;
  int axial_axis = 2;
  /// The rings span this fraction of the image's axial extent, centred on
  /// the image's axial centre.
  double axial_coverage = 1.0;
};

/// Detector centres of the scanner (x, y, z triplets, world coordinates).
/// The ring is built from one octant with exact symmetries (swaps and sign
/// changes), so LORs that are exactly diagonal in the transaxial plane are
/// exactly diagonal in every precision: |dx| == |dy| holds in float too.
inline std::vector<std::array<double, 3>>
scanner_detectors(const grid &g, const scanner_params &p = {}) {
  const int ax = p.axial_axis;
  const int t0 = ax == 0 ? 1 : 0, t1 = ax == 2 ? 1 : 2; // transaxial axes
  double corner = 0;
  for (int i = 0; i < 4; ++i) {
    const double x = (i & 1) ? g.box_max(t0) : g.box_min(t0);
    const double y = (i & 2) ? g.box_max(t1) : g.box_min(t1);
    corner = std::max(corner, std::sqrt(x * x + y * y));
  }
  const double R = p.radius_factor * corner;
  const int nd = p.detectors_per_ring;
  const double kPi = 3.14159265358979323846264338327950288;
  // Unit circle positions.
  std::vector<std::array<double, 2>> ring(static_cast<std::size_t>(nd));
  const bool symmetric = nd % 8 == 0;
  for (int i = 0; i < nd; ++i) {
    double c, s;
    if (!symmetric) {
      c = std::cos(2 * kPi * i / nd);
      s = std::sin(2 * kPi * i / nd);
    } else {
      const int quarter = nd / 4, eighth = nd / 8;
      const int q = i / quarter, j = i % quarter;
      if (j == eighth) {
        c = s = std::sqrt(0.5);
      } else if (j < eighth) {
        c = std::cos(2 * kPi * j / nd);
        s = std::sin(2 * kPi * j / nd);
      } else { // mirror of quarter - j across the diagonal
        c = std::sin(2 * kPi * (quarter - j) / nd);
        s = std::cos(2 * kPi * (quarter - j) / nd);
      }
      for (int k = 0; k < q; ++k) { // rotate by 90 degrees, exactly
        const double tmp = c;
        c = -s;
        s = tmp;
      }
    }
    ring[std::size_t(i)] = {R * c, R * s};
  }
  const double spacing = p.axial_coverage * g.extent(ax) / p.rings;
  std::vector<std::array<double, 3>> det;
  det.reserve(std::size_t(nd) * std::size_t(p.rings));
  for (int r = 0; r < p.rings; ++r) {
    const double z = g.centre(ax) + (r - 0.5 * (p.rings - 1)) * spacing;
    for (int i = 0; i < nd; ++i) {
      std::array<double, 3> x{};
      x[std::size_t(t0)] = ring[std::size_t(i)][0];
      x[std::size_t(t1)] = ring[std::size_t(i)][1];
      x[std::size_t(ax)] = z;
      det.push_back(x);
    }
  }
  return det;
}

/// (c) LORs of the scanner: with `n == 0` every pair of distinct detectors
/// (start = lower detector index); otherwise `n` random pairs of distinct
/// detectors in random orientation.
template <class T>
lor_set<T> scanner_lors(const grid &g, const scanner_params &p = {}, std::size_t n = 0,
                        std::uint64_t seed = 1) {
  const auto det = scanner_detectors(g, p);
  lor_set<T> s;
  const std::size_t nd = det.size();
  if (n == 0) {
    s.starts.reserve(3 * nd * (nd - 1) / 2);
    s.ends.reserve(3 * nd * (nd - 1) / 2);
    for (std::size_t i = 0; i < nd; ++i)
      for (std::size_t j = i + 1; j < nd; ++j)
        s.push(det[i], det[j]);
    return s;
  }
  rng r(seed);
  s.starts.reserve(3 * n);
  s.ends.reserve(3 * n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = std::size_t(r.below(nd));
    std::size_t j = std::size_t(r.below(nd - 1));
    if (j >= i)
      ++j;
    s.push(det[i], det[j]);
  }
  return s;
}

/// (d) Degenerate LORs for `g`: along each axis through voxel centres and
/// voxel edges, lying exactly on box faces and edges, just missing a face,
/// with end points on plane centres or exactly on a face, zero length
/// (inside, on a face, outside), exact principal-axis ties in every
/// combination, touching only a corner, and lying obliquely in a face.
/// The coordinates are exact in float when the grid's origin and voxel
/// sizes are (dyadic numbers of modest size).
template <class T> lor_set<T> degenerate_lors(const grid &g) {
  lor_set<T> s;
  using pt = std::array<double, 3>;
  const pt lo = {g.box_min(0), g.box_min(1), g.box_min(2)};
  const pt hi = {g.box_max(0), g.box_max(1), g.box_max(2)};
  const pt c = {g.centre(0), g.centre(1), g.centre(2)};
  // A power of two at least the half-diagonal: c +- L stays exact.
  const double L = std::exp2(std::ceil(std::log2(g.half_diagonal())) + 1);
  auto push_both = [&](const pt &a, const pt &b) {
    s.push(a, b);
    s.push(b, a);
  };
  for (int d = 0; d < 3; ++d) {
    const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
    auto along = [&](double xu, double xv) {
      pt a{}, b{};
      a[d] = lo[d] - 0.5 * g.extent(d) - 0.25 * g.voxel_size[d];
      b[d] = hi[d] + 0.25 * g.extent(d);
      a[u] = b[u] = xu;
      a[v] = b[v] = xv;
      push_both(a, b);
    };
    const double mu = double(g.shape[u] / 2), mv = double(g.shape[v] / 2);
    along(g.plane_centre(u, mu), g.plane_centre(v, mv));             // voxel centres
    along(g.plane_centre(u, mu - 0.5), g.plane_centre(v, mv + 0.5)); // edges
    along(g.plane_centre(u, 0), g.plane_centre(v, double(g.shape[v] - 1)));
    along(lo[u], g.plane_centre(v, mv)); // on faces
    along(hi[u], g.plane_centre(v, mv));
    along(g.plane_centre(u, mu), lo[v]);
    along(g.plane_centre(u, mu), hi[v]);
    along(lo[u], hi[v]); // on box edges
    along(hi[u], lo[v]);
    along(lo[u] - 0.125 * g.voxel_size[u], g.plane_centre(v, mv)); // misses
    along(g.plane_centre(u, mu), hi[v] + 0.125 * g.voxel_size[v]);
    // End points on plane centres and on faces, along d.
    pt a = {c[0], c[1], c[2]}, b = a;
    if (g.shape[d] >= 3) {
      a[d] = g.plane_centre(d, 1);
      b[d] = g.plane_centre(d, double(g.shape[d] - 2));
      push_both(a, b);
      b[d] = hi[d] + 0.5 * g.voxel_size[d];
      push_both(a, b);
    }
    a[d] = lo[d] - g.voxel_size[d];
    b[d] = hi[d]; // ends exactly on the face
    push_both(a, b);
    b[d] = lo[d]; // ends exactly on the near face: touches it only
    push_both(a, b);
    // Lying obliquely in the face perpendicular to d.
    a = c;
    b = c;
    a[d] = b[d] = lo[d];
    a[u] = c[u] - L;
    b[u] = c[u] + L;
    a[v] = c[v] - 0.5 * L;
    b[v] = c[v] + 0.5 * L;
    push_both(a, b);
  }
  // Zero length.
  s.push(c, c);
  s.push(lo, lo);
  s.push(hi, hi);
  const pt face = {lo[0], c[1], c[2]};
  s.push(face, face);
  const pt out = {hi[0] + L, c[1], c[2]};
  s.push(out, out);
  // Exact principal-axis ties through the centre (and shifted off it).
  const int dirs[][3] = {{1, 1, 0},  {1, -1, 0}, {0, 1, 1},  {0, 1, -1}, {1, 0, 1},
                         {-1, 0, 1}, {1, 1, 1},  {1, -1, 1}, {-1, 1, 1}, {1, 1, -1},
                         {2, 2, 1},  {1, 2, 2},  {2, 1, 2}};
  for (const auto &dir : dirs) {
    for (int shift = 0; shift < 2; ++shift) {
      pt a{}, b{};
      for (int k = 0; k < 3; ++k) {
        const double off = shift ? 0.25 * g.voxel_size[k] : 0.0;
        a[k] = c[k] + off - L * dir[k];
        b[k] = c[k] + off + L * dir[k];
      }
      push_both(a, b);
    }
  }
  // End points exactly on plane centres, reached from start points that
  // are not short binary fractions: a + (b - a) != b for some of them in
  // float, so a projector that recomputes b from a and b - a samples the
  // plane of b by chance (spec: floor(f_out) samples it, floor(f_in) + 1
  // does not).
  {
    rng r(0x5EED);
    for (int d = 0; d < 3; ++d) {
      for (int i = 0; i < 16; ++i) {
        pt a{}, b = c;
        b[d] = g.plane_centre(d, double(r.below(std::uint64_t(g.shape[d]))));
        const double sign = r.uniform() < 0.5 ? -1.0 : 1.0;
        const double along = sign * r.uniform(0.3, 1.2) * g.extent(d);
        for (int k = 0; k < 3; ++k)
          a[k] = k == d ? b[k] + along : c[k] + 0.4 * std::fabs(along) * r.uniform(-1, 1);
        push_both(a, b);
      }
    }
  }
  // Touching only a corner.
  {
    pt a{}, b = lo;
    for (int k = 0; k < 3; ++k)
      a[k] = lo[k] - L;
    push_both(a, b);
  }
  return s;
}

} // namespace resproj_test
