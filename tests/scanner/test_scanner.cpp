// Tests of the general polygon scanner (axis of symmetry, detector
// indices, the small test scanner) and of user-supplied detector tables.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/expect.hpp"
#include "resproj/scanner/dmi.hpp"

namespace rs = resproj::scanner;

namespace {

using resproj_test::expect_invalid;

} // namespace

TEST(SmallTestScanner, Sizes) {
  const auto s = rs::small_test_scanner();
  EXPECT_EQ(s.num_sides(), 12);
  EXPECT_EQ(s.crystals_per_side(), 4);
  EXPECT_EQ(s.crystals_per_ring(), 48);
  EXPECT_EQ(s.num_rings(), 4);
  EXPECT_EQ(s.num_crystals(), 192u);
  EXPECT_EQ(s.axis(), 2);
  EXPECT_DOUBLE_EQ(s.inner_radius(), 60.0);
  EXPECT_EQ(s.ring_z(), (std::vector<double>{-12, -4, 4, 12}));
  // Adjacent modules do not overlap: module width <= polygon side length.
  const double pi = 3.14159265358979323846;
  EXPECT_LE(4 * s.crystal_pitch(), 2 * 60.0 * std::tan(pi / 12));
}

TEST(PolygonScanner, DetectorIndexRingMajor) {
  const auto s = rs::small_test_scanner();
  for (int r = 0; r < s.num_rings(); ++r)
    for (int c = 0; c < s.crystals_per_ring(); ++c) {
      const std::int32_t d = s.detector_index(r, c);
      ASSERT_EQ(d, r * 48 + c);
      ASSERT_EQ(s.ring_and_crystal(d), std::make_pair(r, c));
    }
  expect_invalid([&] { s.ring_and_crystal(192); }, "detector");
  expect_invalid([&] { s.ring_and_crystal(-1); }, "detector");
  expect_invalid([&] { s.detector_index(4, 0); }, "ring");
  expect_invalid([&] { s.detector_index(0, 48); }, "crystal");
}

TEST(PolygonScanner, DetectorTableMatchesCentres) {
  for (const auto &s : {rs::small_test_scanner(), rs::dmi()}) {
    const auto c = s.detector_centres();
    const auto t = s.to_detector_table();
    ASSERT_EQ(std::size_t(t.num_detectors()), s.num_crystals());
    EXPECT_EQ(t.xyz(), c);
    for (std::int32_t i = 0; i < t.num_detectors(); i += 7) {
      const auto p = t.position(i);
      const auto [ring, crystal] = s.ring_and_crystal(i);
      const auto q = s.crystal_position(ring, crystal);
      ASSERT_EQ(p[0], c[3 * std::size_t(i)]);
      ASSERT_EQ(p[1], c[3 * std::size_t(i) + 1]);
      ASSERT_EQ(p[2], c[3 * std::size_t(i) + 2]);
      ASSERT_EQ(p[0], float(q[0]));
      ASSERT_EQ(p[1], float(q[1]));
      ASSERT_EQ(p[2], float(q[2]));
    }
    expect_invalid([&] { t.position(t.num_detectors()); }, "detector");
    expect_invalid([&] { t.position(-1); }, "detector");
  }
}

TEST(PolygonScanner, DmiIsAPolygonScanner) {
  const auto d = rs::dmi();
  const rs::polygon_scanner same(34, 16, 380.56, 4.03125, d.ring_z(), 2);
  EXPECT_EQ(same.detector_centres(), d.detector_centres());
  EXPECT_EQ(d.axis(), 2);
  EXPECT_EQ(d.to_detector_table().num_detectors(), 544 * 36);
}

TEST(PolygonScanner, AxisOfSymmetryPermutesCoordinates) {
  const auto ref = rs::small_test_scanner(2);
  for (int axis : {0, 1, 2}) {
    const auto s = rs::small_test_scanner(axis);
    EXPECT_EQ(s.axis(), axis);
    const std::size_t ax = std::size_t(axis), ix = std::size_t((axis + 1) % 3),
                      iy = std::size_t((axis + 2) % 3);
    const auto c = s.detector_centres();
    const auto cr = ref.detector_centres();
    for (int r = 0; r < s.num_rings(); ++r)
      for (int k = 0; k < s.crystals_per_ring(); ++k) {
        const auto p = s.crystal_position(r, k);
        const auto q = ref.crystal_position(r, k);
        ASSERT_EQ(p[ax], q[2]);
        ASSERT_EQ(p[ix], q[0]);
        ASSERT_EQ(p[iy], q[1]);
        const std::size_t i = 3 * std::size_t(s.detector_index(r, k));
        ASSERT_EQ(c[i + ax], cr[i + 2]);
        ASSERT_EQ(c[i + ix], cr[i]);
        ASSERT_EQ(c[i + iy], cr[i + 1]);
      }
  }
  // Axis 0: the rings stack along image axis 0.
  const auto s0 = rs::small_test_scanner(0);
  EXPECT_EQ(s0.crystal_position(0, 5)[0], -12.0);
  EXPECT_EQ(s0.crystal_position(3, 5)[0], 12.0);
  const auto s1 = rs::small_test_scanner(1);
  EXPECT_EQ(s1.crystal_position(1, 9)[1], -4.0);
}

