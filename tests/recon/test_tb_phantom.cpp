// The tb-lm-osem phantom (examples/common/tb_phantom.hpp): its voxelised
// activity and mu images against the point-by-point sampler and against
// analytic volumes, and its regions of interest on an ideal image.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "phantom.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/scanner/tb.hpp"
#include "tb_phantom.hpp"

namespace ex = resproj_examples;

namespace {

constexpr double pi = 3.14159265358979323846;

double sphere_volume(double d) { return pi / 6 * d * d * d; }

} // namespace

TEST(TbPhantom, Definition) {
  const auto p = ex::tb_phantom::make();
  ASSERT_EQ(p.spheres.size(), 6u);
  const double d[6] = {10, 13, 17, 22, 28, 37};
  const double z[6] = {-750, -450, -150, 150, 450, 750};
  for (std::size_t k = 0; k < 6; ++k) {
    const auto &s = p.spheres[k];
    EXPECT_EQ(s.centre[0], 60.0);
    EXPECT_EQ(s.centre[1], 0.0);
    EXPECT_EQ(s.centre[2], z[k]);
    EXPECT_EQ(s.diameter, d[k]);
    EXPECT_EQ(s.hot, k < 4);
    EXPECT_EQ(s.activity, k < 4 ? 4.0 : 0.0);
  }
  const double centre[3] = {60, 0, 150}, body[3] = {170, 0, 0}, edge_y[3] = {0, 121, 0};
  const double end[3] = {0, 0, 901}, in_end[3] = {0, 0, 899};
  EXPECT_EQ(p.activity(centre), 4.0);
  EXPECT_EQ(p.activity(body), 1.0);
  EXPECT_EQ(p.activity(edge_y), 0.0);
  EXPECT_EQ(p.activity(end), 0.0);
  EXPECT_EQ(p.activity(in_end), 1.0);
  EXPECT_EQ(p.mu(centre), 0.0096);
  EXPECT_EQ(p.mu(end), 0.0);
}

TEST(TbPhantom, VoxelisedEqualsPointSampler) {
  // A coarse grid that is not centred, so that voxels cut every surface.
  const resproj::image_geometry g({30, 20, 123}, {13.7, 13.1, 16.3}, {-199, -124, -991});
  const auto p = ex::tb_phantom::make();
  for (int sub : {1, 3}) {
    const auto fast = ex::tb_activity_image<double>(p, g, sub);
    const auto slow = ex::sample_image<double>(
        g, [&p](const double x[3]) { return p.activity(x); }, sub);
    ASSERT_EQ(fast.size(), slow.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < fast.size(); ++i)
      bad += std::abs(fast[i] - slow[i]) > 1e-12;
    EXPECT_EQ(bad, 0u) << "sub " << sub;
    const auto mu_fast = ex::tb_mu_image<double>(p, g, sub);
    const auto mu_slow = ex::sample_image<double>(
        g, [&p](const double x[3]) { return p.mu(x); }, sub);
    bad = 0;
    for (std::size_t i = 0; i < mu_fast.size(); ++i)
      bad += std::abs(mu_fast[i] - mu_slow[i]) > 1e-14;
    EXPECT_EQ(bad, 0u) << "sub " << sub;
  }
}

TEST(TbPhantom, VolumesOnTheTbImage) {
  const auto g = resproj::scanner::tb_image_geometry();
  const auto p = ex::tb_phantom::make();
  const auto &n = g.shape();
  const double h = g.voxel_size()[0], voxel_volume = h * h * h;
  const auto img = ex::tb_activity_image<float>(p, g, 4);
  ASSERT_EQ(img.size(), std::size_t(39283200));
  auto at = [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    return double(img[std::size_t((i0 * n[1] + i1) * n[2] + i2)]);
  };
  // Total activity.
  double total = 0;
  for (const float v : img)
    total += double(v);
  // (Sampling 4 points per voxel edge misplaces each surface by up to
  // 0.36 mm: a few 1e-4 of the volume.)
  EXPECT_NEAR(total * voxel_volume / p.total_activity(), 1.0, 1e-3);
  // Cross-section area from the central slice, away from the spheres.
  double area = 0;
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1)
      area += at(i0, i1, n[2] / 2);
  EXPECT_NEAR(area * h * h / (pi * 180 * 120), 1.0, 1e-3);
  // Axial length from a column through the axis (clear of the spheres).
  double length = 0;
  for (std::int64_t i2 = 0; i2 < n[2]; ++i2)
    length += at(n[0] / 2, n[1] / 2, i2);
  EXPECT_NEAR(length * h, 1800.0, h / 4);
  // Each sphere's excess (or deficit) over the background, in a box around it.
  for (const auto &s : p.spheres) {
    double excess = 0;
    for (std::int64_t i0 = 0; i0 < n[0]; ++i0) {
      const double x = g.origin()[0] + h * double(i0);
      if (std::abs(x - s.centre[0]) > s.diameter)
        continue;
      for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
        const double y = g.origin()[1] + h * double(i1);
        if (std::abs(y - s.centre[1]) > s.diameter)
          continue;
        for (std::int64_t i2 = 0; i2 < n[2]; ++i2)
          if (std::abs(g.origin()[2] + h * double(i2) - s.centre[2]) <= s.diameter)
            excess += at(i0, i1, i2) - 1.0;
      }
    }
    const double expected = (s.activity - 1.0) * sphere_volume(s.diameter);
    EXPECT_NEAR(excess * voxel_volume / expected, 1.0, 0.01) << "d = " << s.diameter;
  }
  // The mu-map integrates to mu x body volume.
  const auto mu = ex::tb_mu_image<float>(p, g, 4);
  double mu_total = 0;
  for (const float v : mu)
    mu_total += double(v);
  EXPECT_NEAR(mu_total * voxel_volume / (0.0096 * p.body_volume()), 1.0, 1e-3);
}

