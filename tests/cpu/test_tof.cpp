// CPU TOF projections (cpu::forward / cpu::back with op::tof_sinogram and
// op::tof_listmode), float and double, against docs/projection.md "TOF":
// start/end swap symmetry, a point source, adjointness with every
// accumulation strategy, per-LOR sigma/offset arrays, windows wider than 64
// bins and argument checks. Sum over bins == non-TOF, list-mode ==
// sinogram and the float64 reference are checked for every executor by the
// contract suite (tests/contract).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/tof_reference.hpp"
#include "common/tof_setup.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/cpu/projector.hpp"

namespace rt = resproj_test;
namespace cpu = resproj::cpu;
namespace op = resproj::op;

namespace {

template <class T> class CpuTof : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CpuTof, value_types);

template <class T> constexpr bool is_float() { return std::is_same<T, float>::value; }

using resproj_test::params_of;
using resproj_test::rounded;

using resproj_test::max_position;
using resproj_test::randomise_per_lor;

template <class T>
std::vector<T> sino(const rt::grid &g, const std::vector<T> &img,
                    const rt::lor_set<T> &lors, const resproj::tof_params<T> &tof) {
  std::vector<T> out(lors.size() * std::size_t(tof.num_bins), T(-1));
  cpu::forward(op::tof_sinogram{tof}, rt::cimage_of(img, g), rt::view_of(lors),
               rt::span_of(out));
  return out;
}

template <class T>
std::vector<T> lm(const rt::grid &g, const std::vector<T> &img,
                  const rt::lor_set<T> &lors, const std::vector<std::int16_t> &bins,
                  const resproj::tof_params<T> &tof) {
  std::vector<T> out(lors.size(), T(-1));
  cpu::forward(op::tof_listmode{tof, rt::cspan_of(bins)}, rt::cimage_of(img, g),
               rt::view_of(lors), rt::span_of(out));
  return out;
}

std::vector<std::int16_t> random_bins(std::size_t n, int num_bins, std::uint64_t seed,
                                      int outside = 0) {
  rt::rng r(seed);
  std::vector<std::int16_t> b(n);
  for (auto &v : b)
    v = std::int16_t(int(r.below(std::uint64_t(num_bins + 2 * outside))) - outside);
  return b;
}

const rt::grid kGrid = rt::grid::centred({24, 20, 12}, {2.0, 2.5, 4.0});

// Swapping start and end, reversing the bins and negating the offset gives
// the same numbers (sinogram and list-mode); rare decision flips allowed.
TYPED_TEST(CpuTof, SwapReverseNegate) {
  using T = TypeParam;
  const double tol = is_float<T>() ? 1e-4 : 1e-10;
  auto lors = rt::outside_lors<T>(kGrid, 2000, 41);
  lors.append(rt::anywhere_lors<T>(kGrid, 1000, 42));
  rt::lor_set<T> swapped;
  swapped.starts = lors.ends;
  swapped.ends = lors.starts;
  const auto img = rt::random_values<T>(std::size_t(kGrid.num_voxels()), 43, 0.5, 1.5);
  rt::ref::tof_setup s;
  s.bin_width = 5;
  s.num_bins = 21;
  s.num_sigmas = 2.5;
  randomise_per_lor(s, lors.size(), 44, 3, 20, 15);
  rt::ref::tof_setup neg = s;
  for (auto &d : neg.center_offsets)
    d = -d;
  std::vector<T> sig, off, sig2, off2;
  const auto tof = params_of<T>(s, sig, off), tof_neg = params_of<T>(neg, sig2, off2);
  const auto out = sino(kGrid, img, lors, tof);
  const auto rev = sino(kGrid, img, swapped, tof_neg);
  const std::size_t N = 21;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    double row_max = 0;
    for (std::size_t j = 0; j < N; ++j)
      row_max = std::max(row_max, std::fabs(double(out[i * N + j])));
    for (std::size_t j = 0; j < N; ++j)
      bad += std::fabs(double(out[i * N + j]) - double(rev[i * N + N - 1 - j])) >
             tol * row_max;
  }
  EXPECT_LE(bad, out.size() / 1000) << bad << " of " << out.size() << " entries differ";
  rt::note("swap symmetry: " + std::to_string(bad) + " of " + std::to_string(out.size()) +
           " sinogram entries differ");

  const auto bins = random_bins(lors.size(), s.num_bins, 45);
  std::vector<std::int16_t> rbins(bins.size());
  for (std::size_t i = 0; i < bins.size(); ++i)
    rbins[i] = std::int16_t(s.num_bins - 1 - bins[i]);
  const auto ev = lm(kGrid, img, lors, bins, tof);
  const auto ev_rev = lm(kGrid, img, swapped, rbins, tof_neg);
  std::size_t bad_lm = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    double row_max = 0;
    for (std::size_t j = 0; j < N; ++j)
      row_max = std::max(row_max, std::fabs(double(out[i * N + j])));
    bad_lm += std::fabs(double(ev[i]) - double(ev_rev[i])) > tol * row_max;
  }
  EXPECT_LE(bad_lm, std::max<std::size_t>(1, lors.size() / 1000));
}

