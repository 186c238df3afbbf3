// The tb-lm event set (benchmarks/common/tb_problems.hpp): every generated
// pair's LOR crosses the image box, TOF bins in range, and the events do
// not depend on chunking or thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "../../benchmarks/common/tb_problems.hpp"
#include "common/expect.hpp"
#include "resproj/scanner/tb.hpp"

namespace rb = resproj_bench;
namespace rs = resproj::scanner;

namespace {

// Whether the segment p -> q meets the box [lo, hi] grown by `grow` on
// every side (slab method in double, written independently of math/).
bool segment_meets_box(const std::array<double, 3> &p, const std::array<double, 3> &q,
                       const resproj::image_geometry &g, double grow) {
  double lo = 0, hi = 1;
  for (int k = 0; k < 3; ++k) {
    const double b0 = g.box_min(k) - grow, b1 = g.box_max(k) + grow;
    const double d = q[std::size_t(k)] - p[std::size_t(k)];
    const double a = p[std::size_t(k)];
    if (d == 0) {
      if (a < b0 || a > b1)
        return false;
      continue;
    }
    double t0 = (b0 - a) / d, t1 = (b1 - a) / d;
    if (t0 > t1)
      std::swap(t0, t1);
    lo = std::max(lo, t0);
    hi = std::min(hi, t1);
  }
  return lo <= hi;
}

struct events {
  std::vector<std::int32_t> pairs;
  std::vector<std::int16_t> bins;
};

events generate(const rb::tb_lm_generator &gen, std::uint64_t first, std::size_t n,
                unsigned threads) {
  events e;
  e.pairs.resize(2 * n);
  e.bins.resize(n);
  gen.generate(first, resproj::span<std::int32_t>(e.pairs.data(), e.pairs.size()),
               resproj::span<std::int16_t>(e.bins.data(), e.bins.size()), threads);
  return e;
}

} // namespace

TEST(TbLmEvents, EveryLorCrossesTheImageAndBinsInRange) {
  const rb::tb_lm_generator gen;
  const auto s = rs::tb();
  const auto g = rs::tb_image_geometry();
  constexpr std::size_t n = 150000;
  const auto e = generate(gen, 0, n, 0);
  std::array<std::size_t, 41> bin_count{};
  std::size_t misses = 0, same = 0, min_ring = 672, max_ring = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t a = e.pairs[2 * i], b = e.pairs[2 * i + 1];
    ASSERT_GE(a, 0);
    ASSERT_LT(a, 564480);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, 564480);
    same += a == b;
    const auto ra = s.ring_and_crystal(a), rb_ = s.ring_and_crystal(b);
    const auto pa = s.crystal_position(ra.first, ra.second);
    const auto pb = s.crystal_position(rb_.first, rb_.second);
    // Float centres may round a grazing LOR in or out by a micrometre.
    misses += !segment_meets_box(pa, pb, g, 1e-3);
    min_ring = std::min({min_ring, std::size_t(ra.first), std::size_t(rb_.first)});
    max_ring = std::max({max_ring, std::size_t(ra.first), std::size_t(rb_.first)});
    ASSERT_GE(e.bins[i], rb::tb_lm_first_bin);
    ASSERT_LE(e.bins[i], rb::tb_lm_last_bin);
    ++bin_count[std::size_t(e.bins[i])];
  }
  EXPECT_EQ(misses, 0u);
  EXPECT_EQ(same, 0u);
  EXPECT_EQ(min_ring, 0u);
  EXPECT_EQ(max_ring, 671u);
  // 13 bins, each near n / 13 (binomial sd ~ 370).
  for (int b = 14; b <= 26; ++b)
    EXPECT_NEAR(double(bin_count[std::size_t(b)]), n / 13.0, 2500.0) << "bin " << b;
}

TEST(TbLmEvents, RedrawRuleRejectsExactlyTheMisses) {
  // Uniform pairs drawn here: the generator's test agrees with an
  // independent double-precision test away from grazing LORs, and a
  // sizeable share of pairs does miss (so the rule matters).
  const rb::tb_lm_generator gen;
  const auto s = rs::tb();
  const auto g = rs::tb_image_geometry();
  std::mt19937_64 rng(7);
  std::size_t rejected = 0, disagree = 0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const auto a = std::int32_t(rb::uniform_below(rng, 564480));
    const auto b = std::int32_t(rb::uniform_below(rng, 564480));
    const auto ra = s.ring_and_crystal(a), rb_ = s.ring_and_crystal(b);
    const auto pa = s.crystal_position(ra.first, ra.second);
    const auto pb = s.crystal_position(rb_.first, rb_.second);
    const bool crosses = gen.lor_crosses_image(a, b);
    rejected += !crosses;
    if (segment_meets_box(pa, pb, g, 1e-3) != segment_meets_box(pa, pb, g, -1e-3))
      continue; // grazing
    disagree += crosses != segment_meets_box(pa, pb, g, 0);
  }
  EXPECT_EQ(disagree, 0u);
  EXPECT_GT(rejected, std::size_t(n / 50));
  EXPECT_LT(rejected, std::size_t(n / 2));
  EXPECT_FALSE(gen.lor_crosses_image(5, 5));
  // Neighbouring crystals of one module: a chord outside the box.
  EXPECT_FALSE(gen.lor_crosses_image(0, 1));
  // Opposite crystals of one ring: through the centre.
  EXPECT_TRUE(gen.lor_crosses_image(17, 17 + 420));
}

