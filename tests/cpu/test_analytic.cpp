// Analytic checks of the CPU projector (docs/projection.md): uniform images
// of value 1 on anisotropic, non-cubic grids, where every expected value is
// derived by hand from the spec: the plane rule
// floor(f_in) + 1 <= p <= floor(f_out), the step s_d / |cos theta_d|, edge
// effects of lateral faces, the principal-axis tie rule, back projection
// along an axis and single-voxel images. Chord lengths, box faces and
// edges, misses and zero length are checked for every executor by the
// contract suite (tests/contract).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "resproj/cpu/projector.hpp"

namespace rt = resproj_test;
using vec3 = std::array<double, 3>;

namespace {

template <class T> class Analytic : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Analytic, value_types);

/// Relative tolerance of a value computed by the projector in T.
template <class T> double rel_tol() {
  return std::is_same<T, float>::value ? 2e-6 : 1e-13;
}

/// 6 x 5 x 4 voxels of 2 x 1 x 4, box [-5,7] x [2,7] x [8,24] (off-centre).
rt::grid main_grid() {
  rt::grid g;
  g.shape = {6, 5, 4};
  g.voxel_size = {2.0, 1.0, 4.0};
  g.origin = {-4.0, 2.5, 10.0};
  return g;
}

/// World point of fractional voxel index (f0, f1, f2).
vec3 at(const rt::grid &g, double f0, double f1, double f2) {
  return {g.origin[0] + f0 * g.voxel_size[0], g.origin[1] + f1 * g.voxel_size[1],
          g.origin[2] + f2 * g.voxel_size[2]};
}

/// Point with fractional index f_d along d, f_u / f_v along the other two.
vec3 at_axis(const rt::grid &g, int d, double fd, double fu, double fv) {
  const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
  double f[3];
  f[d] = fd;
  f[u] = fu;
  f[v] = fv;
  return at(g, f[0], f[1], f[2]);
}

template <class T> std::vector<T> uniform_image(const rt::grid &g, T value = T(1)) {
  return std::vector<T>(std::size_t(g.num_voxels()), value);
}

/// Forward projections of a set of LORs.
template <class T>
std::vector<T> project(const rt::grid &g, const std::vector<T> &image,
                       const rt::lor_set<T> &lors) {
  std::vector<T> out(lors.size(), T(-12345));
  // A handful of LORs: one thread (an OpenMP team would only wait).
  resproj::cpu::options opt;
  opt.num_threads = lors.size() < 1000 ? 1 : 0;
  resproj::cpu::forward(resproj::op::non_tof{}, rt::cimage_of(image, g),
                        rt::view_of(lors), rt::span_of(out), opt);
  return out;
}

/// Forward projection of one LOR a -> b (rounded to T) through a uniform
/// image of value 1.
template <class T> T project_one(const rt::grid &g, const vec3 &a, const vec3 &b) {
  rt::lor_set<T> s;
  s.push(a, b);
  return project(g, uniform_image<T>(g), s)[0];
}

/// |b - a| / |b_d - a_d| of the LOR as the projector sees it (rounded to T).
template <class T> double inv_cos(const vec3 &a, const vec3 &b, int d) {
  double l2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double dk = double(T(b[k])) - double(T(a[k]));
    l2 += dk * dk;
  }
  return std::sqrt(l2) / std::fabs(double(T(b[d])) - double(T(a[d])));
}

/// Plane-unit coordinate along d of a point rounded to T.
template <class T> double f_of(const rt::grid &g, const vec3 &x, int d) {
  return (double(T(x[d])) - g.origin[d]) / g.voxel_size[d];
}

/// Number of planes the spec samples between plane coordinates f1 and f2
/// along an axis of n planes, for a segment clipped by the faces of that
/// axis only: floor(f_out) - floor(f_in) after clipping to [-0.5, n - 0.5].
std::int64_t spec_planes(double f1, double f2, std::int64_t n) {
  const double lo = std::fmax(std::fmin(f1, f2), -0.5);
  const double hi = std::fmin(std::fmax(f1, f2), double(n) - 0.5);
  if (lo > hi)
    return 0;
  return std::int64_t(std::floor(hi)) - std::int64_t(std::floor(lo));
}

#define EXPECT_REL(value, expected, tol)                                                 \
  EXPECT_NEAR(double(value), double(expected), (tol)*std::fabs(double(expected)))

