// The support box (math/support_box.hpp): nonzero_box against a direct
// scan, planes_meeting_box never drops a plane with a tap inside the box,
// and the forward projection over those planes has the bits of the full
// walk for images that are zero outside the box.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/support_box.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

const rt::grid test_grid = rt::grid::centred({14, 17, 21}, {2.0, 1.5, 1.25});
const std::int64_t test_shape[3] = {14, 17, 21};

/// An image of the test grid, random in [0.5, 1.5) inside `b`, zero outside.
template <class T>
std::vector<T> boxed_image(const math::index_box &b, std::uint64_t seed) {
  const auto values =
      rt::random_values<T>(std::size_t(test_grid.num_voxels()), seed, 0.5, 1.5);
  std::vector<T> v(values.size(), T(0));
  for (std::int64_t i = 0; i < 14; ++i)
    for (std::int64_t j = 0; j < 17; ++j)
      for (std::int64_t k = 0; k < 21; ++k)
        if (i >= b.lo[0] && i <= b.hi[0] && j >= b.lo[1] && j <= b.hi[1] &&
            k >= b.lo[2] && k <= b.hi[2])
          v[std::size_t(test_grid.index(i, j, k))] =
              values[std::size_t(test_grid.index(i, j, k))];
  return v;
}

math::index_box box(std::int64_t l0, std::int64_t h0, std::int64_t l1, std::int64_t h1,
                    std::int64_t l2, std::int64_t h2) {
  math::index_box b;
  b.lo[0] = l0;
  b.hi[0] = h0;
  b.lo[1] = l1;
  b.hi[1] = h1;
  b.lo[2] = l2;
  b.hi[2] = h2;
  return b;
}

const math::index_box test_boxes[] = {box(4, 9, 5, 11, 3, 17), box(0, 13, 0, 16, 0, 20),
                                      box(6, 6, 8, 8, 10, 10), box(0, 2, 14, 16, 0, 20),
                                      box(5, 8, 0, 16, 19, 20)};

TEST(SupportBox, NonzeroBoxIsTheBoundingBoxOfTheNonzeroVoxels) {
  for (const auto &b : test_boxes) {
    auto v = boxed_image<float>(b, 3);
    const math::index_box got = math::nonzero_box(v.data(), test_shape);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(got.lo[k], b.lo[k]) << k;
      EXPECT_EQ(got.hi[k], b.hi[k]) << k;
    }
  }
  std::vector<double> zero(std::size_t(test_grid.num_voxels()), 0.0);
  EXPECT_TRUE(math::nonzero_box(zero.data(), test_shape).empty());
  zero[std::size_t(test_grid.index(3, 4, 5))] = -0.0; // == 0: still empty
  EXPECT_TRUE(math::nonzero_box(zero.data(), test_shape).empty());
}

template <class T> class SupportBoxT : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SupportBoxT, value_types);

/// Every plane outside the range has all its nonzero-weight taps outside
/// the box, and the projection over the range has the full walk's bits.
TYPED_TEST(SupportBoxT, SkippedPlanesMissTheBoxAndTheSumKeepsItsBits) {
  using T = TypeParam;
  const auto grid = math::image_grid<T>::from(rt::geometry_of(test_grid));
  const auto lors = rt::anywhere_lors<T>(test_grid, 4000, 5);
  std::int64_t visited = 0, all = 0;
  for (const auto &b : test_boxes) {
    const auto image = boxed_image<T>(b, 9);
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const T *a = &lors.starts[3 * i], *e = &lors.ends[3 * i];
      const auto r = math::make_joseph_ray(grid, a, e);
      std::int64_t lo, hi;
      math::planes_meeting_box(r, b, lo, hi);
      for (std::int64_t p = r.first_plane; p <= r.last_plane; ++p) {
        if (p >= lo && p <= hi)
          continue;
        const auto s = math::stencil_at<std::int64_t>(r, p);
        for (int t = 0; t < 4; ++t) {
          if (s.weight[t] == T(0))
            continue;
          const std::int64_t o = s.offset[t];
          const std::int64_t idx[3] = {o / (17 * 21), (o / 21) % 17, o % 21};
          const bool inside = idx[0] >= b.lo[0] && idx[0] <= b.hi[0] &&
                              idx[1] >= b.lo[1] && idx[1] <= b.hi[1] &&
                              idx[2] >= b.lo[2] && idx[2] <= b.hi[2];
          ASSERT_FALSE(inside) << "LOR " << i << " plane " << p;
        }
      }
      const T full = math::forward_lor(grid, image.data(), a, e);
      const T boxed = math::forward_lor_in_box(grid, image.data(), b, a, e);
      const T boxed32 =
          math::forward_lor_in_box<std::int32_t>(grid, image.data(), b, a, e);
      ASSERT_EQ(std::memcmp(&full, &boxed, sizeof(T)), 0) << "LOR " << i;
      ASSERT_EQ(std::memcmp(&full, &boxed32, sizeof(T)), 0) << "LOR " << i;
      visited += lo <= hi ? hi - lo + 1 : 0;
      all += r.num_planes();
    }
  }
  // The boxes are smaller than the image: far fewer planes are walked.
  EXPECT_LT(double(visited), 0.7 * double(all));
}

