// The shared per-LOR math (resproj::math, used by every backend) against
// the independent float64 reference of tests/common/reference.hpp: the
// discrete decisions (principal axis with its tie rule, plane range) and
// the step, plus memory safety of the bilinear stencil for any LOR.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

template <class T> class JosephMath : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(JosephMath, value_types);

template <class T> math::image_grid<T> grid_of(const rt::grid &g) {
  return math::image_grid<T>::from(rt::geometry_of(g));
}

TYPED_TEST(JosephMath, PrincipalAxisTieRule) {
  using T = TypeParam;
  struct {
    double d[3];
    int axis;
  } cases[] = {
      {{3, 1, 2}, 0},    {{1, 3, 2}, 1},    {{1, 2, 3}, 2},     {{-3, 1, 2}, 0},
      {{1, -3, 2}, 1},   {{1, 2, -3}, 2},   {{1, 1, 0}, 1},     {{-1, 1, 0}, 1},
      {{1, -1, 0}, 1},   {{0, 1, 1}, 1},    {{0, -1, 1}, 1},    {{1, 0, 1}, 2},
      {{1, 0, -1}, 2},   {{-1, 0, 1}, 2},   {{1, 1, 1}, 1},     {{-1, -1, -1}, 1},
      {{2, 2, 1}, 1},    {{1, 2, 2}, 1},    {{2, 1, 2}, 2},     {{0, 0, 0}, 1},
      {{-0.0, 0, 0}, 1}, {{0, 0, -0.0}, 1}, {{1e-30, 0, 0}, 0}, {{0, 0, 1e-30}, 2},
  };
  for (const auto &c : cases) {
    const T d[3] = {T(c.d[0]), T(c.d[1]), T(c.d[2])};
    EXPECT_EQ(math::principal_axis(d), c.axis)
        << c.d[0] << ", " << c.d[1] << ", " << c.d[2];
    EXPECT_EQ(rt::ref::principal_axis({c.d[0], c.d[1], c.d[2]}), c.axis) << "reference";
  }
}

TYPED_TEST(JosephMath, MultiplyIsCorrectlyRoundedAndNotFused) {
  using T = TypeParam;
  rt::rng r(3);
  for (int i = 0; i < 10000; ++i) {
    const T a = T(r.uniform(-1e3, 1e3)), b = T(r.uniform(-1e3, 1e3)),
            c = T(r.uniform(-1, 1));
    volatile T prod = a * b; // volatile: rounded on its own
    EXPECT_EQ(math::mul_no_contract(a, b), T(prod));
    const T fused_free = math::mul_no_contract(a, b) + c;
    volatile T sum = T(prod) + c;
    EXPECT_EQ(fused_free, T(sum));
  }
}

/// Decisions of the library's ray vs the reference plan for every LOR:
/// returns the number of LORs whose sampled planes or axis differ.
template <class T>
std::size_t decision_mismatches(const rt::grid &g, const rt::lor_set<T> &lors,
                                bool verbose) {
  const auto grid = grid_of<T>(g);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const auto a = lors.start(i), b = lors.end(i);
    const T ta[3] = {T(a[0]), T(a[1]), T(a[2])}, tb[3] = {T(b[0]), T(b[1]), T(b[2])};
    const auto ray = math::make_joseph_ray(grid, ta, tb);
    const auto plan = rt::ref::make_plan(g, a, b);
    bool same = ray.num_planes() == plan.num_planes();
    if (same && plan.num_planes() > 0) {
      same = ray.axis == plan.axis && ray.first_plane == plan.first &&
             ray.last_plane == plan.last;
      // Same decisions: the step agrees to rounding.
      EXPECT_NEAR(double(ray.step), plan.step,
                  plan.step * (sizeof(T) == 4 ? 1e-6 : 1e-14))
          << "LOR " << i;
    }
    if (!same) {
      ++mismatches;
      if (verbose && mismatches <= 5)
        ADD_FAILURE() << "LOR " << i << " (" << a[0] << ", " << a[1] << ", " << a[2]
                      << ") -> (" << b[0] << ", " << b[1] << ", " << b[2] << "): axis "
                      << ray.axis << " planes " << ray.first_plane << ".."
                      << ray.last_plane << ", reference axis " << plan.axis << " planes "
                      << plan.first << ".." << plan.last;
    }
  }
  return mismatches;
}

