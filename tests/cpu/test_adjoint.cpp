// CPU back projection as the transpose of forward projection, LOR by LOR
// (docs/projection.md "Back projection"; the dot-product test on random
// data, <A x, y> == <x, A^T y>, is in tests/contract for every executor);
// both accumulation strategies give the same image; back projection
// accumulates; results do not depend on thread count or on splitting the
// LORs into chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "resproj/cpu/projector.hpp"

namespace rt = resproj_test;
namespace cpu = resproj::cpu;
namespace op = resproj::op;

namespace {

template <class T> class Adjoint : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Adjoint, value_types);

struct named_grid {
  std::string name;
  rt::grid g;
};

std::vector<named_grid> grids() {
  rt::grid off;
  off.shape = {11, 9, 13};
  off.voxel_size = {2.34, 1.7, 3.1};
  off.origin = {-9.3, 4.1, -20.7};
  return {
      {"20x13x7 (2,1,4)", rt::grid::centred({20, 13, 7}, {2.0, 1.0, 4.0})},
      {"1x16x12 (3,2,2) thin in 0", rt::grid::centred({1, 16, 12}, {3.0, 2.0, 2.0})},
      {"15x15x1 (1,1,2.5) thin in 2",
       rt::grid::centred({15, 15, 1}, {1.0, 1.0, 2.5}, {2, 1, 0})},
      {"off-centre 11x9x13", off},
      {"1x1x1", rt::grid::centred({1, 1, 1}, {1.5, 2.0, 1.0})},
  };
}

template <class T>
std::vector<T> forward(const rt::grid &g, const std::vector<T> &x,
                       const rt::lor_set<T> &lors, const cpu::options &opt = {}) {
  std::vector<T> out(lors.size(), T(-1));
  cpu::forward(op::non_tof{}, rt::cimage_of(x, g), rt::view_of(lors), rt::span_of(out),
               opt);
  return out;
}

template <class T>
std::vector<T> back(const rt::grid &g, const rt::lor_set<T> &lors,
                    const std::vector<T> &y, const cpu::options &opt = {}) {
  std::vector<T> image(std::size_t(g.num_voxels()), T(0));
  cpu::back(op::non_tof{}, rt::image_of(image, g), rt::view_of(lors), rt::cspan_of(y),
            opt);
  return image;
}

// Per-LOR transposition: the back projection of a single unit value is the
// LOR's row, so <e_j, A^T e_i> == (A e_j)_i for every voxel j: checked
// through forward projections of random images against the back
// projection of each LOR alone.
TYPED_TEST(Adjoint, EachLorSeparately) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({6, 5, 4}, {2.0, 1.0, 4.0}, {0.5, -1.0, 2.0});
  auto lors = rt::anywhere_lors<T>(g, 200, 17);
  lors.append(rt::degenerate_lors<T>(g));
  const auto x = rt::random_values<T>(std::size_t(g.num_voxels()), 18, -1.0, 1.0);
  const auto ax = forward(g, x, lors);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    rt::lor_set<T> one;
    one.push(lors.start(i), lors.end(i));
    const auto row = back(g, one, std::vector<T>{T(1)},
                          cpu::options{cpu::back_accumulation::atomic, 1});
    const double via_back = rt::dot(row, x);
    const double scale = rt::dot(row, std::vector<T>(x.size(), T(1))) + 1e-300;
    EXPECT_NEAR(via_back, double(ax[i]), rt::bounds<T>::adjoint * scale) << "LOR " << i;
  }
}

// Both accumulation strategies (and any thread count) give the same image
// up to the order of float additions.
TYPED_TEST(Adjoint, AccumulationStrategiesAgree) {
  using T = TypeParam;
  for (const auto &ng : grids()) {
    const auto &g = ng.g;
    auto lors = rt::outside_lors<T>(g, 6000, 31);
    lors.append(rt::anywhere_lors<T>(g, 6000, 32));
    const auto y = rt::random_values<T>(lors.size(), 33);
    const auto serial = back(g, lors, y, cpu::options{cpu::back_accumulation::atomic, 1});
    const cpu::options variants[] = {
        {cpu::back_accumulation::atomic, 0},
        {cpu::back_accumulation::atomic, 2},
        {cpu::back_accumulation::thread_images, 2},
        {cpu::back_accumulation::thread_images, 3},
        {cpu::back_accumulation::thread_images, 1},
        {cpu::back_accumulation::thread_images, 0},
        {cpu::back_accumulation::automatic, 2},
        {cpu::back_accumulation::automatic, 0},
    };
    for (const auto &opt : variants) {
      const auto img = back(g, lors, y, opt);
      EXPECT_LT(rt::rel_norm_diff(img, serial), rt::bounds<T>::same_image)
          << ng.name << ", strategy " << int(opt.accumulation) << ", " << opt.num_threads
          << " threads";
    }
  }
}