TYPED_TEST(SupportBoxT, EmptyAndDefaultBoxes) {
  using T = TypeParam;
  const auto grid = math::image_grid<T>::from(rt::geometry_of(test_grid));
  const auto lors = rt::anywhere_lors<T>(test_grid, 500, 8);
  const auto image = boxed_image<T>(box(0, 13, 0, 16, 0, 20), 4);
  math::index_box none = box(0, -1, 0, -1, 0, -1);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const T *a = &lors.starts[3 * i], *e = &lors.ends[3 * i];
    EXPECT_EQ(math::forward_lor_in_box(grid, image.data(), none, a, e), T(0));
    const T full = math::forward_lor(grid, image.data(), a, e);
    const T boxed = math::forward_lor_in_box(grid, image.data(), math::index_box{}, a, e);
    ASSERT_EQ(std::memcmp(&full, &boxed, sizeof(T)), 0) << "LOR " << i;
  }
}

/// Lane `i` of `n` with reductions that return the lane's own value, so
/// that each lane's partial results can be compared.
struct own_lane {
  int i, n;
  int lane() const { return i; }
  int size() const { return n; }
  template <class V> V sum(V v) const { return v; }
  template <class V> V min(V v) const { return v; }
  template <class V> V max(V v) const { return v; }
};

/// The family attenuation walk restricted to the support columns gives
/// every lane the partial integral bits and tap slice range of the whole
/// walk, along each scanner axis.
TEST(SupportBox, FamilyAttenuationWalkKeepsEveryLanesResult) {
  const auto grid = math::image_grid<float>::from(rt::geometry_of(test_grid));
  const auto lors = rt::anywhere_lors<float>(test_grid, 1500, 6);
  const math::index_box b = box(4, 9, 5, 11, 3, 17);
  const auto mu = boxed_image<float>(b, 2);
  for (int ax = 0; ax < 3; ++ax) {
    math::family_grid<float> f;
    f.gp = grid;
    f.ax = ax;
    f.mu = mu.data();
    std::vector<unsigned char> support(
        std::size_t(test_grid.num_voxels() / test_shape[ax]), 0);
    for (std::int64_t o = 0; o < test_grid.num_voxels(); ++o)
      if (mu[std::size_t(o)] != 0.f)
        support[std::size_t(f.column_of(o))] = 1;
    f.support = support.data();
    math::family_grid<float> clipped = f;
    const math::index_box nz = math::nonzero_box(mu.data(), test_shape);
    for (int k = 0; k < 3; ++k)
      if (k != ax) {
        clipped.support_columns.lo[k] = nz.lo[k];
        clipped.support_columns.hi[k] = nz.hi[k];
      }
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const auto r = math::make_joseph_ray(grid, &lors.starts[3 * i], &lors.ends[3 * i]);
      for (const int n : {1, 3, 32})
        for (int lane = 0; lane < n; ++lane) {
          const auto want = math::attenuation_walk(f, r, own_lane{lane, n});
          const auto got = math::attenuation_walk(clipped, r, own_lane{lane, n});
          ASSERT_EQ(std::memcmp(&want.integral, &got.integral, sizeof(float)), 0)
              << "axis " << ax << " LOR " << i << " lane " << lane << " of " << n;
          ASSERT_EQ(want.lo, got.lo);
          ASSERT_EQ(want.hi, got.hi);
        }
    }
  }
}

} // namespace
