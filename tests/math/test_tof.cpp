// The shared TOF math (math/tof.hpp) against docs/projection.md "TOF": the
// worked example, tail accuracy against a long-double erfc reference
// (tests/common/tof_reference.hpp), windows wider than 64 bins, list-mode
// weight == sinogram weight, the list-mode plane range being a superset of
// the planes with a non-zero weight, and the speed variants of the
// per-LOR loops (sample first, adders that scatter whole samples) giving
// the same numbers; math::fast_erfc against double erfc, and the weights
// with it against the default ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/tof_reference.hpp"
#include "resproj/math/fast_erfc.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/tof.hpp"
#include "resproj/math/tof_projection.hpp"

namespace rt = resproj_test;
namespace math = resproj::math;

namespace {

template <class T> class TofMath : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(TofMath, value_types);

/// The weights for_each_tof_weight gives, indexed by bin (0 where none).
template <class T>
std::vector<T> weights_of(const math::tof_lor<T> &tl, T s, int *calls = nullptr) {
  std::vector<T> w(std::size_t(tl.num_bins), T(0));
  std::int64_t prev = -1;
  int n = 0;
  math::for_each_tof_weight(tl, s, [&](std::int64_t j, T wj) {
    EXPECT_GT(j, prev); // increasing, each bin once
    EXPECT_GE(j, 0);
    EXPECT_LT(j, tl.num_bins);
    prev = j;
    w[std::size_t(j)] = wj;
    ++n;
  });
  if (calls)
    *calls = n;
  return w;
}

/// K_j = Gaussian integrated over bin j, from the library's edge functions.
template <class T> double kernel_of(const math::tof_lor<T> &tl, T s, std::int64_t j) {
  const T xa = math::edge_coordinate(tl, s, j), xb = math::edge_coordinate(tl, s, j + 1);
  return 0.5 * double(math::edge_difference(xa, math::edge_value(xa), xb,
                                            math::edge_value(xb)));
}

rt::ref::tof_lor_params ref_params(double w, int n, double sigma, double delta,
                                   double n_sigma) {
  rt::ref::tof_lor_params p;
  p.bin_width = w;
  p.num_bins = n;
  p.sigma = sigma;
  p.center_offset = delta;
  p.num_sigmas = n_sigma;
  return p;
}

// docs/projection.md, worked example: N = 5, w = 10, sigma = 8, delta = 2,
// n_sigma = 2, s = 13.
TYPED_TEST(TofMath, WorkedExample) {
  using T = TypeParam;
  const auto tl = math::make_tof_lor<T>(10, 5, 8, 2, 2);
  const T s = 13;
  EXPECT_NEAR(double(math::tof_bin_coordinate(tl, s)), 3.1, 1e-6);
  int first, last;
  math::tof_window(tl, s, first, last);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(last, 5);
  const double K[5] = {0.0222, 0.2039, 0.4648, 0.2685, 0.0387};
  double W = 0;
  for (int j = 1; j <= 5; ++j) {
    EXPECT_NEAR(kernel_of(tl, s, j), K[j - 1], 5e-5) << "bin " << j;
    W += kernel_of(tl, s, j);
  }
  EXPECT_NEAR(W, 0.9981, 5e-5);
  int calls = 0;
  const auto w = weights_of(tl, s, &calls);
  EXPECT_EQ(calls, 4); // bins 1..4; bin 5 is outside 0..4 and dropped
  const double expected[5] = {0, 0.0222, 0.2043, 0.4657, 0.2690};
  for (int j = 0; j < 5; ++j)
    EXPECT_NEAR(double(w[std::size_t(j)]), expected[j], 5e-5) << "bin " << j;
  // And the independent reference agrees.
  const auto p = ref_params(10, 5, 8, 2, 2);
  rt::ref::for_each_tof_weight(p, 13.0, [&](std::int64_t j, double wj) {
    EXPECT_NEAR(wj, expected[j], 5e-5) << "reference bin " << j;
  });
}

// Far in the tails erf(x1) - erf(x2) cancels to 0 (both ~ +-1); the
// library must keep the relative accuracy of the tiny weights (erfc).
TYPED_TEST(TofMath, TailAccuracy) {
  using T = TypeParam;
  const double tol = std::is_same<T, float>::value ? 2e-4 : 1e-10;
  const int N = 61;
  const double w = 1, sigma = 1, n_sigma = 12; // window +-12 sigma
  const auto tl = math::make_tof_lor<T>(T(w), N, T(sigma), T(0), T(n_sigma));
  const auto p = ref_params(w, N, sigma, 0, n_sigma);
  int checked_far = 0;
  for (const double s : {0.0, 0.25, -3.5, 7.125, -10.375}) {
    const auto got = weights_of(tl, T(s));
    std::vector<double> want(std::size_t(N), 0.0);
    rt::ref::for_each_tof_weight(
        p, s, [&](std::int64_t j, double wj) { want[std::size_t(j)] = wj; });
    for (int j = 0; j < N; ++j) {
      const double ws = want[std::size_t(j)], gs = double(got[std::size_t(j)]);
      if (ws < 1e-30) { // beyond float's comfortable range
        continue;
      }
      EXPECT_NEAR(gs / ws, 1.0, tol) << "s " << s << " bin " << j << " ref " << ws;
      // Plain erf differences would give 0 below ~1e-16 (double) / 1e-7.
      if (ws < 1e-17)
        ++checked_far;
    }
  }
  EXPECT_GT(checked_far, 10);
}

// Windows far wider than 64 bins: every bin visited, weights sum to 1
// when the window is inside [0, N-1], and they match the reference.
TYPED_TEST(TofMath, WideWindows) {
  using T = TypeParam;
  const double tol = std::is_same<T, float>::value ? 1e-5 : 1e-12;
  const int N = 1001;
  const double w = 0.5, sigma = 20, n_sigma = 3; // reach 120 bins
  const auto tl = math::make_tof_lor<T>(T(w), N, T(sigma), T(1.25), T(n_sigma));
  const auto p = ref_params(w, N, sigma, 1.25, n_sigma);
  for (const double s : {0.0, 3.3, -17.9, 60.0}) {
    int calls = 0;
    const auto got = weights_of(tl, T(s), &calls);
    EXPECT_GE(calls, 241);
    double sum = 0, max_diff = 0;
    rt::ref::for_each_tof_weight(p, s, [&](std::int64_t j, double wj) {
      max_diff = std::max(max_diff, std::fabs(double(got[std::size_t(j)]) - wj));
    });
    for (const T v : got)
      sum += double(v);
    EXPECT_NEAR(sum, 1.0, tol) << "s " << s;
    EXPECT_LT(max_diff, tol * 0.1) << "s " << s;
  }
  // Window partly outside: the sum is below 1.
  const auto edge = weights_of(tl, T(-0.5 * N * w));
  double sum = 0;
  for (const T v : edge)
    sum += double(v);
  EXPECT_LT(sum, 0.6);
  EXPECT_GT(sum, 0.4);
}

// tof_weight(j) is the value for_each_tof_weight gives bin j, bit for bit,
// and 0 outside the window or outside [0, N-1].
TYPED_TEST(TofMath, SingleWeightMatchesLoop) {
  using T = TypeParam;
  rt::rng r(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int N = 1 + int(r.below(40));
    const T w = T(r.uniform(0.5, 20)), sigma = T(r.uniform(0.3, 40));
    const T delta = T(r.uniform(-30, 30)), ns = T(r.uniform(0.5, 4));
    const auto tl = math::make_tof_lor(w, N, sigma, delta, ns);
    const T s = T(r.uniform(-1.2, 1.2) * (N * double(w) / 2 + 3 * double(sigma)));
    const auto all = weights_of(tl, s);
    for (int j = -3; j < N + 3; ++j) {
      const T single = math::tof_weight(tl, s, j);
      const T loop = (j >= 0 && j < N) ? all[std::size_t(j)] : T(0);
      ASSERT_EQ(single, loop) << "trial " << trial << " bin " << j;
    }
  }
}

// tof_plane_range(bin) contains every plane whose window holds the bin,
// lies inside the ray's planes and is tight: the window of its first and
// of its last plane holds the bin.
TYPED_TEST(TofMath, PlaneRangeIsTight) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({30, 26, 14}, {2.0, 2.5, 3.0});
  const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
  const auto lors = rt::anywhere_lors<T>(g, 3000, 5);
  rt::rng r(12);
  std::int64_t useful = 0, visited = 0, total = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    T a[3], b[3];
    resproj::lor_view<const T>(lors.starts.data(), lors.ends.data(), lors.size())
        .load(i, a, b);
    const auto ray = math::make_joseph_ray(grid, a, b);
    if (ray.empty())
      continue;
    const int N = 1 + int(r.below(30));
    const auto tl = math::make_tof_lor(T(r.uniform(1, 15)), N, T(r.uniform(0.5, 20)),
                                       T(r.uniform(-20, 20)), T(r.uniform(1, 4)));
    for (int j = 0; j < N; ++j) {
      std::int64_t lo, hi;
      math::tof_plane_range(ray, tl, j, lo, hi);
      if (lo <= hi) {
        ASSERT_GE(lo, ray.first_plane);
        ASSERT_LE(hi, ray.last_plane);
        ASSERT_TRUE(math::tof_window_holds(ray, tl, lo, j))
            << "LOR " << i << " bin " << j;
        ASSERT_TRUE(math::tof_window_holds(ray, tl, hi, j))
            << "LOR " << i << " bin " << j;
        visited += hi - lo + 1;
      }
      total += ray.num_planes();
      for (std::int64_t p = ray.first_plane; p <= ray.last_plane; ++p) {
        const T wj = math::tof_weight(tl, math::tof_position(ray, p), j);
        if (wj != T(0))
          ++useful;
        if (p < lo || p > hi) {
          ASSERT_EQ(wj, T(0)) << "LOR " << i << " bin " << j << " plane " << p
                              << " outside [" << lo << ", " << hi << "]";
        }
      }
    }
  }
  EXPECT_GT(useful, 0);
  EXPECT_LT(visited, total); // it does limit the planes
}

