// Plane pairs (math/plane_pairs.hpp): the taps of planes p and p + 1 of a
// ray along the contiguous axis, matched by column, are exactly the taps
// and amounts of two single-plane scatters; the list-mode back projection
// and the family footprint walked by lanes over plane pairs add exactly
// what the single-plane walks add.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/plane_pairs.hpp"
#include "resproj/math/tof.hpp"
#include "resproj/math/tof_projection.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

template <class T> using tap_list = std::vector<std::pair<std::int64_t, T>>;

/// An image of the test grid with room for shifted taps on both sides:
/// the adders record offsets from `base()`.
template <class T> struct test_image {
  static constexpr std::int64_t margin = 64;
  std::vector<T> v = std::vector<T>(9 * 11 * 13 + 2 * margin);
  T *base() { return v.data() + margin; }
};

/// Records every (offset from `base`, amount) it is given, as a plain adder.
template <class T> struct recorder {
  tap_list<T> *taps;
  const T *base;
  void operator()(T *voxel, T amount) const {
    taps->emplace_back(std::int64_t(voxel - base), amount);
  }
};

/// A plain adder of plane pairs: records the pairs' two taps and counts them.
template <class T> struct pair_recorder {
  static constexpr bool scatters_plane_pairs = true;
  tap_list<T> *taps;
  const T *image_base;
  std::int64_t *pairs;
  void operator()(T *voxel, T amount) const {
    taps->emplace_back(std::int64_t(voxel - image_base), amount);
  }
  template <class I>
  void scatter_plane_pair(T *image, const math::joseph_ray<T> &r, std::int64_t p, T v0,
                          T v1, std::int64_t delta = 0) const {
    const std::int64_t base = std::int64_t(image - image_base);
    math::scatter_plane_pair<I>(
        r, p, v0, v1, I(delta),
        [&](I o, T a, T b) {
          taps->emplace_back(base + o, a);
          taps->emplace_back(base + o + 1, b);
          ++*pairs;
        },
        [&](I o, T a) { taps->emplace_back(base + o, a); });
  }
};

template <class T> tap_list<T> sorted(tap_list<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

rt::grid test_grid() { return rt::grid::centred({9, 11, 13}, {2.0, 1.5, 1.0}); }

/// Rays of random LORs whose planes are the contiguous axis (axis 2).
template <class T> std::vector<math::joseph_ray<T>> contiguous_rays(std::size_t n) {
  const rt::grid g = test_grid();
  const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
  const auto lors = rt::anywhere_lors<T>(g, n, 11);
  std::vector<math::joseph_ray<T>> rays;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const auto r = math::make_joseph_ray(grid, &lors.starts[3 * i], &lors.ends[3 * i]);
    if (!r.empty() && math::planes_contiguous(r))
      rays.push_back(r);
  }
  return rays;
}

template <class T> class PlanePairs : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(PlanePairs, value_types);

TYPED_TEST(PlanePairs, SameTapsAndAmountsAsTwoSingleScatters) {
  using T = TypeParam;
  const auto rays = contiguous_rays<T>(3000);
  ASSERT_GT(rays.size(), 200u);
  std::int64_t pairs = 0, taps = 0;
  for (const auto &r : rays)
    for (const std::int64_t delta : {std::int64_t(0), std::int64_t(3)})
      for (std::int64_t p = r.first_plane - 1; p <= r.last_plane; ++p)
        for (int mask = 1; mask < 4; ++mask) {
          const bool in0 = (mask & 1) != 0 && p >= r.first_plane;
          const bool in1 = (mask & 2) != 0 && p + 1 <= r.last_plane;
          const T v0 = in0 ? T(0.75) + T(p % 3) : T(0);
          const T v1 = in1 ? T(1.25) - T(p % 2) / 4 : T(0);
          tap_list<T> want, got;
          test_image<T> im;
          T *image = im.base() + delta;
          if (in0)
            math::scatter(image, r, p, v0, recorder<T>{&want, im.base()});
          if (in1)
            math::scatter(image, r, p + 1, v1, recorder<T>{&want, im.base()});
          math::scatter_plane_pair<std::int64_t>(
              r, p, v0, v1, delta,
              [&](std::int64_t o, T a, T b) {
                // Plane p's tap and plane p + 1's in the same column.
                EXPECT_EQ(((o - delta) % 13 + 13) % 13, p);
                got.emplace_back(o, a);
                got.emplace_back(o + 1, b);
                ++pairs;
              },
              [&](std::int64_t o, T a) { got.emplace_back(o, a); });
          ASSERT_EQ(sorted(got), sorted(want)) << "plane " << p << " mask " << mask;
          taps += std::int64_t(want.size());
        }
  // Most taps of steep rays pair up: the test must see pairs.
  EXPECT_GT(2 * pairs, taps / 3);
}