// A single hot voxel on LORs through its centre: the profile peaks at the
// bin containing the source, measured from the LOR midpoint towards the
// end point, and moves by k bins when the offset changes by k * w.
TYPED_TEST(CpuTof, PointSource) {
  using T = TypeParam;
  const rt::grid g = rt::grid::centred({21, 21, 21}, {2.0, 2.0, 2.0});
  std::vector<T> img(std::size_t(g.num_voxels()), T(0));
  img[std::size_t(g.index(13, 10, 10))] = T(1); // source at x = (6, 0, 0)
  const int N = 9;
  const double w = 5;
  struct lor_case {
    double a0, b0; // LOR (a0, 0, 0) -> (b0, 0, 0)
    int peak;      // bin of the source with zero offset
  };
  // s = 6 - midpoint, signed towards b; bin j centred at (j - 4) * 5.
  const lor_case cases[] = {
      {-100, 100, 5}, // s = 6
      {100, -100, 3}, // s = -6: reversed
      {-60, 100, 1},  // midpoint 20: s = -14
      {100, -60, 7},  // s = 14
  };
  for (const auto &c : cases) {
    rt::lor_set<T> l;
    l.push(std::array<double, 3>{c.a0, 0, 0}, std::array<double, 3>{c.b0, 0, 0});
    std::vector<T> base;
    for (const int k : {0, -3, -2, -1, 1, 2, 3}) { // k = 0 first: the base
      resproj::tof_params<T> tof;
      tof.bin_width = T(w);
      tof.num_bins = N;
      tof.sigma = T(4);
      tof.num_sigmas = 3;
      tof.center_offset = T(k * w);
      const auto row = sino(g, img, l, tof);
      const auto peak = std::max_element(row.begin(), row.end()) - row.begin();
      const int expected = c.peak - k; // bins moved k bins towards b
      if (expected >= 0 && expected < N) {
        EXPECT_EQ(peak, expected)
            << "LOR " << c.a0 << " -> " << c.b0 << " offset " << k * w;
      }
      if (k == 0) {
        base = row;
        double sum = 0;
        for (const T v : row)
          sum += double(v);
        EXPECT_GT(row[std::size_t(c.peak)], T(0.3 * sum));
        continue;
      }
      for (int j = 0; j < N; ++j)
        if (j + k >= 0 && j + k < N) {
          EXPECT_NEAR(double(row[std::size_t(j)]), double(base[std::size_t(j + k)]),
                      1e-5 * double(base[std::size_t(c.peak)]))
              << "LOR " << c.a0 << " -> " << c.b0 << " offset " << k * w << " bin " << j;
        }
    }
  }
}