/// Adder that scatters whole samples (the hook of math/tof_projection.hpp,
/// as the GPU's vector-atomic adder): records them, and adds like scatter.
template <class T> struct sample_adder {
  static constexpr bool scatters_samples = true;
  int *samples;
  template <class I>
  void scatter_sample(T *image, const math::joseph_ray<T> &r, std::int64_t p,
                      T value) const {
    ++*samples;
    math::scatter<I>(image, r, p, value, [](T *v, T amount) { *v += amount; });
  }
};

// forward_tof_lm_planes with SampleFirst equals the default bit for bit
// (same terms, same order) on an image with many zeros; back projections
// through a sample adder call it once per non-zero sample and add the same.
TYPED_TEST(TofMath, SpeedVariantsGiveTheSameNumbers) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({24, 20, 12}, {2.0, 2.5, 3.0});
  const auto grid = math::image_grid<T>::from(rt::geometry_of(g));
  const auto lors = rt::anywhere_lors<T>(g, 2000, 9);
  rt::rng r(31);
  std::vector<T> image(std::size_t(g.num_voxels()));
  for (auto &v : image)
    v = r.below(2) == 0 ? T(0) : T(r.uniform(0.1, 2)); // half zeros
  std::vector<T> plain(image.size(), T(0)), hooked(image.size(), T(0));
  int samples = 0, nonzero = 0, compared = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    T a[3], b[3];
    resproj::lor_view<const T>(lors.starts.data(), lors.ends.data(), lors.size())
        .load(i, a, b);
    const auto ray = math::make_joseph_ray(grid, a, b);
    const int N = 1 + int(r.below(30));
    const auto tl = math::make_tof_lor(T(r.uniform(1, 15)), N, T(r.uniform(0.5, 20)),
                                       T(r.uniform(-20, 20)), T(r.uniform(1, 4)));
    const std::int64_t bin = std::int64_t(r.below(std::uint64_t(N)));
    for (std::int64_t stride : {1, 3}) {
      const T weight_first = math::forward_tof_lm_planes<std::int64_t, false>(
          image.data(), ray, tl, bin, ray.first_plane, stride);
      const T sample_first = math::forward_tof_lm_planes<std::int64_t, true>(
          image.data(), ray, tl, bin, ray.first_plane, stride);
      ASSERT_EQ(weight_first, sample_first) << "LOR " << i << " stride " << stride;
      compared += weight_first != T(0);
    }
    math::back_tof_lm_planes<std::int64_t>(plain.data(), ray, tl, bin, T(1.5),
                                           ray.first_plane, 1,
                                           [](T *v, T amount) { *v += amount; });
    const sample_adder<T> add{&samples};
    math::back_tof_lm_planes<std::int64_t>(hooked.data(), ray, tl, bin, T(1.5),
                                           ray.first_plane, 1, add);
    if (!ray.empty()) {
      std::int64_t lo, hi;
      math::tof_plane_range(ray, tl, bin, lo, hi);
      for (std::int64_t p = lo; p <= hi; ++p)
        nonzero += math::tof_weight(tl, math::tof_position(ray, p), bin) != T(0);
    }
  }
  EXPECT_GT(compared, 100);
  EXPECT_EQ(samples, nonzero);
  EXPECT_EQ(plain, hooked);
}

