// The stencil layout (math/stencil_layout.hpp) against the plain image:
// the reduction rule reads every element for at most one voxel, a sample
// scattered into the layout and reduced equals `scatter` into the image
// bit for bit, nothing lands in elements no voxel reads (padding), and
// the stencil's first element is 16-byte aligned exactly when documented.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/stencil_layout.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

template <class T> class StencilLayout : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(StencilLayout, value_types);

// Odd and even extents on every axis, non-cubic voxels.
const rt::grid grids[] = {
    rt::grid::centred({5, 7, 6}, {2.0, 1.5, 2.5}),
    rt::grid::centred({8, 4, 9}, {1.0, 2.0, 1.25}),
    rt::grid::centred({1, 3, 1}, {1.0, 1.0, 1.0}),
};

template <class T> math::image_grid<T> grid_of(const rt::grid &g) {
  return math::image_grid<T>::from(rt::geometry_of(g));
}

/// owner[e] = the voxel whose reduction reads element e (-1: none).
std::vector<std::int64_t> owners(const rt::grid &rg, const math::stencil_layout &l) {
  std::vector<std::int64_t> owner(std::size_t(l.size), -1);
  for (std::int64_t i0 = 0; i0 < rg.shape[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < rg.shape[1]; ++i1)
      for (std::int64_t i2 = 0; i2 < rg.shape[2]; ++i2) {
        std::int64_t e[8];
        const int n = math::stencil_voxel_elements<std::int64_t>(l, i0, i1, i2, e);
        EXPECT_EQ(n, 2 * l.width);
        for (int i = 0; i < n; ++i) {
          const std::int64_t x = e[i];
          EXPECT_GE(x, 0);
          EXPECT_LT(x, l.size);
          if (x < 0 || x >= l.size)
            continue;
          EXPECT_EQ(owner[std::size_t(x)], -1) << "element read for two voxels";
          owner[std::size_t(x)] = rg.index(i0, i1, i2);
        }
      }
  return owner;
}

TYPED_TEST(StencilLayout, ReductionReadsEachElementForOneVoxel) {
  using T = TypeParam;
  for (const int width : {2, 4})
    for (const rt::grid &rg : grids) {
      const auto l = math::make_stencil_layout(grid_of<T>(rg), width);
      EXPECT_EQ(l.width, width);
      if (width == 2) {
        EXPECT_EQ(l.cols % 2, 0);
      }
      EXPECT_EQ(l.size,
                width * l.cols *
                    (rg.shape[0] * (rg.shape[1] + 1) + rg.shape[1] * (rg.shape[0] + 1)));
      const auto owner = owners(rg, l);
      std::int64_t owned = 0;
      for (std::int64_t o : owner)
        owned += o >= 0;
      // 2 x width elements per voxel, all distinct
      EXPECT_EQ(owned, 2 * width * rg.num_voxels());
    }
}

TYPED_TEST(StencilLayout, ScatterAndReduceEqualsScatterIntoTheImage) {
  using T = TypeParam;
  std::uint64_t seed = 5;
  for (const int width : {2, 4})
    for (const rt::grid &rg : grids) {
      const auto g = grid_of<T>(rg);
      const auto l = math::make_stencil_layout(g, width);
      const auto owner = owners(rg, l);
      const auto lors = rt::anywhere_lors<T>(rg, 400, seed++);
      int covered = 0;
      for (std::size_t i = 0; i < lors.size(); ++i) {
        const math::joseph_ray<T> r =
            math::make_joseph_ray(g, &lors.starts[3 * i], &lors.ends[3 * i]);
        for (std::int64_t p = r.first_plane; p <= r.last_plane; ++p) {
          const auto q = math::bilinear_at<std::int64_t>(r, p);
          if (!l.covers(r.axis, q.iu, q.iv)) {
            EXPECT_EQ(r.axis, 2) << "a sample of axis 0 or 1 outside the layout";
            continue;
          }
          ++covered;
          const std::int64_t e = l.template entry<std::int64_t>(r.axis, p, q.iu, q.iv);
          EXPECT_EQ(e % width, 0);
          if (width == 2) {
            EXPECT_EQ(e % 4 == 0, (q.iv + 1) % 2 == 0) << "16-byte alignment rule";
          }
          // One sample scattered both ways.
          const T value = T(0.75) + T(p);
          std::vector<T> direct(std::size_t(rg.num_voxels()), T(0));
          std::vector<T> acc(std::size_t(l.size), T(0));
          math::scatter<std::int64_t>(direct.data(), r, p, value,
                                      [](T *v, T a) { *v += a; });
          for (int k = 0; k < 4; ++k)
            acc[std::size_t(e + k)] += value * q.weight[k];
          std::vector<T> reduced(direct.size(), T(0));
          for (std::size_t x = 0; x < acc.size(); ++x) {
            if (owner[x] >= 0)
              reduced[std::size_t(owner[x])] += acc[x];
            else
              ASSERT_EQ(acc[x], T(0)) << "an amount landed in padding";
          }
          ASSERT_EQ(reduced, direct)
              << "width " << width << ", LOR " << i << ", plane " << p;
        }
      }
      EXPECT_GT(covered, 300);
    }
}

} // namespace
