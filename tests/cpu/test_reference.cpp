// CPU projector (float and double) against the independent float64
// reference of tests/common/reference.hpp, with the bounds of
// docs/projection.md "Accuracy".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "resproj/cpu/projector.hpp"

namespace rt = resproj_test;

namespace {

constexpr std::size_t kNumLors = 50000;

struct named_grid {
  const char *name;
  rt::grid g;
};

// Anisotropic, non-cubic; one exactly representable in float, one not,
// one off-centre and one a single voxel thick.
std::vector<named_grid> grids() {
  rt::grid off;
  off.shape = {17, 23, 9};
  off.voxel_size = {2.34, 1.7, 3.1};
  off.origin = {-19.3, -17.1, 5.7};
  return {
      {"dyadic 24x20x12 (2,1,4)", rt::grid::centred({24, 20, 12}, {2.0, 1.0, 4.0})},
      {"off-centre 17x23x9 (2.34,1.7,3.1)", off},
      {"thin 32x28x1 (2,2,2.5)", rt::grid::centred({32, 28, 1}, {2.0, 2.0, 2.5})},
  };
}

enum class lor_kind { outside, anywhere, scanner };

const char *name_of(lor_kind k) {
  switch (k) {
  case lor_kind::outside:
    return "outside";
  case lor_kind::anywhere:
    return "anywhere";
  default:
    return "scanner";
  }
}

template <class T>
rt::lor_set<T> make_lors(lor_kind k, const rt::grid &g, std::uint64_t seed) {
  switch (k) {
  case lor_kind::outside:
    return rt::outside_lors<T>(g, kNumLors, seed);
  case lor_kind::anywhere:
    return rt::anywhere_lors<T>(g, kNumLors, seed);
  default: {
    rt::scanner_params p;
    p.detectors_per_ring = 64;
    p.rings = 8;
    return rt::scanner_lors<T>(g, p, kNumLors, seed);
  }
  }
}

template <class T> class ReferenceTest : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ReferenceTest, value_types);

// Forward projection of a positive random image agrees with the reference:
// flips at most 1e-4 of the LORs, the rest within bounds<T>::norm. Then the
// back projection of random values (flipped LORs given value 0) agrees
// with the reference back projection to the same bound.
template <class T> void check_against_reference(lor_kind kind) {
  std::uint64_t seed = 1000;
  for (const auto &ng : grids()) {
    ++seed;
    SCOPED_TRACE(std::string(ng.name) + ", " + name_of(kind) + " LORs");
    const rt::grid &g = ng.g;
    const auto lors = make_lors<T>(kind, g, seed);
    const auto image =
        rt::random_values<T>(std::size_t(g.num_voxels()), seed + 7, 0.5, 1.5);

    std::vector<T> out(lors.size(), T(-1));
    resproj::cpu::forward(resproj::op::non_tof{}, rt::cimage_of(image, g),
                          rt::view_of(lors), rt::span_of(out));
    const auto ref = rt::ref::forward(g, image.data(), lors);
    const auto cmp = rt::compare_lors(out, ref);
    EXPECT_TRUE(rt::within_bounds(cmp, rt::bounds<T>::norm))
        << rt::describe_flips(cmp, lors, out.data(), ref.data());
    rt::note(std::string("forward, ") + ng.name + ", " + name_of(kind) + ": " +
             cmp.summary());

    auto values = rt::random_values<T>(lors.size(), seed + 11, 0.0, 2.0);
    for (std::size_t i : cmp.flipped)
      values[i] = T(0);
    std::vector<T> back(std::size_t(g.num_voxels()), T(0));
    resproj::cpu::back(resproj::op::non_tof{}, rt::image_of(back, g), rt::view_of(lors),
                       rt::cspan_of(values));
    const auto ref_back = rt::ref::back(g, lors, values.data());
    EXPECT_LT(rt::rel_norm_diff(back, ref_back), rt::bounds<T>::norm);
  }
}

TYPED_TEST(ReferenceTest, ForwardAndBackOutsideLors) {
  check_against_reference<TypeParam>(lor_kind::outside);
}

TYPED_TEST(ReferenceTest, ForwardAndBackLorsWithEndPointsAnywhere) {
  check_against_reference<TypeParam>(lor_kind::anywhere);
}

TYPED_TEST(ReferenceTest, ForwardAndBackScannerLors) {
  check_against_reference<TypeParam>(lor_kind::scanner);
}

// All pairs of a small scanner around an off-centre image.
TYPED_TEST(ReferenceTest, AllPairsOfASmallScanner) {
  using T = TypeParam;
  rt::grid g = rt::grid::centred({20, 20, 10}, {2.0, 2.0, 2.5}, {3.0, -5.0, 1.25});
  rt::scanner_params p;
  p.detectors_per_ring = 48;
  p.rings = 4;
  const auto lors = rt::scanner_lors<T>(g, p); // 18336 LORs
  const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 5, 0.5, 1.5);
  std::vector<T> out(lors.size());
  resproj::cpu::forward(resproj::op::non_tof{}, rt::cimage_of(image, g),
                        rt::view_of(lors), rt::span_of(out));
  const auto ref = rt::ref::forward(g, image.data(), lors);
  const auto cmp = rt::compare_lors(out, ref);
  EXPECT_TRUE(rt::within_bounds(cmp, rt::bounds<T>::norm))
      << rt::describe_flips(cmp, lors, out.data(), ref.data());
}

// Degenerate LORs (faces, edges, ties, plane centres, zero length) on
// grids exact in float: no decision may differ from the float64 reference,
// and every LOR agrees to rounding (absolute, relative to the LOR's scale).
TYPED_TEST(ReferenceTest, DegenerateLorsAgreeExactlyInDecisions) {
  using T = TypeParam;
  const rt::grid gs[] = {
      rt::grid::centred({6, 5, 4}, {2.0, 1.0, 4.0}),
      rt::grid::centred({7, 1, 3}, {0.5, 2.0, 1.0}, {1.0, -2.0, 8.0}),
      rt::grid::centred({1, 1, 1}, {1.0, 1.0, 1.0}),
  };
  for (const auto &g : gs) {
    const auto lors = rt::degenerate_lors<T>(g);
    const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 99, 0.5, 1.5);
    std::vector<T> out(lors.size(), T(-1));
    resproj::cpu::forward(resproj::op::non_tof{}, rt::cimage_of(image, g),
                          rt::view_of(lors), rt::span_of(out));
    const auto ref = rt::ref::forward(g, image.data(), lors);
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const auto a = lors.start(i), b = lors.end(i);
      const double tol = 1e-6 * (std::abs(ref[i]) + 1e-30) *
                         (std::is_same<T, float>::value ? 1.0 : 1e-8);
      EXPECT_NEAR(double(out[i]), ref[i], tol)
          << "LOR " << i << " (" << a[0] << ", " << a[1] << ", " << a[2] << ") -> ("
          << b[0] << ", " << b[1] << ", " << b[2] << ")";
      if (ref[i] == 0.0) { // misses, zero length, corner touch: exactly 0
        EXPECT_EQ(out[i], T(0)) << "LOR " << i;
      }
    }
  }
}

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