// <A x, y> == <x, A^T y> for the sinogram and the list-mode pair, with
// every accumulation strategy (and one thread).
TYPED_TEST(CpuTof, Adjointness) {
  using T = TypeParam;
  const double tol = rt::bounds<T>::adjoint;
  auto lors = rt::outside_lors<T>(kGrid, 1500, 51);
  lors.append(rt::anywhere_lors<T>(kGrid, 1500, 52));
  const auto x = rt::random_values<T>(std::size_t(kGrid.num_voxels()), 53, 0.0, 1.0);
  rt::ref::tof_setup s;
  s.bin_width = 6;
  s.num_bins = 17;
  s.num_sigmas = 3;
  randomise_per_lor(s, lors.size(), 54, 2, 25, 20);
  std::vector<T> sig, off;
  const auto tof = params_of<T>(s, sig, off);
  const std::size_t n = lors.size(), N = 17;
  const auto y = rt::random_values<T>(n * N, 55, 0.0, 1.0);
  const auto ax = sino(kGrid, x, lors, tof);
  const auto bins = random_bins(n, s.num_bins, 56, 1);
  const auto y_lm = rt::random_values<T>(n, 57, 0.0, 1.0);
  const auto ax_lm = lm(kGrid, x, lors, bins, tof);

  cpu::options opts[3];
  opts[1].accumulation = cpu::back_accumulation::atomic;
  opts[2].num_threads = 1;
  std::vector<T> first_sino, first_lm;
  for (const auto &opt : opts) {
    std::vector<T> aty(x.size(), T(0)), aty_lm(x.size(), T(0));
    cpu::back(op::tof_sinogram{tof}, rt::image_of(aty, kGrid), rt::view_of(lors),
              rt::cspan_of(y), opt);
    cpu::back(op::tof_listmode{tof, rt::cspan_of(bins)}, rt::image_of(aty_lm, kGrid),
              rt::view_of(lors), rt::cspan_of(y_lm), opt);
    EXPECT_LT(rt::adjoint_mismatch(rt::dot(ax, y), rt::dot(x, aty)), tol);
    EXPECT_LT(rt::adjoint_mismatch(rt::dot(ax_lm, y_lm), rt::dot(x, aty_lm)), tol);
    if (first_sino.empty()) {
      first_sino = aty;
      first_lm = aty_lm;
    } else {
      EXPECT_LT(rt::rel_norm_diff(aty, first_sino), rt::bounds<T>::same_image);
      EXPECT_LT(rt::rel_norm_diff(aty_lm, first_lm), rt::bounds<T>::same_image);
    }
  }
  EXPECT_GT(rt::dot(ax_lm, y_lm), 0.0);
}

// Per-LOR arrays: each LOR gets its own sigma and offset (same numbers as
// a call over that LOR alone with scalar parameters).
TYPED_TEST(CpuTof, PerLorArrays) {
  using T = TypeParam;
  const auto lors = rt::outside_lors<T>(kGrid, 200, 71);
  const auto img = rt::random_values<T>(std::size_t(kGrid.num_voxels()), 72, 0.5, 1.5);
  rt::ref::tof_setup s;
  s.bin_width = 6;
  s.num_bins = 19;
  s.sigma = 1e6; // must not be used
  s.center_offset = 1e6;
  randomise_per_lor(s, lors.size(), 73, 2, 30, 30);
  std::vector<T> sig, off;
  const auto tof = params_of<T>(s, sig, off);
  const auto out = sino(kGrid, img, lors, tof);
  const auto bins = random_bins(lors.size(), s.num_bins, 74);
  const auto ev = lm(kGrid, img, lors, bins, tof);
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    rt::lor_set<T> one;
    one.push(lors.start(i), lors.end(i));
    resproj::tof_params<T> scalar = tof;
    scalar.sigmas = {};
    scalar.center_offsets = {};
    scalar.sigma = sig[i];
    scalar.center_offset = off[i];
    const auto row = sino(kGrid, img, one, scalar);
    for (std::size_t j = 0; j < 19; ++j) {
      ASSERT_EQ(out[i * 19 + j], row[j]) << "LOR " << i << " bin " << j;
      nonzero += row[j] != T(0);
    }
    const std::vector<std::int16_t> b1 = {bins[i]};
    ASSERT_EQ(ev[i], lm(kGrid, img, one, b1, scalar)[0]) << "event " << i;
  }
  EXPECT_GT(nonzero, 200u);
}

