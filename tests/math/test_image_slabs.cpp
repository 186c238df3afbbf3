// Slab passes (math/image_slabs.hpp): over the passes of one slab count,
// every plane of a ray falls in exactly one pass's range, the one whose
// slab holds the sample's coordinate; list-mode projections run pass by
// pass add exactly the amounts of one pass (back) and the same value to
// rounding (forward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/image_slabs.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/tof.hpp"
#include "resproj/math/tof_projection.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

template <class T> class ImageSlabs : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ImageSlabs, value_types);

/// Rays of random LORs through `g` plus its degenerate ones (axis-aligned,
/// on faces, ties), all non-empty.
template <class T> std::vector<math::joseph_ray<T>> rays_through(const rt::grid &g) {
  const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
  std::vector<math::joseph_ray<T>> rays;
  for (const auto &lors : {rt::anywhere_lors<T>(g, 3000, 17), rt::degenerate_lors<T>(g)})
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const auto r = math::make_joseph_ray(grid, &lors.starts[3 * i], &lors.ends[3 * i]);
      if (!r.empty())
        rays.push_back(r);
    }
  return rays;
}

/// Whether coordinate c lies in slab k of `s` (open at both outer ends).
bool in_slab(const math::slab_pass &s, int k, std::int64_t c) {
  return (k == 0 || c >= s.begin(k)) && (k == s.count - 1 || c < s.begin(k + 1));
}

TYPED_TEST(ImageSlabs, EveryPlaneInExactlyOnePass) {
  using T = TypeParam;
  // The longest axis is 0, 1 or 2 in turn, so the slabs cut the principal
  // axis of some rays and a bilinear axis of others.
  for (const rt::grid &g : {rt::grid::centred({23, 11, 13}, {1.0, 2.0, 1.5}),
                            rt::grid::centred({9, 29, 13}, {2.0, 0.75, 1.0}),
                            rt::grid::centred({9, 11, 31}, {2.0, 1.5, 0.5})}) {
    const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
    const auto rays = rays_through<T>(g);
    ASSERT_GT(rays.size(), 1000u);
    std::int64_t principal = 0, across = 0;
    for (const int count : {1, 2, 3, 5, 8, 40}) {
      const math::slab_pass first = math::make_slab_pass(grid, count, 0);
      EXPECT_EQ(first.size, std::max({g.shape[0], g.shape[1], g.shape[2]}));
      for (const auto &r : rays) {
        std::vector<int> passes(std::size_t(r.num_planes()), 0);
        for (int k = 0; k < count; ++k) {
          const math::slab_pass s = math::make_slab_pass(grid, count, k);
          std::int64_t lo, hi;
          math::slab_plane_range(r, s, lo, hi);
          for (std::int64_t p = r.first_plane; p <= r.last_plane; ++p) {
            const bool listed = p >= lo && p <= hi;
            ASSERT_EQ(listed, in_slab(s, k, math::slab_coordinate(r, s, p)))
                << "plane " << p << " pass " << k << " of " << count;
            passes[std::size_t(p - r.first_plane)] += listed;
          }
        }
        ASSERT_TRUE(
            std::all_of(passes.begin(), passes.end(), [](int n) { return n == 1; }))
            << count << " passes";
        (r.axis == first.axis ? principal : across) += 1;
      }
    }
    EXPECT_GT(principal, 0);
    EXPECT_GT(across, 0);
  }
}

TEST(ImageSlabs, SlabsCutTheLongestAxisEvenly) {
  const auto grid = math::image_grid<float>::from(
      rt::geometry_of(rt::grid::centred({240, 240, 682}, {3.2, 3.2, 2.85})));
  const math::slab_pass s = math::make_slab_pass(grid, 7, 3);
  EXPECT_EQ(s.axis, 2);
  EXPECT_EQ(s.size, 682);
  EXPECT_EQ(s.begin(3), 292);
  EXPECT_EQ(s.begin(4), 389);
  EXPECT_EQ(math::make_slab_pass(grid, 0, 0).count, 1);
  // Ties go to the lowest axis.
  const auto cube = math::image_grid<float>::from(
      rt::geometry_of(rt::grid::centred({8, 8, 8}, {1, 1, 1})));
  EXPECT_EQ(math::make_slab_pass(cube, 2, 0).axis, 0);
}

template <class T> using tap_list = std::vector<std::pair<std::int64_t, T>>;

/// Records (offset from `base`, amount) of every add.
template <class T> struct recorder {
  tap_list<T> *taps;
  const T *base;
  void operator()(T *voxel, T amount) const {
    taps->emplace_back(std::int64_t(voxel - base), amount);
  }
};

TYPED_TEST(ImageSlabs, ListModePassesAddWhatOnePassAdds) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({9, 11, 31}, {2.0, 1.5, 0.5});
  const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
  const auto rays = rays_through<T>(g);
  const auto tl = math::make_tof_lor<T>(T(3), 9, T(2.5), T(0), T(3));
  std::vector<T> image(std::size_t(g.shape[0] * g.shape[1] * g.shape[2]));
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = T(0.5) + T(i % 7) / T(8);
  std::int64_t split = 0;
  for (const auto &r : rays)
    for (std::int64_t bin = 0; bin < 9; bin += 2)
      for (const int count : {2, 5}) {
        const T one =
            math::forward_tof_lm_planes(image.data(), r, tl, bin, r.first_plane, 1);
        tap_list<T> want, got;
        math::back_tof_lm_planes(image.data(), r, tl, bin, T(1.5), r.first_plane, 1,
                                 recorder<T>{&want, image.data()});
        T sum = 0;
        int parts = 0;
        for (int k = 0; k < count; ++k) {
          std::int64_t lo, hi;
          math::slab_plane_range(r, math::make_slab_pass(grid, count, k), lo, hi);
          const T part = math::forward_tof_lm_planes(image.data(), r, tl, bin,
                                                     r.first_plane, 1, lo, hi);
          parts += part != T(0);
          sum += part;
          math::back_tof_lm_planes(image.data(), r, tl, bin, T(1.5), r.first_plane, 1,
                                   recorder<T>{&got, image.data()}, lo, hi);
        }
        split += parts > 1;
        const T tol = T(sizeof(T) == 4 ? 1e-5 : 1e-13) * (T(1) + std::abs(one));
        ASSERT_NEAR(sum, one, tol) << "bin " << bin << " passes " << count;
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, want) << "bin " << bin << " passes " << count;
      }
  EXPECT_GT(split, 100); // many events straddle slabs
}

} // namespace
