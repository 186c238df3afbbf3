// Tests of the total-body reference scanner "tb", its image geometry and
// TOF parameters against the formulas of docs/benchmark-problems.md,
// recomputed here independently in double.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/tb.hpp"

namespace rs = resproj::scanner;

namespace {

constexpr double pi = 3.14159265358979323846;

// The spec's inner radius, written out.
double spec_radius() { return 35 * 2.85 / (2 * std::tan(pi / 24)); }

// The spec's crystal position (x, y) of crystal c of a ring.
std::array<double, 2> spec_xy(int c) {
  const int side = c / 35;
  const double t = c - 35 * side - 17;
  const double phi = 2 * pi * side / 24;
  const double R = spec_radius();
  return {R * std::cos(phi) - 2.85 * t * std::sin(phi),
          R * std::sin(phi) + 2.85 * t * std::cos(phi)};
}

// The spec's ring z before centring.
double spec_raw_z(int r) { return 2.85 * r + 4.0 * std::floor(r / 84.0); }

double spec_z(int r) { return spec_raw_z(r) - 0.5 * (spec_raw_z(0) + spec_raw_z(671)); }

} // namespace

TEST(TbScanner, Sizes) {
  const auto s = rs::tb();
  EXPECT_EQ(s.num_sides(), 24);
  EXPECT_EQ(s.crystals_per_side(), 35);
  EXPECT_EQ(s.crystals_per_ring(), 840);
  EXPECT_EQ(s.num_rings(), 672);
  EXPECT_EQ(s.num_crystals(), std::size_t(564480));
  EXPECT_EQ(s.axis(), 2);
  EXPECT_DOUBLE_EQ(s.crystal_pitch(), 2.85);
  EXPECT_EQ(rs::tb_crystals_per_ring, 840);
  EXPECT_EQ(rs::tb_num_rings, 672);
}

TEST(TbScanner, InnerRadius) {
  const auto s = rs::tb();
  EXPECT_NEAR(s.inner_radius(), spec_radius(), 1e-12);
  EXPECT_NEAR(s.inner_radius(), 378.84, 0.005);
  EXPECT_DOUBLE_EQ(rs::tb_inner_radius(), s.inner_radius());
}

TEST(TbScanner, CrystalPositionsOfOneRing) {
  const auto s = rs::tb();
  const std::vector<double> z = s.ring_z();
  for (int c = 0; c < 840; ++c) {
    const auto p = s.crystal_position(100, c);
    const auto e = spec_xy(c);
    ASSERT_NEAR(p[0], e[0], 1e-9) << "crystal " << c;
    ASSERT_NEAR(p[1], e[1], 1e-9) << "crystal " << c;
    ASSERT_EQ(p[2], z[100]) << "crystal " << c;
  }
}

TEST(TbScanner, SelectedCrystals) {
  const auto s = rs::tb();
  // Crystal 0: side 0 (phi = 0), t = -17.
  const auto c0 = s.crystal_position(0, 0);
  EXPECT_NEAR(c0[0], spec_radius(), 1e-12);
  EXPECT_NEAR(c0[1], -17 * 2.85, 1e-12);
  // Crystal 17 is the centre of module 0: (R, 0).
  const auto c17 = s.crystal_position(0, 17);
  EXPECT_NEAR(c17[0], spec_radius(), 1e-12);
  EXPECT_NEAR(c17[1], 0.0, 1e-12);
  // Crystal 6 * 35 + 17 = 227: centre of module 6, phi = 90 degrees.
  const auto c227 = s.crystal_position(3, 227);
  EXPECT_NEAR(c227[0], 0.0, 1e-9);
  EXPECT_NEAR(c227[1], spec_radius(), 1e-9);
  // Crystal 839: side 23, t = +17.
  const double phi = 2 * pi * 23 / 24;
  const auto c839 = s.crystal_position(671, 839);
  EXPECT_NEAR(c839[0], spec_radius() * std::cos(phi) - 2.85 * 17 * std::sin(phi), 1e-9);
  EXPECT_NEAR(c839[1], spec_radius() * std::sin(phi) + 2.85 * 17 * std::cos(phi), 1e-9);
  EXPECT_NEAR(c839[2], spec_z(671), 1e-9);
}

TEST(TbScanner, ModulesClosePolygon) {
  // With R = 35 * pitch / (2 tan(pi / 24)) the modules' outer crystal
  // edges meet: the last crystal of a module and the first of the next are
  // at most one pitch apart, and every crystal lies at or outside R.
  const auto s = rs::tb();
  for (int c = 0; c < 840; ++c) {
    const auto p = s.crystal_position(0, c);
    const auto q = s.crystal_position(0, (c + 1) % 840);
    const double d = std::hypot(p[0] - q[0], p[1] - q[1]);
    if ((c + 1) % 35 != 0)
      EXPECT_NEAR(d, 2.85, 1e-9) << "crystal " << c;
    else
      EXPECT_LT(d, 2.85) << "crystal " << c;
    EXPECT_GE(std::hypot(p[0], p[1]), spec_radius() - 1e-9);
  }
}