// Random oblique LORs (principal axis d, lateral interpolation inside the
// image over the whole box), ends anywhere along d, inside or outside the
// image: value = (planes by the plane rule) * s_d / |cos theta_d|. This is
// not the exact chord when an end is inside.
TYPED_TEST(Analytic, RandomObliqueLorsFollowThePlaneRule) {
  using T = TypeParam;
  const rt::grid grids[] = {main_grid(), rt::grid::centred({9, 4, 7}, {1.5, 2.5, 1.0})};
  rt::rng r(2024);
  int checked = 0, with_end_inside = 0;
  for (const auto &g : grids) {
    rt::lor_set<T> lors;
    std::vector<double> expected;
    for (int i = 0; i < 3000; ++i) {
      const int d = int(r.below(3)), u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
      const double nd = double(g.shape[d]), nu = double(g.shape[u]),
                   nv = double(g.shape[v]);
      // World slopes below 1 keep d principal; index slopes from them.
      const double ku = r.uniform(-0.9, 0.9) * g.voxel_size[d] / g.voxel_size[u];
      const double kv = r.uniform(-0.9, 0.9) * g.voxel_size[d] / g.voxel_size[v];
      const double u0 = r.uniform(0, nu - 1), v0 = r.uniform(0, nv - 1);
      auto fu = [&](double fd) { return u0 + ku * (fd + 0.5); };
      auto fv = [&](double fd) { return v0 + kv * (fd + 0.5); };
      auto inside = [&](double x, double n) { return x >= 1e-3 && x <= n - 1 - 1e-3; };
      if (!inside(fu(nd - 0.5), nu) || !inside(fv(nd - 0.5), nv))
        continue;
      const double f1 = r.uniform(-3, nd + 2), f2 = r.uniform(-3, nd + 2);
      const vec3 a = at_axis(g, d, f1, fu(f1), fv(f1)),
                 b = at_axis(g, d, f2, fu(f2), fv(f2));
      const double g1 = f_of<T>(g, a, d), g2 = f_of<T>(g, b, d);
      // Stay clear of exact plane centres: there float may decide either way.
      if (std::fabs(g1 - std::round(g1)) < 1e-4 ||
          std::fabs(g2 - std::round(g2)) < 1e-4 || std::fabs(g1 - g2) < 1e-3)
        continue;
      lors.push(a, b);
      expected.push_back(double(spec_planes(g1, g2, g.shape[d])) * g.voxel_size[d] *
                         inv_cos<T>(a, b, d));
      if ((g1 > -0.5 && g1 < nd - 0.5) || (g2 > -0.5 && g2 < nd - 0.5))
        ++with_end_inside;
    }
    const auto out = project(g, uniform_image<T>(g), lors);
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const auto a = lors.start(i), b = lors.end(i);
      EXPECT_NEAR(double(out[i]), expected[i],
                  rel_tol<T>() * 4 * std::fmax(expected[i], 1.0))
          << "LOR " << i << " (" << a[0] << ", " << a[1] << ", " << a[2] << ") -> ("
          << b[0] << ", " << b[1] << ", " << b[2] << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(with_end_inside, 500);
}

// Start or end inside the image: the plane rule, not the chord.
TYPED_TEST(Analytic, EndPointsInsideCountSampledPlanes) {
  using T = TypeParam;
  const rt::grid g = main_grid(); // axis 0: 6 planes of 2
  // Along axis 0 at a voxel centre: start at f = 1.3, end outside: planes
  // 2..5 = 4 planes * 2 (the chord would be (5.5 - 1.3) * 2 = 8.4).
  EXPECT_REL(project_one<T>(g, at(g, 1.3, 2, 1), at(g, 9, 2, 1)), 4 * 2.0, rel_tol<T>());
  EXPECT_REL(project_one<T>(g, at(g, 9, 2, 1), at(g, 1.3, 2, 1)), 4 * 2.0, rel_tol<T>());
  // Both inside, f from 0.6 to 4.2: planes 1..4.
  EXPECT_REL(project_one<T>(g, at(g, 0.6, 2, 1), at(g, 4.2, 2, 1)), 4 * 2.0,
             rel_tol<T>());
  // Both inside, f from 2.1 to 2.9: no plane, exactly 0.
  EXPECT_EQ(project_one<T>(g, at(g, 2.1, 2, 1), at(g, 2.9, 2, 1)), T(0));
  // Both inside, f from 2.9 to 3.1: plane 3 only.
  EXPECT_REL(project_one<T>(g, at(g, 2.9, 2, 1), at(g, 3.1, 2, 1)), 2.0, rel_tol<T>());
  // Oblique, principal axis 2 (4 planes of 4 mm), from f2 = 0.7 to 2.6
  // (planes 1, 2), moving 1 voxel in axis 0 and 1.5 in axis 1 per plane.
  {
    const vec3 a = at(g, 1.0, 1.0, 0.7), b = at(g, 1.0 + 1.9, 1.0 + 1.5 * 1.9, 2.6);
    EXPECT_REL(project_one<T>(g, a, b), 2 * 4.0 * inv_cos<T>(a, b, 2), rel_tol<T>());
  }
}

// A sample exactly on an end point: with f_in an integer the plane is not
// sampled (floor(f_in) + 1), with f_out an integer it is (floor(f_out)).
// Randomised over start points that are not exact, so a + (b - a) != b in
// T: the exit plane must come from b itself.
TYPED_TEST(Analytic, EndPointOnAPlaneCentre) {
  using T = TypeParam;
  const rt::grid g = main_grid();
  // Axis 0 from plane centre 1 to plane centre 4: planes 2, 3, 4.
  EXPECT_REL(project_one<T>(g, at(g, 1, 2, 1), at(g, 4, 2, 1)), 3 * 2.0, rel_tol<T>());
  EXPECT_REL(project_one<T>(g, at(g, 4, 2, 1), at(g, 1, 2, 1)), 3 * 2.0, rel_tol<T>());
  // From plane centre 3 to outside: planes 4, 5.
  EXPECT_REL(project_one<T>(g, at(g, 3, 2, 1), at(g, 8, 2, 1)), 2 * 2.0, rel_tol<T>());
  // From plane centre 3 down to outside: sorted, f_in = -0.5 (the face) and
  // f_out = 3, so plane 3 is sampled here: planes 0..3. The rule is on the
  // sorted coordinates, not on which end is the start.
  EXPECT_REL(project_one<T>(g, at(g, 3, 2, 1), at(g, -8, 2, 1)), 4 * 2.0, rel_tol<T>());
  // Between neighbouring plane centres: exactly one plane.
  EXPECT_REL(project_one<T>(g, at(g, 2, 2, 1), at(g, 3, 2, 1)), 2.0, rel_tol<T>());
  // Same plane centre at both ends of an LOR across axis 1: no plane of 0.
  // (principal axis is then 1 or 2; use a LOR along axis 0 of zero extent
  // in 0 instead: it has principal axis 1, 5 planes of 1.)
  EXPECT_REL(project_one<T>(g, at(g, 2, -1, 1), at(g, 2, 6, 1)), 5 * 1.0, rel_tol<T>());

  // Randomised: end (or start) exactly on plane centre m of axis d, the
  // other end anywhere along d, lateral inside; with the plane rule.
  rt::rng r(77);
  int n = 0;
  rt::lor_set<T> lors;
  std::vector<double> expected;
  for (int i = 0; i < 4000; ++i) {
    const int d = int(r.below(3));
    const std::int64_t nd = g.shape[d];
    const double m = double(r.below(std::uint64_t(nd)));
    double f_other = r.uniform(-4, double(nd) + 3);
    if (std::fabs(f_other - m) < 0.5)
      continue;
    const vec3 on = at_axis(g, d, m, 1.0, 1.0);
    // Lateral slope small enough to stay inside: move 0.1 index per plane.
    const double k = 0.1 * (r.uniform() < 0.5 ? -1 : 1);
    const vec3 other =
        at_axis(g, d, f_other, 1.0 + k * (f_other - m), 1.0 - k * (f_other - m));
    const bool end_on_centre = r.uniform() < 0.5;
    const vec3 a = end_on_centre ? other : on, b = end_on_centre ? on : other;
    const double fa = f_of<T>(g, a, d), fb = f_of<T>(g, b, d);
    if (std::fabs(fa - std::round(fa)) < 1e-5 && !(a == on))
      continue;
    if (std::fabs(fb - std::round(fb)) < 1e-5 && !(b == on))
      continue;
    lors.push(a, b);
    expected.push_back(double(spec_planes(fa, fb, nd)) * g.voxel_size[d] *
                       inv_cos<T>(a, b, d));
    ++n;
  }
  const auto out = project(g, uniform_image<T>(g), lors);
  int wrong = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    if (std::fabs(double(out[i]) - expected[i]) >
        rel_tol<T>() * 4 * std::fmax(expected[i], 1.0)) {
      if (++wrong <= 5) {
        const auto a = lors.start(i), b = lors.end(i);
        ADD_FAILURE() << "LOR (" << a[0] << ", " << a[1] << ", " << a[2] << ") -> ("
                      << b[0] << ", " << b[1] << ", " << b[2] << "): " << out[i]
                      << ", expected " << expected[i];
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << n << " LORs with an end point on a plane centre";
  EXPECT_GT(n, 3000);
}

// Entering through a lateral face (clipped): the samples near the entry
// interpolate with zero outside, so the value is below the chord by the
// half-voxel edge effect, by a hand-computed amount.
TYPED_TEST(Analytic, ClippedByALateralFace) {
  using T = TypeParam;
  rt::grid g;
  g.shape = {10, 4, 3};
  g.voxel_size = {2.0, 1.0, 4.0};
  g.origin = {0.0, 0.0, 0.0};
  // Index line u(p) = -1.1 + 0.25 p on axis 1, v = 1, principal axis 0:
  // enters at u = -0.5 (p = 2.4), leaves through the face p = 9.5. Planes
  // 3..9: in-image weights 0.65 (u = -0.35), 0.9 (u = -0.1), then 1 x 5.
  // Step: 2 * sqrt(1 + (0.25 / 2)^2) = sqrt(4.0625).
  const vec3 a = {-5.0, -1.1 + 0.125 * -5.0, 4.0};
  const vec3 b = {25.0, -1.1 + 0.125 * 25.0, 4.0};
  const double step = std::sqrt(4.0625);
  const double expected = (0.65 + 0.9 + 5.0) * step;
  const double chord = (9.5 - 2.4) * step;
  EXPECT_GT(std::fabs(chord - expected), 0.1); // the edge effect is visible
  const double tol = 10 * rel_tol<T>();
  EXPECT_REL(project_one<T>(g, a, b), expected, tol);
  EXPECT_REL(project_one<T>(g, b, a), expected, tol);
}

// Principal axis ties: |d_1| == |d_0| -> axis 1, |d_1| == |d_2| -> 1,
// |d_0| == |d_2| -> 2, all three equal -> 1. On an anisotropic grid with
// both ends inside, sampling along the other axis would give another value
// (checked, so the test has teeth).
TYPED_TEST(Analytic, PrincipalAxisTieRule) {
  using T = TypeParam;
  rt::grid g;
  g.shape = {12, 16, 8};
  g.voxel_size = {2.0, 1.0, 4.0};
  g.origin = {-11.0, -7.5, -14.0};
  struct {
    int dir[3];
    int winner;
  } cases[] = {{{1, 1, 0}, 1}, {{1, -1, 0}, 1}, {{0, 1, 1}, 1}, {{0, -1, 1}, 1},
               {{1, 0, 1}, 2}, {{-1, 0, 1}, 2}, {{1, 1, 1}, 1}, {{1, -1, -1}, 1}};
  const vec3 centres[] = {{0.3125, 0.1875, 0.625}, {-1.75, 0.5625, -2.25}};
  for (const auto &tc : cases) {
    int with_teeth = 0;
    for (int i = 0; i < 30; ++i) {
      const vec3 &c = centres[i % 2];
      const double h = 0.75 + 0.25 * double(i); // 0.75 .. 8
      vec3 a, b;
      for (int k = 0; k < 3; ++k) {
        a[k] = c[k] - h * tc.dir[k];
        b[k] = c[k] + h * tc.dir[k];
      }
      auto value_along = [&](int d) {
        return double(spec_planes(f_of<T>(g, a, d), f_of<T>(g, b, d), g.shape[d])) *
               g.voxel_size[d] * inv_cos<T>(a, b, d);
      };
      const double expected = value_along(tc.winner);
      bool differs = true;
      for (int other = 0; other < 3; ++other)
        if (other != tc.winner && tc.dir[other] != 0)
          differs = differs && std::fabs(value_along(other) - expected) > 0.05 * expected;
      with_teeth += differs ? 1 : 0;
      SCOPED_TRACE("direction (" + std::to_string(tc.dir[0]) + ", " +
                   std::to_string(tc.dir[1]) + ", " + std::to_string(tc.dir[2]) +
                   "), half-length " + std::to_string(h));
      EXPECT_REL(project_one<T>(g, a, b), expected, rel_tol<T>());
      EXPECT_REL(project_one<T>(g, b, a), expected, rel_tol<T>());
    }
    // Test set-up: sampling along any other tied axis must change the value
    // for several of the segments, or the case would prove nothing.
    EXPECT_GE(with_teeth, 4) << "direction (" << tc.dir[0] << ", " << tc.dir[1] << ", "
                             << tc.dir[2] << ")";
  }
}

// Back projection of value w along an axis through voxel centres adds
// w * s_d to every voxel of that row and nothing elsewhere; on a face it
// adds w * s_d / 2 to the boundary row; at a voxel edge half to each of
// two rows.
TYPED_TEST(Analytic, BackProjectionAlongAnAxis) {
  using T = TypeParam;
  const rt::grid g = main_grid();
  const T w = T(1.5);
  for (int d = 0; d < 3; ++d) {
    const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
    struct {
      double fu, fv;
      std::int64_t iu[2], iv;
      double weight[2];
    } cases[] = {{1, 2, {1, -1}, 2, {1, 0}},
                 {-0.5, 1, {0, -1}, 1, {0.5, 0}},
                 {2.5, 0, {2, 3}, 0, {0.5, 0.5}}};
    for (const auto &c : cases) {
      rt::lor_set<T> lors;
      lors.push(at_axis(g, d, -2, c.fu, c.fv),
                at_axis(g, d, double(g.shape[d]) + 1, c.fu, c.fv));
      std::vector<T> image(std::size_t(g.num_voxels()), T(0));
      const std::vector<T> values = {w};
      resproj::cpu::back(
          resproj::op::non_tof{}, rt::image_of(image, g), rt::view_of(lors),
          rt::cspan_of(values),
          resproj::cpu::options{resproj::cpu::back_accumulation::atomic, 1});
      std::vector<double> expected(image.size(), 0.0);
      for (std::int64_t p = 0; p < g.shape[d]; ++p)
        for (int j = 0; j < 2; ++j) {
          if (c.iu[j] < 0)
            continue;
          std::int64_t idx[3];
          idx[d] = p;
          idx[u] = c.iu[j];
          idx[v] = c.iv;
          expected[std::size_t(g.index(idx[0], idx[1], idx[2]))] +=
              double(w) * c.weight[j] * g.voxel_size[d];
        }
      for (std::size_t i = 0; i < image.size(); ++i)
        EXPECT_NEAR(double(image[i]), expected[i], rel_tol<T>() * 8)
            << "axis " << d << " voxel " << i << " (lateral " << c.fu << ", " << c.fv
            << ")";
    }
  }
}

// A 1 x 1 x 1 image and 1-voxel-thick images behave like the others.
TYPED_TEST(Analytic, SingleVoxelAndThinImages) {
  using T = TypeParam;
  rt::grid one;
  one.shape = {1, 1, 1};
  one.voxel_size = {2.0, 3.0, 0.5};
  one.origin = {1.0, 1.5, -0.25};
  // Along each axis through the centre: the voxel edge along that axis.
  for (int d = 0; d < 3; ++d) {
    const vec3 a = at_axis(one, d, -4, 0, 0), b = at_axis(one, d, 5, 0, 0);
    EXPECT_REL(project_one<T>(one, a, b), one.voxel_size[d], rel_tol<T>())
        << "axis " << d;
  }
  // Off-centre along axis 2, a quarter voxel from the centre in axis 0:
  // weight 0.75.
  EXPECT_REL(project_one<T>(one, at(one, 0.25, 0, -3), at(one, 0.25, 0, 3)), 0.75 * 0.5,
             rel_tol<T>());
  // Thin image (axis 2 is one voxel): an oblique LOR in the plane of the
  // slice with principal axis 0, lateral axis 1 inside.
  rt::grid thin = rt::grid::centred({8, 6, 1}, {1.0, 1.0, 3.0});
  const vec3 a = at(thin, -2.0, 1.0, 0.0), b = at(thin, 10.0, 4.0, 0.0);
  EXPECT_REL(project_one<T>(thin, a, b), 8.0 * inv_cos<T>(a, b, 0), rel_tol<T>());
  // The same LOR lifted a quarter of the slice out of the plane: 0.75 of it.
  const vec3 a2 = at(thin, -2.0, 1.0, 0.25), b2 = at(thin, 10.0, 4.0, 0.25);
  EXPECT_REL(project_one<T>(thin, a2, b2), 0.75 * 8.0 * inv_cos<T>(a2, b2, 0),
             rel_tol<T>());
  // Through the slice along axis 2: s_2 times the bilinear weight (1 here).
  EXPECT_REL(project_one<T>(thin, at(thin, 3, 2, -5), at(thin, 3, 2, 5)), 3.0,
             rel_tol<T>());
}

} // namespace