TEST(PolygonScanner, AxisOfSymmetryInSinogramLors) {
  const auto ref = rs::small_test_scanner(2);
  const auto l = rs::span1_sinogram(ref, 3);
  const std::vector<int> views{0, 5, 23};
  std::vector<float> s2, e2;
  rs::sinogram_lors(ref, l, views, s2, e2);
  for (int axis : {0, 1}) {
    const auto s = rs::small_test_scanner(axis);
    std::vector<float> sa, ea;
    rs::sinogram_lors(s, l, views, sa, ea);
    ASSERT_EQ(sa.size(), s2.size());
    const std::size_t ax = std::size_t(axis), ix = std::size_t((axis + 1) % 3),
                      iy = std::size_t((axis + 2) % 3);
    for (std::size_t j = 0; j < sa.size() / 3; ++j) {
      ASSERT_EQ(sa[3 * j + ax], s2[3 * j + 2]) << j;
      ASSERT_EQ(sa[3 * j + ix], s2[3 * j]) << j;
      ASSERT_EQ(sa[3 * j + iy], s2[3 * j + 1]) << j;
      ASSERT_EQ(ea[3 * j + ax], e2[3 * j + 2]) << j;
      ASSERT_EQ(ea[3 * j + ix], e2[3 * j]) << j;
      ASSERT_EQ(ea[3 * j + iy], e2[3 * j + 1]) << j;
    }
  }
}

TEST(ScannerValidation, AxisAndSizes) {
  const std::vector<double> z{0.0, 5.0};
  expect_invalid([&] { rs::polygon_scanner(12, 4, 60, 7.5, z, 3); }, "axis");
  expect_invalid([&] { rs::polygon_scanner(12, 4, 60, 7.5, z, -1); }, "axis");
  expect_invalid([&] { rs::polygon_scanner(12, 4, 0, 7.5, z); }, "inner_radius");
  expect_invalid([&] { rs::polygon_scanner(12, 4, 60, 0, z); }, "crystal_pitch");
  expect_invalid([&] { rs::polygon_scanner(12, 4, 60, 7.5, {NAN}); }, "ring_z[0]");
  expect_invalid(
      [&] { rs::polygon_scanner(10000, 10000, 60, 7.5, std::vector<double>(30)); },
      "ring_z");
}

TEST(DetectorTable, AcceptsAnyShape) {
  // Two block detectors facing each other, 2 x 2 crystals each.
  const std::vector<float> xyz{-50, -2, -2, -50, 2, -2, -50, -2, 2, -50, 2, 2,
                               50,  -2, -2, 50,  2, -2, 50,  -2, 2, 50,  2, 2};
  const rs::detector_table t(xyz);
  EXPECT_EQ(t.num_detectors(), 8);
  EXPECT_EQ(t.position(5), (std::array<float, 3>{50, 2, -2}));
  EXPECT_EQ(t.position(7), (std::array<float, 3>{50, 2, 2}));
}

TEST(DetectorTable, RejectsBadInput) {
  expect_invalid([] { rs::detector_table(std::vector<float>{}); }, "xyz");
  expect_invalid([] { rs::detector_table(std::vector<float>{1, 2, 3, 4}); }, "xyz");
  expect_invalid(
      [] {
        rs::detector_table(std::vector<float>{1, 2, 3, 4, NAN, 6});
      },
      "xyz[4]");
  expect_invalid(
      [] {
        rs::detector_table(std::vector<float>{1, 2, INFINITY});
      },
      "xyz[2]");
  const rs::detector_table t(std::vector<float>{1, 2, 3});
  expect_invalid([&] { t.position(1); }, "detector");
  expect_invalid([&] { t.position(-1); }, "detector");
}
