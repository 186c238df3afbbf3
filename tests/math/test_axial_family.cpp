// The index arithmetic of math::family_grid (math/axial_family.hpp):
// slice_of, column_of and column_at against the voxel indices, on grids whose blocks
// fit in 32 bits (the 32-bit divisions) and on one of more than 2^32
// voxels (the 64-bit ones), along every axis.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "resproj/math/axial_family.hpp"

namespace m = resproj::math;

namespace {

m::family_grid<float> grid(std::int64_t n0, std::int64_t n1, std::int64_t n2, int ax) {
  m::family_grid<float> f;
  f.gp = m::image_grid<float>{};
  f.gp.shape[0] = n0;
  f.gp.shape[1] = n1;
  f.gp.shape[2] = n2;
  f.gp.stride[2] = 1;
  f.gp.stride[1] = n2;
  f.gp.stride[0] = n1 * n2;
  f.ax = ax;
  return f;
}

/// slice_of, column_of and column_at of random voxels, and of the last
/// one, equal the index along `ax` and the C-order index of the other two.
void check(std::int64_t n0, std::int64_t n1, std::int64_t n2) {
  const std::int64_t n[3] = {n0, n1, n2};
  std::mt19937_64 rng(7);
  for (int ax = 0; ax < 3; ++ax) {
    const auto f = grid(n0, n1, n2, ax);
    const int a = (ax + 1) % 3, b = (ax + 2) % 3;
    const int lo = a < b ? a : b, hi = a < b ? b : a;
    for (int k = 0; k < 2000; ++k) {
      std::int64_t i[3];
      for (int d = 0; d < 3; ++d)
        i[d] = k == 0 ? n[d] - 1 : std::int64_t(rng() % std::uint64_t(n[d]));
      const std::int64_t offset = (i[0] * n1 + i[1]) * n2 + i[2];
      ASSERT_EQ(f.slice_of(offset), i[ax]) << "axis " << ax << " offset " << offset;
      ASSERT_EQ(f.column_of(offset), i[lo] * n[hi] + i[hi])
          << "axis " << ax << " offset " << offset;
      ASSERT_EQ(f.column_at(i[0], i[1], i[2]), i[lo] * n[hi] + i[hi])
          << "axis " << ax << " offset " << offset;
    }
  }
}

} // namespace

TEST(FamilyGrid, SliceAndColumnOfASmallGrid) { check(12, 9, 22); }

TEST(FamilyGrid, SliceAndColumnOfAGridOfMoreThan2To32Voxels) {
  // 3000 x 1500 x 1000 = 4.5e9 voxels: offsets and the axis-0 block beyond
  // 32 bits; offsets below 2^32 with a block beyond it take the 64-bit path.
  check(3000, 1500, 1000);
  const auto f = grid(3000, 1500, 1000, 0);
  EXPECT_FALSE(f.fits_32bit(5));
  EXPECT_EQ(f.slice_of(std::int64_t(2863) * 1500 * 1000 + 17), 2863);
}