// Random LORs: the float decisions may differ from float64 decisions on at
// most 1e-4 of the LORs; double ones on none in practice.
TYPED_TEST(JosephMath, DecisionsAgreeWithTheReference) {
  using T = TypeParam;
  const rt::grid grids[] = {
      rt::grid::centred({24, 20, 12}, {2.0, 1.0, 4.0}),
      rt::grid::centred({17, 23, 9}, {2.34, 1.7, 3.1}, {1.1, -2.3, 0.7})};
  for (const auto &g : grids) {
    auto lors = rt::outside_lors<T>(g, 20000, 1);
    lors.append(rt::anywhere_lors<T>(g, 20000, 2));
    lors.append(rt::scanner_lors<T>(g, {}, 20000, 3));
    const std::size_t m = decision_mismatches(g, lors, false);
    EXPECT_LE(m, rt::allowed_flips(lors.size())) << m << " of " << lors.size();
  }
}

// Degenerate LORs on grids exact in float: identical decisions.
TYPED_TEST(JosephMath, DegenerateDecisionsAreIdentical) {
  using T = TypeParam;
  const rt::grid grids[] = {
      rt::grid::centred({6, 5, 4}, {2.0, 1.0, 4.0}),
      rt::grid::centred({7, 1, 3}, {0.5, 2.0, 1.0}, {1.0, -2.0, 8.0}),
      rt::grid::centred({1, 1, 1}, {1.0, 1.0, 1.0})};
  for (const auto &g : grids)
    EXPECT_EQ(decision_mismatches(g, rt::degenerate_lors<T>(g), true), 0u);
}

// Whatever the LOR (far away, huge, tiny, grazing), the sampled planes are
// inside the image and every stencil entry with a non-zero weight points
// inside it, with weights in [0, 1] summing to at most 1.
TYPED_TEST(JosephMath, StencilNeverLeavesTheImage) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({9, 7, 5}, {2.0, 1.0, 3.0}, {0.5, 0.25, -1});
  const auto grid = grid_of<T>(g);
  auto lors = rt::anywhere_lors<T>(g, 20000, 5, 0.05); // many end points near faces
  lors.append(rt::outside_lors<T>(g, 5000, 6));
  lors.append(rt::degenerate_lors<T>(g));
  rt::rng r(7);
  for (int i = 0; i < 2000; ++i) { // far-away end points
    double a[3], b[3];
    for (int k = 0; k < 3; ++k) {
      a[k] = g.centre(k) + r.uniform(-1, 1) * (i % 2 ? 1e6 : 1e3);
      b[k] = g.centre(k) + r.uniform(-1, 1) * g.extent(k);
    }
    lors.push(a, b);
  }
  const std::int64_t nv = g.num_voxels();
  std::size_t sampled = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const auto a = lors.start(i), b = lors.end(i);
    const T ta[3] = {T(a[0]), T(a[1]), T(a[2])}, tb[3] = {T(b[0]), T(b[1]), T(b[2])};
    const auto ray = math::make_joseph_ray(grid, ta, tb);
    if (ray.empty())
      continue;
    ASSERT_GE(ray.first_plane, 0) << "LOR " << i;
    ASSERT_LT(ray.last_plane, g.shape[std::size_t(ray.axis)]) << "LOR " << i;
    for (std::int64_t p = ray.first_plane; p <= ray.last_plane; ++p) {
      const auto s = math::stencil_at(ray, p);
      T total = 0;
      for (int j = 0; j < 4; ++j) {
        ASSERT_GE(s.weight[j], T(0)) << "LOR " << i;
        ASSERT_LE(s.weight[j], T(1)) << "LOR " << i;
        if (s.weight[j] != T(0)) {
          ASSERT_GE(s.offset[j], 0) << "LOR " << i << " plane " << p;
          ASSERT_LT(s.offset[j], nv) << "LOR " << i << " plane " << p;
        }
        total += s.weight[j];
      }
      ASSERT_LE(double(total), 1.0 + 1e-6) << "LOR " << i;
      ++sampled;
    }
  }
  EXPECT_GT(sampled, 50000u);
}