// math::fast_erfc (float, host form) against double erfc over [0, 9]
// (erfc down to 4e-37; every edge value of a window of up to 12 sigma):
// the file comment's bounds (relative 1e-6 up to x = 3.5, 5e-6 up to 9,
// absolute 5e-7); underflow to 0, NaN kept; the double overload is the
// library erfc.
TEST(FastErfc, ErrorAgainstDoubleErfc) {
  double worst_near = 0, worst_far = 0, worst_abs = 0, worst_x = 0;
  for (int i = 0; i <= 900000; ++i) {
    const float x = float(i) * 1e-5f;
    const double ref = std::erfc(double(x));
    const double fast = double(math::fast_erfc(x));
    const double e = std::abs(fast / ref - 1.0);
    if (x <= 3.5f && e > worst_near) {
      worst_near = e;
      worst_x = x;
    }
    worst_far = std::max(worst_far, e);
    worst_abs = std::max(worst_abs, std::abs(fast - ref));
  }
  EXPECT_LT(worst_near, 1e-6) << "at x = " << worst_x;
  EXPECT_LT(worst_far, 5e-6);
  EXPECT_LT(worst_abs, 5e-7);
  EXPECT_GT(worst_abs, 0.0); // it is an approximation, and this test can see it
  EXPECT_NEAR(math::fast_erfc(0.f), 1.f, 1e-6f);
  EXPECT_EQ(math::fast_erfc(10.5f), 0.f);
  EXPECT_EQ(math::fast_erfc(std::numeric_limits<float>::infinity()), 0.f);
  EXPECT_TRUE(std::isnan(math::fast_erfc(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(math::fast_erfc(0.75), std::erfc(0.75));
}

// Weights with tof_lor::fast_erfc agree with the default ones to 3e-6
// (absolute: weights are normalised to sum 1 over the window, and a
// narrow bin's weight is a difference of close edge values, so its
// relative error grows as its width shrinks, with either erfc), for random
// windows including clipped and wide ones; list-mode weights equal the
// sinogram weights bit for bit with it too.
TEST(FastErfc, WeightsAgreeWithTheDefault) {
  rt::rng r(77);
  int compared = 0;
  for (int k = 0; k < 3000; ++k) {
    const int N = 1 + int(r.below(60));
    auto tl = math::make_tof_lor(float(r.uniform(0.5, 15)), N, float(r.uniform(0.5, 20)),
                                 float(r.uniform(-20, 20)), float(r.uniform(1, 5)));
    const float s = float(r.uniform(-300, 300));
    const std::vector<float> ref = weights_of(tl, s);
    tl.fast_erfc = true;
    const std::vector<float> fast = weights_of(tl, s);
    for (int j = 0; j < N; ++j) {
      const float a = ref[std::size_t(j)], b = fast[std::size_t(j)];
      ASSERT_EQ(a == 0.f, b == 0.f) << "the window decision does not change";
      if (a != 0.f) {
        EXPECT_NEAR(b, a, 3e-6f) << "case " << k << " bin " << j;
        ++compared;
      }
      ASSERT_EQ(math::tof_weight(tl, s, j), b) << "case " << k << " bin " << j;
    }
  }
  EXPECT_GT(compared, 3000);
}

} // namespace
