// Tests of the reference scanner "dmi", span-1 sinogram layout and LOR
// generation against docs/benchmark-problems.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "common/expect.hpp"
#include "resproj/scanner/dmi.hpp"

namespace rs = resproj::scanner;

namespace {

using resproj_test::expect_invalid;

double distance(const std::array<double, 3> &a, const std::array<double, 3> &b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

} // namespace

TEST(DmiScanner, Sizes) {
  const auto s = rs::dmi();
  EXPECT_EQ(s.num_sides(), 34);
  EXPECT_EQ(s.crystals_per_side(), 16);
  EXPECT_EQ(s.crystals_per_ring(), 544);
  EXPECT_EQ(s.num_rings(), 36);
  EXPECT_EQ(s.num_crystals(), std::size_t(544 * 36));
  EXPECT_DOUBLE_EQ(s.inner_radius(), 380.56);
  EXPECT_DOUBLE_EQ(s.crystal_pitch(), 4.03125);
}

TEST(DmiScanner, CrystalPositionFormula) {
  const auto s = rs::dmi();
  // Crystal 0 sits on side 0 (phi = 0) at t = -7.5.
  const auto c0 = s.crystal_position(0, 0);
  EXPECT_DOUBLE_EQ(c0[0], 380.56);
  EXPECT_DOUBLE_EQ(c0[1], -7.5 * 4.03125);
  // Crystal 16 * 9 + 3 = 147: side 9, t = -4.5.
  const double phi = 2 * 3.14159265358979323846 * 9 / 34;
  const auto c = s.crystal_position(5, 147);
  EXPECT_NEAR(c[0], 380.56 * std::cos(phi) + 4.5 * 4.03125 * std::sin(phi), 1e-12);
  EXPECT_NEAR(c[1], 380.56 * std::sin(phi) - 4.5 * 4.03125 * std::cos(phi), 1e-12);
  EXPECT_DOUBLE_EQ(c[2], s.ring_z()[5]);
}

TEST(DmiScanner, CrystalsOutsideRadiusAndPitchApart) {
  const auto s = rs::dmi();
  const double R = s.inner_radius();
  for (int c = 0; c < s.crystals_per_ring(); ++c) {
    const auto p = s.crystal_position(0, c);
    EXPECT_GE(std::hypot(p[0], p[1]), R - 1e-9) << "crystal " << c;
    if ((c + 1) % s.crystals_per_side() != 0) {
      EXPECT_NEAR(distance(p, s.crystal_position(0, c + 1)), s.crystal_pitch(), 1e-9)
          << "crystal " << c;
    }
  }
  // The module centre (between crystals 7 and 8) is at distance R.
  const auto a = s.crystal_position(0, 7), b = s.crystal_position(0, 8);
  EXPECT_NEAR(std::hypot(0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1])), R, 1e-9);
}

TEST(DmiScanner, RingZCentredWithGaps) {
  const auto s = rs::dmi();
  const auto &z = s.ring_z();
  ASSERT_EQ(z.size(), 36u);
  EXPECT_NEAR(std::accumulate(z.begin(), z.end(), 0.0) / 36, 0.0, 1e-12);
  EXPECT_NEAR(z.front(), -z.back(), 1e-12);
  for (int r = 1; r < 36; ++r) {
    const double gap = (r % 9 == 0) ? 2.8 : 0.0;
    EXPECT_NEAR(z[std::size_t(r)] - z[std::size_t(r - 1)], 5.31556 + gap, 1e-12)
        << "ring " << r;
  }
}

TEST(DmiScanner, DetectorCentresRingMajor) {
  const auto s = rs::dmi();
  const auto d = s.detector_centres();
  ASSERT_EQ(d.size(), 3 * s.num_crystals());
  for (int r : {0, 17, 35})
    for (int c : {0, 1, 300, 543}) {
      const auto p = s.crystal_position(r, c);
      const std::size_t i = 3 * (std::size_t(r) * 544 + std::size_t(c));
      EXPECT_EQ(d[i], float(p[0]));
      EXPECT_EQ(d[i + 1], float(p[1]));
      EXPECT_EQ(d[i + 2], float(p[2]));
    }
}

TEST(DmiSinogram, Sizes) {
  const auto l = rs::dmi_sinogram();
  EXPECT_EQ(l.num_views, 272);
  EXPECT_EQ(l.num_radial, 415);
  EXPECT_EQ(l.radial_trim, 65);
  EXPECT_EQ(l.num_planes(), 1296);
  EXPECT_EQ(l.num_bins(), std::int64_t(146292480));
}

TEST(DmiSinogram, SpecExampleCrystalPairs) {
  const auto l = rs::dmi_sinogram();
  // View 0, untrimmed k = 65..68 are radial bins 0..3.
  EXPECT_EQ(l.crystal_pair(0, 0), std::make_pair(32, 510));
  EXPECT_EQ(l.crystal_pair(0, 1), std::make_pair(33, 510));
  EXPECT_EQ(l.crystal_pair(0, 2), std::make_pair(33, 509));
  EXPECT_EQ(l.crystal_pair(0, 3), std::make_pair(34, 509));
}