// End points with a non-finite coordinate (NaN, +-inf, in any subset of the
// six) give an empty ray, so every projection of the LOR is exactly 0 and
// no float-to-integer conversion sees a non-finite value; so do end points
// whose difference b - a overflows T (docs/projection.md, "LORs that
// contribute nothing").
TYPED_TEST(JosephMath, NonFiniteEndPointsGiveAnEmptyRay) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({9, 7, 5}, {2.0, 1.0, 3.0});
  const auto grid = grid_of<T>(g);
  const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 4, 0.5, 1.5);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const T big = std::numeric_limits<T>::max();
  const T bases[][6] = {
      {-40, -1.3f, 2.1f, 40, 0.7f, -1.9f}, {1.1f, -30, -2.2f, -0.6f, 30, 3.4f},
      {-2.5f, 0.9f, -40, 3.1f, -1.2f, 40}, {-20, -18, -15, 21, 17, 16},
      {-3, 0.5f, 1, 3, 0.5f, 1}, // b - a along axis 0 only
  };
  std::size_t checked = 0;
  for (const auto &base : bases) {
    ASSERT_FALSE(math::make_joseph_ray(grid, base, base + 3).empty());
    auto expect_empty = [&](const T e[6], const std::string &what) {
      const auto ray = math::make_joseph_ray(grid, e, e + 3);
      EXPECT_TRUE(ray.empty()) << what;
      EXPECT_EQ(ray.num_planes(), 0) << what;
      const T v = math::forward_lor(grid, image.data(), e, e + 3);
      EXPECT_TRUE(v == T(0) && !std::signbit(v)) << what << ": " << v;
      ++checked;
    };
    for (T bad : {nan, inf, -inf})
      for (int mask = 1; mask < 64; ++mask) {
        T e[6];
        for (int c = 0; c < 6; ++c)
          e[c] = (mask >> c) & 1 ? bad : base[c];
        expect_empty(e, std::to_string(double(bad)) + " in coordinates " +
                            std::to_string(mask));
      }
    for (int k = 0; k < 3; ++k) { // finite end points, b - a overflows
      T e[6];
      std::copy(base, base + 6, e);
      e[k] = -big;
      e[k + 3] = big;
      expect_empty(e, "difference overflows on axis " + std::to_string(k));
    }
  }
  EXPECT_EQ(checked, 5u * (3u * 63u + 3u));
}

// Splitting the planes of a LOR between several "threads" (first, stride)
// and adding the partial sums gives the whole forward value, and the same
// for back projection: the GPU's several-threads-per-LOR mode.
TYPED_TEST(JosephMath, StridedPlanesAddUp) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({12, 10, 8}, {2.0, 1.0, 3.0});
  const auto grid = grid_of<T>(g);
  const auto lors = rt::outside_lors<T>(g, 500, 8);
  const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 9, 0.5, 1.5);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const auto a = lors.start(i), b = lors.end(i);
    const T ta[3] = {T(a[0]), T(a[1]), T(a[2])}, tb[3] = {T(b[0]), T(b[1]), T(b[2])};
    const auto ray = math::make_joseph_ray(grid, ta, tb);
    const T whole = math::forward_planes(image.data(), ray, ray.first_plane, 1);
    for (int stride : {2, 3, 32}) {
      double parts = 0;
      for (int t = 0; t < stride; ++t)
        parts +=
            double(math::forward_planes(image.data(), ray, ray.first_plane + t, stride));
      EXPECT_NEAR(parts, double(whole), 1e-5 * std::fabs(double(whole)) + 1e-30)
          << "LOR " << i << " stride " << stride;
    }
  }
}

} // namespace