TEST(TbPhantom, RoisOnTheTbImage) {
  const auto g = resproj::scanner::tb_image_geometry();
  const auto p = ex::tb_phantom::make();
  const double h = g.voxel_size()[0];
  for (std::size_t k = 0; k < 6; ++k) {
    const auto r = ex::tb_rois(p, g, k);
    const double d = p.spheres[k].diameter;
    // About the sphere's volume in voxels (coarse for the smallest: 22).
    EXPECT_NEAR(double(r.sphere.size()) / (sphere_volume(d) / (h * h * h)), 1.0, 0.3)
        << "d = " << d;
    EXPECT_GT(r.background.size(), 5000u);
    EXPECT_GE(r.variability_discs.size(), 8u);
    EXPECT_LE(r.variability_discs.size(), 12u);
    for (const auto &disc_roi : r.variability_discs)
      EXPECT_NEAR(double(disc_roi.size()) / (pi / 4 * 37 * 37 / (h * h)), 1.0, 0.1);
  }
  // The largest sphere keeps fewer discs than the smallest.
  EXPECT_LT(ex::tb_rois(p, g, 5).variability_discs.size(),
            ex::tb_rois(p, g, 0).variability_discs.size());
}

TEST(TbPhantom, QualityOfIdealAndBlurredImages) {
  const auto g = resproj::scanner::tb_image_geometry();
  const auto p = ex::tb_phantom::make();
  // Sampled at voxel centres only: every ROI holds the true values.
  const auto ideal = ex::tb_activity_image<float>(p, g, 1);
  const auto q = ex::measure_tb_quality(p, g, ideal);
  ASSERT_EQ(q.size(), 6u);
  for (const auto &s : q) {
    EXPECT_DOUBLE_EQ(s.contrast, 1.0) << "d = " << s.diameter;
    EXPECT_DOUBLE_EQ(s.background_mean, 1.0);
    EXPECT_DOUBLE_EQ(s.background_variability, 0.0);
    EXPECT_DOUBLE_EQ(s.sphere_mean, s.hot ? 4.0 : 0.0);
  }
  // Partial volumes lower the contrast, less so for larger spheres.
  const auto pv = ex::measure_tb_quality(p, g, ex::tb_activity_image<float>(p, g, 3));
  for (std::size_t k = 0; k < 6; ++k) {
    EXPECT_LT(pv[k].contrast, 1.0);
    EXPECT_GT(pv[k].contrast, 0.3);
  }
  for (std::size_t k = 1; k < 4; ++k)
    EXPECT_GT(pv[k].contrast, pv[k - 1].contrast);
  EXPECT_GT(pv[5].contrast, pv[4].contrast);
}

TEST(TbPhantom, RejectsBadInput) {
  const auto p = ex::tb_phantom::make();
  const resproj::image_geometry g({4, 4, 4}, {1, 1, 1}, {0, 0, 0});
  EXPECT_THROW(ex::tb_activity_image<float>(p, g, 0), resproj::invalid_argument);
  EXPECT_THROW(ex::tb_rois(p, g, 6), resproj::invalid_argument);
  EXPECT_THROW(ex::measure_tb_quality(p, g, std::vector<float>(63)),
               resproj::invalid_argument);
}
