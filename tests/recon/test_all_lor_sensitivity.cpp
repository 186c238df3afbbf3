// The all-LOR sensitivity image (recon/all_lor_sensitivity.hpp) against the
// LOR-by-LOR brute force on a reduced scanner built like "tb" (flat
// modules, units of rings one voxel apart with a gap between units): with
// no attenuation, with a water cylinder shorter than the scanner (members
// near its ends get their own weights), with attenuation different in every
// slice (every family falls apart into single LORs), on a scanner whose
// ring pitch is not the voxel size, and on another scanner axis; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "common/expect.hpp"
#include "recon/all_lor_problems.hpp"
#include "resproj/recon/all_lor_sensitivity.hpp"

namespace rc = resproj::recon;
using resproj::image_geometry;
using resproj::span;
using resproj::scanner::polygon_scanner;
using namespace resproj_test;

TEST(AllLorSensitivity, WithoutAttenuationEqualsBruteForce) {
  // An image shifted off the centre: no mirror flip applies.
  const auto s = small_tb();
  const auto c = small_image();
  const image_geometry g(c.shape(), c.voxel_size(),
                         {c.origin()[0] + 0.9, c.origin()[1] - 0.4, c.origin()[2] + 0.7});
  rc::all_lor_sensitivity_stats st;
  const auto got = rc::all_lor_sensitivity(s, g, {}, 2, &st);
  expect_close(got, rc::all_lor_sensitivity_brute_force(s, g, {}, 2));
  // 48 crystals: 1128 transaxial pairs; 18 x 18 ring pairs in 3 x 3 unit
  // pairs of 11 families each; one footprint added twice per family that
  // crosses the image.
  EXPECT_EQ(st.mirror_flips, 0);
  EXPECT_EQ(st.lors, 1128u * 18u * 18u);
  EXPECT_EQ(st.families, 1128u * 9u * 11u);
  EXPECT_EQ(st.attenuation_walks, 0u);
  EXPECT_LE(st.scatter_walks, 2 * st.families);
  EXPECT_GT(st.scatter_walks, st.families);
}

TEST(AllLorSensitivity, MirrorFlipsOfACentredImageEqualBruteForce) {
  // The 12-gon, the centred grid and 4 centred units of 5 rings are
  // symmetric under the three flips, and no ring lies on a plane: about an
  // eighth of the 1128 x 16 x 9 families is walked.
  const auto s = small_tb(4, 5);
  const auto g = image_geometry::centred({12, 12, 24}, {pitch, pitch, pitch});
  rc::all_lor_sensitivity_stats st;
  expect_close(rc::all_lor_sensitivity(s, g, {}, 2, &st),
               rc::all_lor_sensitivity_brute_force(s, g, {}, 2));
  EXPECT_EQ(st.mirror_flips, 3);
  EXPECT_LT(st.families, 1128u * 16u * 9u / 6u);
  EXPECT_GT(st.families, 1128u * 16u * 9u / 8u);
  // A mu-map that is not symmetric along x keeps the other two flips.
  auto mu = cylinder(g, 20.0, 0.05f);
  mu[std::size_t((2 * 12 + 6) * 24 + 12)] = 0.2f; // x index 2 of 12, y 6, z 12
  const span<const float> m(mu.data(), mu.size());
  expect_close(rc::all_lor_sensitivity(s, g, m, 2, &st),
               rc::all_lor_sensitivity_brute_force(s, g, m, 2));
  EXPECT_EQ(st.mirror_flips, 0); // every axis: x 2 -> 9, y 6 -> 5, z 12 -> 11
}

TEST(AllLorSensitivity, ADetectorOnAPlaneTurnsItsFlipOff) {
  // 3 units of 6 rings: the middle unit's rings lie on the planes of 22
  // slices, where mirrored LORs sample different planes; the transaxial
  // flips stay.
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats st;
  expect_close(rc::all_lor_sensitivity(s, g, m, 2, &st),
               rc::all_lor_sensitivity_brute_force(s, g, m, 2));
  EXPECT_EQ(st.mirror_flips, 2);
}