// Windows much wider than 64 bins (fine bins): sum over bins == non-TOF,
// list-mode == sinogram, and the reference agrees.
TYPED_TEST(CpuTof, WideWindows) {
  using T = TypeParam;
  const double tol = is_float<T>() ? 2e-5 : 1e-12;
  const rt::grid g = rt::grid::centred({16, 14, 8}, {2.0, 2.0, 2.0});
  const auto lors = rt::outside_lors<T>(g, 150, 81);
  const auto img = rt::random_values<T>(std::size_t(g.num_voxels()), 82, 0.5, 1.5);
  rt::ref::tof_setup s;
  s.bin_width = 0.25;
  s.sigma = 12; // reach 144 bins: windows of ~290 bins
  s.num_sigmas = 3;
  double need = 0;
  for (std::size_t i = 0; i < lors.size(); ++i)
    need = std::max(need, max_position(g, lors, i) / s.bin_width);
  need += s.num_sigmas * s.sigma / s.bin_width + 1;
  s.num_bins = 2 * int(std::ceil(need)) + 3;
  ASSERT_LT(need, (s.num_bins - 1) / 2.0);
  std::vector<T> sig, off;
  const auto tof = params_of<T>(s, sig, off);
  const std::size_t N = std::size_t(s.num_bins);
  const auto out = sino(g, img, lors, tof);
  std::vector<T> nontof(lors.size());
  cpu::forward(op::non_tof{}, rt::cimage_of(img, g), rt::view_of(lors),
               rt::span_of(nontof));
  for (std::size_t i = 0; i < lors.size(); ++i) {
    double sum = 0;
    std::size_t bins_hit = 0;
    for (std::size_t j = 0; j < N; ++j) {
      sum += double(out[i * N + j]);
      bins_hit += out[i * N + j] != T(0);
    }
    ASSERT_NEAR(sum, double(nontof[i]), tol * std::fabs(double(nontof[i])))
        << "LOR " << i;
    if (nontof[i] != T(0)) {
      ASSERT_GT(bins_hit, 200u) << "LOR " << i;
    }
  }
  const auto bins = random_bins(lors.size(), s.num_bins, 83);
  const auto ev = lm(g, img, lors, bins, tof);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const double want = double(out[i * N + std::size_t(bins[i])]);
    ASSERT_NEAR(double(ev[i]), want, 2 * tol * std::fabs(want)) << "event " << i;
  }
  const auto ref = rt::ref::forward_tof_sino(g, img.data(), lors, rounded<T>(s));
  EXPECT_TRUE(rt::within_bounds(rt::compare_tof_rows(out, ref, N), tol));
}