TEST(DmiSinogram, CrystalPairEdgesUntrimmed) {
  const auto l = rs::span1_sinogram(rs::dmi(), 0);
  EXPECT_EQ(l.num_radial, 545);
  EXPECT_EQ(l.crystal_pair(0, 0), std::make_pair(0, 543));     // k = 0
  EXPECT_EQ(l.crystal_pair(0, 1), std::make_pair(0, 542));     // k = 1
  EXPECT_EQ(l.crystal_pair(0, 543), std::make_pair(271, 271)); // degenerate
  EXPECT_EQ(l.crystal_pair(0, 544), std::make_pair(272, 271)); // k = 544
  EXPECT_EQ(l.crystal_pair(5, 544), std::make_pair(267, 266));
  EXPECT_EQ(l.crystal_pair(271, 0), std::make_pair(273, 272));
}

TEST(DmiSinogram, TrimmedBinsJoinDistinctCrystalPairs) {
  const auto l = rs::dmi_sinogram();
  // Within a view every bin joins two distinct crystals, and no pair
  // repeats (in either orientation); nor across views.
  std::vector<std::pair<int, int>> seen;
  for (int v = 0; v < l.num_views; ++v)
    for (int r = 0; r < l.num_radial; ++r) {
      const auto p = l.crystal_pair(v, r);
      ASSERT_GE(p.first, 0);
      ASSERT_LT(p.first, 544);
      ASSERT_GE(p.second, 0);
      ASSERT_LT(p.second, 544);
      ASSERT_NE(p.first, p.second) << "view " << v << " radial " << r;
      seen.push_back(std::minmax(p.first, p.second));
    }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
}

TEST(DmiSinogram, PlaneOrder) {
  const auto l = rs::dmi_sinogram();
  const auto &p = l.planes;
  for (int r = 0; r < 36; ++r)
    EXPECT_EQ(p[std::size_t(r)], std::make_pair(r, r));
  // d = 1: (0,1) .. (34,35), then (1,0) .. (35,34).
  EXPECT_EQ(p[36], std::make_pair(0, 1));
  EXPECT_EQ(p[37], std::make_pair(1, 2));
  EXPECT_EQ(p[36 + 34], std::make_pair(34, 35));
  EXPECT_EQ(p[36 + 35], std::make_pair(1, 0));
  EXPECT_EQ(p[36 + 69], std::make_pair(35, 34));
  // d = 2 starts after 36 + 2 * 35 planes.
  EXPECT_EQ(p[106], std::make_pair(0, 2));
  EXPECT_EQ(p[106 + 34], std::make_pair(2, 0));
  // The last two planes: d = 35.
  EXPECT_EQ(p[1294], std::make_pair(0, 35));
  EXPECT_EQ(p[1295], std::make_pair(35, 0));
  // Every ordered ring pair exactly once.
  auto sorted = p;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(DmiSinogram, SubsetViews) {
  const auto l = rs::dmi_sinogram();
  const auto v = rs::subset_views(l, 0, rs::dmi_num_subsets);
  EXPECT_EQ(v, (std::vector<int>{0, 34, 68, 102, 136, 170, 204, 238}));
  EXPECT_EQ(rs::subset_views(l, 33, 34).back(), 271);
  EXPECT_EQ(rs::subset_views(l, 0, 1).size(), 272u);
  EXPECT_EQ(rs::subset_views(l, 2, 5).size(), 54u); // 2, 7, ..., 267
}

TEST(DmiSinogram, LorCountAndMemoryOrder) {
  const auto s = rs::dmi();
  const auto l = rs::dmi_sinogram();
  const auto views = rs::subset_views(l, 3, 34);
  const int first_plane = 30, num_planes = 12; // direct and d = 1 planes
  std::vector<float> starts, ends;
  rs::sinogram_lors(s, l, views, first_plane, num_planes, starts, ends);
  const std::size_t nv = views.size(), nr = std::size_t(l.num_radial);
  const std::size_t count = std::size_t(num_planes) * nv * nr;
  ASSERT_EQ(count, rs::sinogram_lor_count(l, nv, std::size_t(num_planes)));
  ASSERT_EQ(starts.size(), 3 * count);
  ASSERT_EQ(ends.size(), 3 * count);
  for (std::size_t p = 0; p < std::size_t(num_planes); ++p)
    for (std::size_t i = 0; i < nv; ++i)
      for (std::size_t r = 0; r < nr; r += 7) {
        const std::size_t lor = (p * nv + i) * nr + r;
        const auto rings = l.planes[std::size_t(first_plane) + p];
        const auto crystals = l.crystal_pair(views[i], int(r));
        const auto a = s.crystal_position(rings.first, crystals.first);
        const auto b = s.crystal_position(rings.second, crystals.second);
        for (int k = 0; k < 3; ++k) {
          ASSERT_EQ(starts[3 * lor + std::size_t(k)], float(a[std::size_t(k)]))
              << "lor " << lor;
          ASSERT_EQ(ends[3 * lor + std::size_t(k)], float(b[std::size_t(k)]))
              << "lor " << lor;
        }
      }
}

TEST(DmiSinogram, SubsetLorsAllPlanesDouble) {
  const auto s = rs::dmi();
  const auto l = rs::dmi_sinogram();
  const auto views = rs::subset_views(l, 0, rs::dmi_num_subsets);
  std::vector<double> starts, ends;
  rs::sinogram_lors(s, l, views, starts, ends);
  const std::size_t count = 4302720; // the dmi-subset problem
  ASSERT_EQ(starts.size(), 3 * count);
  // The last LOR: plane 1295 = rings (35, 0), view 238, last radial bin.
  const auto c = l.crystal_pair(238, 414);
  const auto a = s.crystal_position(35, c.first);
  const auto b = s.crystal_position(0, c.second);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(starts[3 * (count - 1) + std::size_t(k)], a[std::size_t(k)]);
    EXPECT_EQ(ends[3 * (count - 1) + std::size_t(k)], b[std::size_t(k)]);
  }
}