// `automatic` takes per-thread images for large calls and atomics when
// zeroing and summing the copies would cost more than the projection.
TEST(BackAccumulation, AutomaticChoosesByCallSize) {
  using cpu::back_accumulation;
  const std::int64_t voxels = 215 * 215 * 71; // the dmi image
  EXPECT_EQ(
      cpu::detail::choose_accumulation(back_accumulation::automatic, 4302720, voxels, 16),
      back_accumulation::thread_images); // dmi-subset, 16 threads
  EXPECT_EQ(
      cpu::detail::choose_accumulation(back_accumulation::automatic, 15000, voxels, 32),
      back_accumulation::atomic); // a small list-mode subset, 32 threads
  EXPECT_EQ(
      cpu::detail::choose_accumulation(back_accumulation::atomic, 4302720, voxels, 16),
      back_accumulation::atomic); // an explicit choice is kept
  EXPECT_EQ(
      cpu::detail::choose_accumulation(back_accumulation::thread_images, 10, voxels, 32),
      back_accumulation::thread_images);
}

// Back projection adds to what is in the image: twice gives double, and
// into a non-zero image gives that image plus the back projection. For
// both strategies.
TYPED_TEST(Adjoint, BackProjectionAccumulates) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({12, 10, 8}, {2.0, 1.5, 3.0});
  const auto lors = rt::outside_lors<T>(g, 5000, 41);
  const auto y = rt::random_values<T>(lors.size(), 42);
  const auto start = rt::random_values<T>(std::size_t(g.num_voxels()), 43, 1.0, 2.0);
  for (auto acc :
       {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images}) {
    const cpu::options opt{acc, 2};
    const auto once = back(g, lors, y, opt);
    auto twice = once;
    cpu::back(op::non_tof{}, rt::image_of(twice, g), rt::view_of(lors), rt::cspan_of(y),
              opt);
    std::vector<double> expected_twice(once.size()), expected_sum(once.size());
    for (std::size_t i = 0; i < once.size(); ++i) {
      expected_twice[i] = 2.0 * double(once[i]);
      expected_sum[i] = double(start[i]) + double(once[i]);
    }
    EXPECT_LT(rt::rel_norm_diff(twice, expected_twice), rt::bounds<T>::same_image);
    auto onto = start;
    cpu::back(op::non_tof{}, rt::image_of(onto, g), rt::view_of(lors), rt::cspan_of(y),
              opt);
    EXPECT_LT(rt::rel_norm_diff(onto, expected_sum), rt::bounds<T>::same_image);
  }
}

// Forward projection is per LOR: bitwise the same for any thread count and
// when the LORs are projected in chunks through lor_view::subview and
// span::subspan.
TYPED_TEST(Adjoint, ForwardIsDeterministicAndChunkable) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({16, 12, 9}, {2.0, 2.5, 3.0}, {1, 2, 3});
  auto lors = rt::anywhere_lors<T>(g, 7000, 51);
  lors.append(rt::degenerate_lors<T>(g));
  const auto x = rt::random_values<T>(std::size_t(g.num_voxels()), 52);
  const auto ref = forward(g, x, lors, cpu::options{cpu::back_accumulation::atomic, 1});
  for (int threads : {0, 2, 3})
    EXPECT_EQ(forward(g, x, lors, cpu::options{cpu::back_accumulation::atomic, threads}),
              ref)
        << threads << " threads";
  std::vector<T> chunked(lors.size(), T(-1));
  const auto all = rt::view_of(lors);
  auto out = rt::span_of(chunked);
  for (std::size_t first = 0; first < lors.size(); first += 999) {
    const std::size_t n = std::min<std::size_t>(999, lors.size() - first);
    cpu::forward(op::non_tof{}, rt::cimage_of(x, g), all.subview(first, n),
                 out.subspan(first, n));
  }
  EXPECT_EQ(chunked, ref);
  // Back projection over chunks equals the one-call back projection.
  const auto y = rt::random_values<T>(lors.size(), 53);
  const auto whole = back(g, lors, y, cpu::options{cpu::back_accumulation::atomic, 1});
  std::vector<T> img(whole.size(), T(0));
  const auto ys = rt::cspan_of(y);
  for (std::size_t first = 0; first < lors.size(); first += 999) {
    const std::size_t n = std::min<std::size_t>(999, lors.size() - first);
    cpu::back(op::non_tof{}, rt::image_of(img, g), all.subview(first, n),
              ys.subspan(first, n));
  }
  EXPECT_LT(rt::rel_norm_diff(img, whole), rt::bounds<T>::same_image);
}

} // namespace