TEST(TbLmEvents, IndependentOfChunksAndThreads) {
  const rb::tb_lm_generator gen(123);
  constexpr std::size_t n = 3 * 65536 + 1000;
  const auto whole = generate(gen, 0, n, 1);
  const auto threaded = generate(gen, 0, n, 3);
  EXPECT_EQ(whole.pairs, threaded.pairs);
  EXPECT_EQ(whole.bins, threaded.bins);
  // Chunks that start inside blocks.
  std::vector<std::int32_t> pairs;
  std::vector<std::int16_t> bins;
  std::uint64_t expected_first = 0;
  gen.for_each_chunk(n, 50000,
                     [&](std::uint64_t first, resproj::span<const std::int32_t> p,
                         resproj::span<const std::int16_t> b) {
                       EXPECT_EQ(first, expected_first);
                       EXPECT_LE(b.size(), 50000u);
                       EXPECT_EQ(p.size(), 2 * b.size());
                       pairs.insert(pairs.end(), p.begin(), p.end());
                       bins.insert(bins.end(), b.begin(), b.end());
                       expected_first += b.size();
                     });
  EXPECT_EQ(pairs, whole.pairs);
  EXPECT_EQ(bins, whole.bins);
  // A late sub-range alone.
  const auto part = generate(gen, 100000, 70000, 2);
  EXPECT_TRUE(
      std::equal(part.pairs.begin(), part.pairs.end(), whole.pairs.begin() + 2 * 100000));
  EXPECT_TRUE(
      std::equal(part.bins.begin(), part.bins.end(), whole.bins.begin() + 100000));
  // Another seed, other events; make_tb_events gives the same as generate.
  const auto other = generate(rb::tb_lm_generator(124), 0, 1000, 1);
  EXPECT_NE(std::vector<std::int32_t>(whole.pairs.begin(), whole.pairs.begin() + 2000),
            other.pairs);
  const auto made = rb::make_tb_events(1000, 123, 2);
  EXPECT_EQ(made.pairs,
            std::vector<std::int32_t>(whole.pairs.begin(), whole.pairs.begin() + 2000));
}

TEST(TbLmEvents, EndPointsFromTheTable) {
  const rb::tb_lm_generator gen;
  const auto s = rs::tb();
  const auto e = generate(gen, 0, 1000, 1);
  std::vector<float> starts(3000), ends(3000);
  gen.end_points(resproj::span<const std::int32_t>(e.pairs.data(), e.pairs.size()),
                 resproj::span<float>(starts.data(), starts.size()),
                 resproj::span<float>(ends.data(), ends.size()));
  for (std::size_t i = 0; i < 1000; i += 37) {
    const auto ra = s.ring_and_crystal(e.pairs[2 * i]);
    const auto pa = s.crystal_position(ra.first, ra.second);
    const auto rb_ = s.ring_and_crystal(e.pairs[2 * i + 1]);
    const auto pb = s.crystal_position(rb_.first, rb_.second);
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(starts[3 * i + k], float(pa[k]));
      EXPECT_EQ(ends[3 * i + k], float(pb[k]));
    }
  }
  EXPECT_EQ(gen.detectors().size(), 3u * 564480u);
  EXPECT_EQ(gen.num_detectors(), 564480);
}

TEST(TbLmEvents, RejectsBadInput) {
  using resproj_test::expect_invalid;
  const rb::tb_lm_generator gen;
  std::vector<std::int32_t> pairs(3);
  std::vector<std::int16_t> bins(2);
  expect_invalid(
      [&] {
        gen.generate(0, resproj::span<std::int32_t>(pairs.data(), pairs.size()),
                     resproj::span<std::int16_t>(bins.data(), bins.size()));
      },
      "pairs");
  expect_invalid([&] { gen.for_each_chunk(10, 0, [](auto, auto, auto) {}); }, "chunk");
  expect_invalid([&] { gen.lor_crosses_image(0, 564480); }, "detector");
  std::vector<float> out(6);
  const std::vector<std::int32_t> bad{0, -1};
  expect_invalid(
      [&] {
        gen.end_points(resproj::span<const std::int32_t>(bad.data(), bad.size()),
                       resproj::span<float>(out.data(), 3),
                       resproj::span<float>(out.data() + 3, 3));
      },
      "pairs[1]");
}