TEST(TbScanner, RingZUnitGapsAndCentring) {
  const auto s = rs::tb();
  const auto &z = s.ring_z();
  ASSERT_EQ(z.size(), 672u);
  for (int r = 0; r < 672; ++r)
    ASSERT_NEAR(z[std::size_t(r)], spec_z(r), 1e-9) << "ring " << r;
  for (int r = 1; r < 672; ++r) {
    const double step = (r % 84 == 0) ? 2.85 + 4.0 : 2.85;
    ASSERT_NEAR(z[std::size_t(r)] - z[std::size_t(r - 1)], step, 1e-9) << "ring " << r;
  }
  EXPECT_NEAR(z.front(), -z.back(), 1e-9);
  EXPECT_NEAR(z.back() - z.front(), 1940.35, 1e-9);
  EXPECT_NEAR(z.back(), 970.175, 1e-9);
  EXPECT_NEAR(z.back(), 970.2, 0.05);
  // Symmetric about 0: ring r and ring 671 - r.
  for (int r = 0; r < 336; ++r)
    ASSERT_NEAR(z[std::size_t(r)], -z[std::size_t(671 - r)], 1e-9);
  // The centre falls in the gap between units 3 and 4 (rings 335 and 336).
  EXPECT_NEAR(z[336], 0.5 * (2.85 + 4.0), 1e-9);
  EXPECT_NEAR(z[335], -0.5 * (2.85 + 4.0), 1e-9);
}

TEST(TbScanner, DetectorTableHoldsEveryCrystal) {
  const auto s = rs::tb();
  const auto table = s.to_detector_table();
  ASSERT_EQ(table.num_detectors(), 564480);
  const auto &xyz = table.xyz();
  for (int r : {0, 83, 84, 335, 336, 671})
    for (int c : {0, 17, 34, 35, 419, 839}) {
      const std::int64_t i = std::int64_t(r) * 840 + c;
      EXPECT_EQ(s.detector_index(r, c), i);
      const auto e = spec_xy(c);
      const auto p = table.position(i);
      EXPECT_EQ(p[0], float(e[0])) << r << " " << c;
      EXPECT_EQ(p[1], float(e[1])) << r << " " << c;
      EXPECT_EQ(p[2], float(spec_z(r))) << r << " " << c;
    }
  // Every entry: the float rounding of the crystal centre.
  std::size_t bad = 0;
  for (int r = 0; r < 672; r += 67)
    for (int c = 0; c < 840; ++c) {
      const auto p = s.crystal_position(r, c);
      const std::size_t k = 3 * (std::size_t(r) * 840 + std::size_t(c));
      bad +=
          xyz[k] != float(p[0]) || xyz[k + 1] != float(p[1]) || xyz[k + 2] != float(p[2]);
    }
  EXPECT_EQ(bad, 0u);
  const auto rc = s.ring_and_crystal(564479);
  EXPECT_EQ(rc.first, 671);
  EXPECT_EQ(rc.second, 839);
}

TEST(TbImage, GeometryCoversTheEndRings) {
  const auto g = rs::tb_image_geometry();
  EXPECT_EQ(g.shape()[0], 240);
  EXPECT_EQ(g.shape()[1], 240);
  EXPECT_EQ(g.shape()[2], 682);
  EXPECT_EQ(g.num_voxels(), std::int64_t(39283200));
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(g.voxel_size()[std::size_t(k)], 2.85);
    EXPECT_NEAR(g.box_min(k), -g.box_max(k), 1e-9);
  }
  EXPECT_NEAR(g.box_max(0), 342.0, 1e-9);
  EXPECT_NEAR(g.box_max(2), 971.85, 1e-9);
  const auto s = rs::tb();
  const auto &z = s.ring_z();
  EXPECT_GT(g.box_max(2), z.back());
  EXPECT_LT(g.box_min(2), z.front());
  // Transaxially the box fits inside the inner radius on the axes.
  EXPECT_LT(g.box_max(0), rs::tb_inner_radius());
}

TEST(TbTof, Parameters) {
  const auto t = rs::tb_tof<double>();
  EXPECT_EQ(t.num_bins, 41);
  EXPECT_DOUBLE_EQ(t.bin_width, 20.0);
  EXPECT_NEAR(t.sigma, 299.792 / 2 * 0.505 / 2.355, 1e-12);
  EXPECT_NEAR(t.sigma, 32.14, 0.005);
  EXPECT_DOUBLE_EQ(t.num_sigmas, 3.0);
  EXPECT_DOUBLE_EQ(t.center_offset, 0.0);
  EXPECT_TRUE(t.sigmas.empty());
  EXPECT_NEAR(t.num_bins * t.bin_width / 2, 410.0, 1e-12);
  const auto f = rs::tb_tof<float>();
  EXPECT_EQ(f.sigma, float(t.sigma));
  EXPECT_EQ(rs::tb_num_subsets, 20);
}

TEST(TbScanner, DmiUnchanged) {
  // tb is built on the same polygon_scanner as dmi; dmi's numbers stay.
  const auto d = rs::dmi();
  EXPECT_EQ(d.crystals_per_ring(), 544);
  EXPECT_DOUBLE_EQ(d.inner_radius(), 380.56);
  EXPECT_NEAR(d.ring_z().back(), 97.22, 0.01);
}