TEST(DmiSinogram, SpanOverloadChecksSize) {
  const auto s = rs::dmi();
  const auto l = rs::dmi_sinogram();
  std::vector<float> a(3 * 415), b(3 * 415 - 1);
  const std::vector<int> views{0};
  rs::sinogram_lors(s, l, views, 0, 1, resproj::span<float>(a.data(), a.size()),
                    resproj::span<float>(a.data(), a.size()));
  expect_invalid(
      [&] {
        rs::sinogram_lors(s, l, views, 0, 1, resproj::span<float>(a.data(), a.size()),
                          resproj::span<float>(b.data(), b.size()));
      },
      "ends");
}

TEST(ScannerValidation, PolygonScannerRejectsBadInput) {
  const std::vector<double> z{0.0, 5.0};
  expect_invalid([&] { rs::polygon_scanner(2, 16, 380, 4, z); }, "num_sides");
  expect_invalid([&] { rs::polygon_scanner(34, 0, 380, 4, z); }, "crystals_per_side");
  expect_invalid([&] { rs::polygon_scanner(34, 16, -1, 4, z); }, "inner_radius");
  expect_invalid([&] { rs::polygon_scanner(34, 16, 380, NAN, z); }, "crystal_pitch");
  expect_invalid([&] { rs::polygon_scanner(34, 16, 380, 4, {}); }, "ring_z");
  expect_invalid(
      [&] {
        rs::polygon_scanner(34, 16, 380, 4, {0.0, INFINITY});
      },
      "ring_z[1]");
  const auto s = rs::dmi();
  expect_invalid([&] { s.crystal_position(36, 0); }, "ring");
  expect_invalid([&] { s.crystal_position(0, -1); }, "crystal");
}

TEST(ScannerValidation, SinogramFactoriesRejectBadInput) {
  const auto s = rs::dmi();
  expect_invalid([&] { rs::span1_sinogram(s, -1); }, "radial_trim");
  expect_invalid([&] { rs::span1_sinogram(s, 273); }, "radial_trim");
  EXPECT_EQ(rs::span1_sinogram(s, 272).num_radial, 1);
  expect_invalid([&] { rs::span1_sinogram(rs::polygon_scanner(3, 3, 100, 4, {0.0}), 0); },
                 "scanner");
  const auto l = rs::dmi_sinogram();
  expect_invalid([&] { l.crystal_pair(272, 0); }, "view");
  expect_invalid([&] { l.crystal_pair(0, 415); }, "radial");
  expect_invalid([&] { rs::subset_views(l, 0, 0); }, "num_subsets");
  expect_invalid([&] { rs::subset_views(l, 0, 273); }, "num_subsets");
  expect_invalid([&] { rs::subset_views(l, 34, 34); }, "subset");
}

TEST(ScannerValidation, SinogramLorsRejectsBadInput) {
  const auto s = rs::dmi();
  const auto l = rs::dmi_sinogram();
  std::vector<float> a, b;
  expect_invalid([&] { rs::sinogram_lors(s, l, {0, 272}, 0, 1, a, b); }, "views[1]");
  expect_invalid([&] { rs::sinogram_lors(s, l, {0}, -1, 1, a, b); }, "first_plane");
  expect_invalid([&] { rs::sinogram_lors(s, l, {0}, 1290, 7, a, b); }, "num_planes");
  const auto other =
      rs::span1_sinogram(rs::polygon_scanner(34, 16, 380.56, 4.03125, {0.0, 1.0}), 65);
  expect_invalid([&] { rs::sinogram_lors(s, other, {0}, 0, 1, a, b); }, "layout");
  EXPECT_TRUE(a.empty()); // nothing written on rejection
}