TEST(AllLorSensitivity, WaterCylinderShorterThanTheScannerEqualsBruteForce) {
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats st;
  const auto got = rc::all_lor_sensitivity(s, g, m, 2, &st);
  const auto want = rc::all_lor_sensitivity_brute_force(s, g, m, 2);
  expect_close(got, want);
  // Attenuation matters (the image differs from the unattenuated one by
  // far more than the tolerance) and most members share a weight.
  const auto plain = rc::all_lor_sensitivity_brute_force(s, g, {}, 2);
  const float peak = *std::max_element(plain.begin(), plain.end());
  float largest = 0;
  for (std::size_t i = 0; i < plain.size(); ++i)
    largest = std::max(largest, plain[i] - want[i]);
  EXPECT_GT(largest, 0.1f * peak);
  EXPECT_LT(st.attenuation_walks + st.scatter_walks, st.lors);
}

// A float difference image (the GPU call's) against the double one: the
// bound the GPU tests use.
TEST(AllLorSensitivity, FloatDifferenceImageStaysWithinItsBound) {
  const auto s = small_tb(4, 5);
  const auto g = image_geometry::centred({12, 12, 24}, {pitch, pitch, pitch});
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  const auto want = rc::all_lor_sensitivity(s, g, m, 2);
  const auto got = rc::all_lor_sensitivity<float>(s, g, m, 2);
  expect_close(got, want, 2e-5f);
  EXPECT_NE(got, want); // the float image does round differently
}

TEST(AllLorSensitivity, AttenuationDifferentInEverySliceEqualsBruteForce) {
  const auto s = small_tb();
  const auto g = small_image();
  std::vector<float> mu(std::size_t(g.num_voxels()));
  std::mt19937 rng(3);
  for (float &v : mu)
    v = 0.02f * float(rng() % 1000) / 1000.f;
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats st;
  expect_close(rc::all_lor_sensitivity(s, g, m, 2, &st),
               rc::all_lor_sensitivity_brute_force(s, g, m, 2));
  // No two slices agree: every member of a crossing family gets its walk.
  EXPECT_GT(st.attenuation_walks, st.lors / 2);
}

TEST(AllLorSensitivity, RingPitchOtherThanTheVoxelGivesSingleLorFamilies) {
  const auto s = small_tb(1, 16, 0.0, 2.5);
  const auto c = small_image(); // off centre: no flips
  const image_geometry g(c.shape(), c.voxel_size(),
                         {c.origin()[0] + 0.9, c.origin()[1] - 0.4, c.origin()[2] + 0.7});
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats st;
  expect_close(rc::all_lor_sensitivity(s, g, m, 1, &st),
               rc::all_lor_sensitivity_brute_force(s, g, m, 1));
  EXPECT_EQ(st.families, st.lors);
}

TEST(AllLorSensitivity, ScannerAlongAxisZeroEqualsBruteForce) {
  const auto s = small_tb(2, 8, 4.0, pitch, 0);
  const auto g = small_image(0);
  const auto mu = cylinder(g, 15.0, 0.05f, 0);
  const span<const float> m(mu.data(), mu.size());
  expect_close(rc::all_lor_sensitivity(s, g, m, 2),
               rc::all_lor_sensitivity_brute_force(s, g, m, 2));
}

TEST(AllLorSensitivity, ThreadCountChangesNothingButRounding) {
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  expect_close(rc::all_lor_sensitivity(s, g, m, 1), rc::all_lor_sensitivity(s, g, m, 3));
}

TEST(AllLorSensitivity, RejectsBadInput) {
  const auto s = small_tb();
  const auto g = small_image();
  std::vector<float> mu(std::size_t(g.num_voxels()), 0.01f);
  using resproj_test::throws_naming;
  EXPECT_TRUE(throws_naming(
      [&] { (void)rc::all_lor_sensitivity(s, g, span<const float>(mu.data(), 5)); }, "mu",
      {"one value per voxel"}));
  mu[7] = -1.f;
  const span<const float> m(mu.data(), mu.size());
  EXPECT_TRUE(
      throws_naming([&] { (void)rc::all_lor_sensitivity(s, g, m); }, "mu", {"value 7"}));
  mu[7] = std::nanf("");
  EXPECT_TRUE(throws_naming([&] { (void)rc::all_lor_sensitivity_brute_force(s, g, m); },
                            "mu", {"value 7"}));
  const auto short_image = image_geometry::centred({12, 12, 10}, {pitch, pitch, pitch});
  EXPECT_TRUE(throws_naming([&] { (void)rc::all_lor_sensitivity(s, short_image, {}); },
                            "g", {"ring 0", "outside the image box"}));
}