TEST(PlanePairs, PairStartIsTheEvenAlignedPlaneAtOrBelow) {
  for (std::int64_t lo = -7; lo <= 7; ++lo)
    for (std::int64_t delta = -5; delta <= 5; ++delta) {
      const std::int64_t p = math::pair_start(lo, delta);
      EXPECT_TRUE(p == lo || p == lo - 1) << lo << " " << delta;
      EXPECT_EQ((p + delta) % 2, 0) << lo << " " << delta;
    }
}

/// The list-mode back projection of lanes over plane pairs adds the same
/// amounts at the same voxels as the single-plane walk, for 1, 2 and 4
/// lanes.
TYPED_TEST(PlanePairs, ListModeBackOfLanesMatchesTheSinglePlaneWalk) {
  using T = TypeParam;
  const auto rays = contiguous_rays<T>(1500);
  const auto tl = math::make_tof_lor<T>(T(3), 9, T(2.5), T(0), T(3));
  std::int64_t pairs = 0;
  for (const auto &r : rays)
    for (std::int64_t bin = 0; bin < 9; bin += 2)
      for (const int lanes : {1, 2, 4}) {
        tap_list<T> want, got;
        test_image<T> im;
        T *image = im.base();
        math::back_tof_lm_planes(image, r, tl, bin, T(1.5), r.first_plane, 1,
                                 recorder<T>{&want, image});
        for (int lane = 0; lane < lanes; ++lane)
          math::back_tof_lm_planes(image, r, tl, bin, T(1.5), r.first_plane + lane, lanes,
                                   pair_recorder<T>{&got, image, &pairs});
        ASSERT_EQ(sorted(got), sorted(want)) << "bin " << bin << " lanes " << lanes;
      }
  EXPECT_GT(pairs, 0);
}

/// Lanes of a group, as math::serial_lanes' interface (scatter_shifted
/// uses lane() and size() only).
struct lane_of {
  int i, n;
  int lane() const { return i; }
  int size() const { return n; }
};

/// A shifted family footprint walked by 32 lanes over plane pairs adds the
/// same amounts as the single lane's single-plane walk.
TEST(PlanePairs, ShiftedFootprintOfLanesMatchesTheSinglePlaneWalk) {
  const auto rays = contiguous_rays<float>(800);
  math::family_grid<float> f;
  const rt::grid g = test_grid();
  f.gp = math::image_grid<float>::from(rt::geometry_of(g));
  f.ax = 2;
  std::int64_t pairs = 0;
  for (const auto &r : rays)
    for (const std::int64_t shift : {-3, 0, 1, 2}) {
      tap_list<float> want, got;
      test_image<float> im;
      float *diff = im.base();
      math::scatter_shifted(f, r, shift, 0.5f, diff, recorder<float>{&want, diff});
      for (int lane = 0; lane < 32; ++lane)
        math::scatter_shifted(f, r, shift, 0.5f, diff,
                              pair_recorder<float>{&got, diff, &pairs},
                              lane_of{lane, 32});
      ASSERT_EQ(sorted(got), sorted(want)) << "shift " << shift;
    }
  EXPECT_GT(pairs, 0);
}

} // namespace
