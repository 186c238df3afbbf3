// The independent float64 reference of tests/common/reference.hpp checked
// against itself. The executors are held to it, with the bounds of
// docs/projection.md "Accuracy", by the contract suite (tests/contract).
#include <gtest/gtest.h>

#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"

namespace rt = resproj_test;

namespace {

// The reference itself: <Ax, y> == <x, A^T y> to float64 rounding, and its
// back projection of a unit value is the LOR's row.
TEST(ReferenceSelfCheck, IsItsOwnTranspose) {
  const rt::grid g = rt::grid::centred({9, 7, 5}, {1.5, 1.0, 2.0});
  const auto lors = rt::anywhere_lors<double>(g, 2000, 3);
  const auto x = rt::random_values<double>(std::size_t(g.num_voxels()), 4, -1.0, 1.0);
  const auto y = rt::random_values<double>(lors.size(), 5, -1.0, 1.0);
  const auto ax = rt::ref::forward(g, x.data(), lors);
  const auto aty = rt::ref::back(g, lors, y.data());
  EXPECT_LT(rt::adjoint_mismatch(rt::dot(ax, y), rt::dot(x, aty)), 1e-13);
}

} // namespace