// Bad arguments throw invalid_argument naming the argument, with the
// output (or image) untouched.
TYPED_TEST(CpuTof, BadArgumentsThrow) {
  using T = TypeParam;
  const auto lors = rt::outside_lors<T>(kGrid, 10, 91);
  const std::size_t n = lors.size();
  auto img = rt::random_values<T>(std::size_t(kGrid.num_voxels()), 92, 0.5, 1.5);
  resproj::tof_params<T> good;
  good.bin_width = 5;
  good.num_bins = 7;
  good.sigma = 10;
  good.num_sigmas = 3;
  const std::vector<T> short_array(n - 1, T(1));
  const T nan = std::numeric_limits<T>::quiet_NaN();
  struct tof_case {
    const char *name;
    resproj::tof_params<T> tof;
  };
  std::vector<tof_case> cases;
  auto add = [&](const char *name, auto change) {
    tof_case c{name, good};
    change(c.tof);
    cases.push_back(c);
  };
  add("tof.bin_width", [](resproj::tof_params<T> &t) { t.bin_width = 0; });
  add("tof.bin_width", [&](resproj::tof_params<T> &t) { t.bin_width = nan; });
  add("tof.sigma", [](resproj::tof_params<T> &t) { t.sigma = -1; });
  add("tof.num_sigmas", [](resproj::tof_params<T> &t) { t.num_sigmas = 0; });
  add("tof.num_bins", [](resproj::tof_params<T> &t) { t.num_bins = 0; });
  add("tof.sigmas",
      [&](resproj::tof_params<T> &t) { t.sigmas = rt::cspan_of(short_array); });
  add("tof.center_offsets",
      [&](resproj::tof_params<T> &t) { t.center_offsets = rt::cspan_of(short_array); });
  const T inf = std::numeric_limits<T>::infinity();
  add("tof.sigma", [&](resproj::tof_params<T> &t) { t.sigma = nan; });
  add("tof.center_offset", [&](resproj::tof_params<T> &t) { t.center_offset = nan; });
  add("tof.center_offset", [&](resproj::tof_params<T> &t) { t.center_offset = -inf; });
  add("tof.sigmas",
      [&](resproj::tof_params<T> &t) { t.sigmas = resproj::span<const T>(nullptr, n); });
  add("tof.center_offsets", [&](resproj::tof_params<T> &t) {
    t.center_offsets = resproj::span<const T>(nullptr, n);
  });

  const std::vector<std::int16_t> bins(n, 3), short_bins(n - 1, 3);
  const std::vector<T> values(n * 7, T(1));
  const T sentinel = T(7.5);
  auto expect_throw = [&](const std::string &name, auto call,
                          const std::vector<T> &watched, const std::vector<T> &before) {
    try {
      call();
      ADD_FAILURE() << "no exception, expected one naming " << name;
    } catch (const resproj::invalid_argument &e) {
      EXPECT_EQ(e.argument(), name) << e.what();
    }
    EXPECT_EQ(watched, before) << name << ": output written before the check";
  };
  const auto img_before = img;
  for (const auto &c : cases) {
    std::vector<T> out(n * 7, sentinel);
    const auto out_before = out;
    expect_throw(
        c.name,
        [&] {
          cpu::forward(op::tof_sinogram{c.tof}, rt::cimage_of(img, kGrid),
                       rt::view_of(lors), rt::span_of(out));
        },
        out, out_before);
    expect_throw(
        c.name,
        [&] {
          cpu::forward(op::tof_listmode{c.tof, rt::cspan_of(bins)},
                       rt::cimage_of(img, kGrid), rt::view_of(lors), rt::span_of(out));
        },
        out, out_before);
    expect_throw(
        c.name,
        [&] {
          cpu::back(op::tof_sinogram{c.tof}, rt::image_of(img, kGrid), rt::view_of(lors),
                    rt::cspan_of(values));
        },
        img, img_before);
    expect_throw(
        c.name,
        [&] {
          cpu::back(op::tof_listmode{c.tof, rt::cspan_of(bins)}, rt::image_of(img, kGrid),
                    rt::view_of(lors), rt::cspan_of(values));
        },
        img, img_before);
  }
  // Sizes.
  std::vector<T> small(n * 7 - 1, sentinel);
  const auto small_before = small;
  expect_throw(
      "out",
      [&] {
        cpu::forward(op::tof_sinogram{good}, rt::cimage_of(img, kGrid), rt::view_of(lors),
                     rt::span_of(small));
      },
      small, small_before);
  std::vector<T> lm_out(n, sentinel), lm_small(n - 1, sentinel);
  const auto lm_before = lm_out, lm_small_before = lm_small;
  expect_throw(
      "out",
      [&] {
        cpu::forward(op::tof_listmode{good, rt::cspan_of(bins)},
                     rt::cimage_of(img, kGrid), rt::view_of(lors), rt::span_of(lm_small));
      },
      lm_small, lm_small_before);
  expect_throw(
      "bins",
      [&] {
        cpu::forward(op::tof_listmode{good, rt::cspan_of(short_bins)},
                     rt::cimage_of(img, kGrid), rt::view_of(lors), rt::span_of(lm_out));
      },
      lm_out, lm_before);
  expect_throw(
      "bins",
      [&] {
        cpu::back(op::tof_listmode{good, rt::cspan_of(short_bins)},
                  rt::image_of(img, kGrid), rt::view_of(lors), rt::cspan_of(values));
      },
      img, img_before);
  const std::vector<T> few(n * 7 - 1, T(1));
  expect_throw(
      "values",
      [&] {
        cpu::back(op::tof_sinogram{good}, rt::image_of(img, kGrid), rt::view_of(lors),
                  rt::cspan_of(few));
      },
      img, img_before);
  expect_throw(
      "values",
      [&] {
        cpu::back(op::tof_listmode{good, rt::cspan_of(bins)}, rt::image_of(img, kGrid),
                  rt::view_of(lors), rt::cspan_of(std::vector<T>(n - 1, T(1))));
      },
      img, img_before);
  auto huge = good;
  huge.num_bins = 40000; // list-mode bins are 16-bit
  expect_throw(
      "tof.num_bins",
      [&] {
        cpu::forward(op::tof_listmode{huge, rt::cspan_of(bins)},
                     rt::cimage_of(img, kGrid), rt::view_of(lors), rt::span_of(lm_out));
      },
      lm_out, lm_before);
  expect_throw(
      "tof.num_bins",
      [&] {
        cpu::back(op::tof_listmode{huge, rt::cspan_of(bins)}, rt::image_of(img, kGrid),
                  rt::view_of(lors), rt::cspan_of(values));
      },
      img, img_before);
  // An empty call with no arrays is fine.
  EXPECT_NO_THROW(cpu::forward(op::tof_sinogram{good}, rt::cimage_of(img, kGrid),
                               resproj::lor_view<const T>(nullptr, nullptr, 0),
                               resproj::span<T>()));
}

} // namespace
