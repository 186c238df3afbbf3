// The all-LOR sensitivity image on the GPU
// (recon/gpu_all_lor_sensitivity.cuh) against the CPU call and the
// LOR-by-LOR brute force on the reduced tb-like scanners of
// tests/recon/all_lor_problems.hpp: with the mirror flips, with a detector
// on a plane (flip off), with a water cylinder shorter than the scanner,
// without attenuation on a shifted image; the GPU brute force against the
// CPU one; bad input rejected before the output is written; the list-mode
// data of a reconstruction that sums its sensitivity over all LORs.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/expect.hpp"
#include "gpu/gpu_test_util.hpp"
#include "recon/all_lor_problems.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/recon/all_lor_sensitivity.hpp"
#include "resproj/recon/gpu_all_lor_sensitivity.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"

namespace gpu = resproj::gpu;
namespace rc = resproj::recon;
using resproj::image_geometry;
using resproj::span;
using resproj_test::expect_invalid;
using namespace resproj_test;

namespace {

struct gpu_result {
  std::vector<float> image;
  rc::all_lor_sensitivity_stats stats;
};

gpu_result run_gpu(const polygon_scanner &s, const image_geometry &g,
                   const std::vector<float> &mu, bool brute = false) {
  gpu::stream st;
  gpu::device_image<float> out(g, st);
  const span<const float> m(mu.data(), mu.size());
  gpu_result r;
  if (brute)
    rc::gpu_all_lor_sensitivity_brute_force(s, g, m, out.view(), st);
  else
    rc::gpu_all_lor_sensitivity(s, g, m, out.view(), st, &r.stats);
  r.image.resize(std::size_t(g.num_voxels()));
  out.download(span<float>(r.image.data(), r.image.size()), st);
  st.synchronize();
  return r;
}

/// The GPU method accumulates its difference image in float (atomics in
/// any order): its images agree with the CPU's double ones to 2e-5 of the
/// peak (docs/all-lor-sensitivity.md, "On the GPU").
constexpr float float_difference_image = 2e-5f;

void expect_same_walks(const rc::all_lor_sensitivity_stats &a,
                       const rc::all_lor_sensitivity_stats &b) {
  EXPECT_EQ(a.lors, b.lors);
  EXPECT_EQ(a.families, b.families);
  EXPECT_EQ(a.mirror_flips, b.mirror_flips);
  // The device rounds the members' coordinates (fused multiply-adds) and
  // the attenuation integrals (the warp's summation order) differently:
  // two members whose weights are equal on the CPU can differ in the last
  // bit there and take one footprint more, or a tap of weight 0 on the CPU
  // can be tiny there. The counts agree to a small fraction.
  const auto near = [](std::uint64_t x, std::uint64_t y) {
    const double d = x > y ? double(x - y) : double(y - x);
    return d <= 0.01 * double(y);
  };
  EXPECT_PRED2(near, a.attenuation_walks, b.attenuation_walks);
  EXPECT_PRED2(near, a.scatter_walks, b.scatter_walks);
}

} // namespace

TEST(GpuAllLorSensitivity, ThreeMirrorFlipsEqualCpuAndBruteForce) {
  RESPROJ_REQUIRE_GPU();
  const auto s = small_tb(4, 5);
  const auto g = image_geometry::centred({12, 12, 24}, {pitch, pitch, pitch});
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats cpu;
  const auto want = rc::all_lor_sensitivity(s, g, m, 2, &cpu);
  const gpu_result got = run_gpu(s, g, mu);
  EXPECT_EQ(got.stats.mirror_flips, 3);
  expect_same_walks(got.stats, cpu);
  expect_close(got.image, want, float_difference_image);
  expect_close(got.image, rc::all_lor_sensitivity_brute_force(s, g, m, 2),
               float_difference_image);
}

TEST(GpuAllLorSensitivity, DetectorOnAPlaneAndShortCylinderEqualCpu) {
  RESPROJ_REQUIRE_GPU();
  // The middle unit's rings lie on planes: the axial flip is off; the
  // cylinder ends inside the scanner, so members get their own weights.
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats cpu;
  const auto want = rc::all_lor_sensitivity(s, g, m, 2, &cpu);
  const gpu_result got = run_gpu(s, g, mu);
  EXPECT_EQ(got.stats.mirror_flips, 2);
  EXPECT_GT(got.stats.attenuation_walks, got.stats.families);
  expect_same_walks(got.stats, cpu);
  expect_close(got.image, want, float_difference_image);
}

TEST(GpuAllLorSensitivity, WithoutAttenuationOnAShiftedImageEqualsCpu) {
  RESPROJ_REQUIRE_GPU();
  const auto s = small_tb();
  const auto c = small_image();
  const image_geometry g(c.shape(), c.voxel_size(),
                         {c.origin()[0] + 0.9, c.origin()[1] - 0.4, c.origin()[2] + 0.7});
  rc::all_lor_sensitivity_stats cpu;
  const auto want = rc::all_lor_sensitivity(s, g, {}, 2, &cpu);
  const gpu_result got = run_gpu(s, g, {});
  EXPECT_EQ(got.stats.mirror_flips, 0);
  EXPECT_EQ(got.stats.attenuation_walks, 0u);
  expect_same_walks(got.stats, cpu);
  expect_close(got.image, want, float_difference_image);
}

// The footprints of uniform families are added per crystal pair and
// window of slices in shared memory; windows of 8 slices cut the padded
// axis into several, on a scanner along image axis 2 and one along axis
// 0 (whose tiles add to strided columns), with families of their own
// weights beside them (a cylinder shorter than the scanner).
TEST(GpuAllLorSensitivity, SeveralWindowsEqualCpu) {
  RESPROJ_REQUIRE_GPU();
  for (const int axis : {2, 0}) {
    SCOPED_TRACE(axis);
    const auto s = small_tb(3, 6, 4.0, pitch, axis);
    const auto g = small_image(axis);
    const auto mu = cylinder(g, 20.0, 0.05f, axis);
    const span<const float> m(mu.data(), mu.size());
    const auto want = rc::all_lor_sensitivity(s, g, m, 2);
    for (const int window : {8, 12}) {
      SCOPED_TRACE(window);
      gpu::stream st;
      gpu::device_image<float> out(g, st);
      rc::detail::run_all_lor_sensitivity(s, g, m, out.view(), st, nullptr, window);
      std::vector<float> got(std::size_t(g.num_voxels()));
      out.download(span<float>(got.data(), got.size()), st);
      st.synchronize();
      expect_close(got, want, float_difference_image);
    }
  }
}

TEST(GpuAllLorSensitivity, BruteForceEqualsCpuBruteForce) {
  RESPROJ_REQUIRE_GPU();
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  expect_close(run_gpu(s, g, mu, true).image,
               rc::all_lor_sensitivity_brute_force(s, g, m, 2));
}

TEST(GpuAllLorSensitivity, RejectsBadInputBeforeWriting) {
  RESPROJ_REQUIRE_GPU();
  const auto s = small_tb();
  const auto g = small_image();
  const auto mu = cylinder(g, 20.0, 0.05f);
  const span<const float> m(mu.data(), mu.size());
  gpu::stream st;
  gpu::device_image<float> out(g, st);
  const std::vector<float> sentinel(std::size_t(g.num_voxels()), 7.f);
  out.upload(span<const float>(sentinel.data(), sentinel.size()), st);
  const auto unchanged = [&] {
    std::vector<float> h(sentinel.size());
    out.download(span<float>(h.data(), h.size()), st);
    st.synchronize();
    EXPECT_EQ(h, sentinel);
  };
  const span<const float> short_mu(mu.data(), mu.size() - 1);
  expect_invalid([&] { rc::gpu_all_lor_sensitivity(s, g, short_mu, out.view(), st); },
                 "mu");
  std::vector<float> bad = mu;
  bad[5] = -1.f;
  expect_invalid(
      [&] {
        rc::gpu_all_lor_sensitivity(s, g, span<const float>(bad.data(), bad.size()),
                                    out.view(), st);
      },
      "mu");
  const image_geometry other({12, 12, 20}, g.voxel_size(), g.origin());
  expect_invalid([&] { rc::gpu_all_lor_sensitivity(s, other, {}, out.view(), st); },
                 "out");
  // A ring outside the image box along the axis.
  const image_geometry narrow =
      image_geometry::centred({12, 12, 22}, {pitch, pitch, 1.0});
  gpu::device_image<float> narrow_out(narrow, st);
  expect_invalid(
      [&] { rc::gpu_all_lor_sensitivity(s, narrow, {}, narrow_out.view(), st); }, "g");
  std::vector<float> host(sentinel.size());
  expect_invalid(
      [&] {
        rc::gpu_all_lor_sensitivity(s, g, m,
                                    gpu::device_image_view<float>(host.data(), g, 0), st);
      },
      "out.data");
  expect_invalid(
      [&] { rc::gpu_all_lor_sensitivity_brute_force(s, g, short_mu, out.view(), st); },
      "mu");
  unchanged();
  // Still usable.
  EXPECT_NO_THROW(rc::gpu_all_lor_sensitivity(s, g, m, out.view(), st));
}

// A list-mode reconstruction's data with `sensitivity_lors::all`: its
// sensitivity image is the all-LOR sum times the common factor of the
// corrections (scale x efficiency^2), computed while the events load; and
// efficiencies that are not uniform are rejected before any event is read.
TEST(GpuAllLorSensitivity, ListmodeDataSumsOverAllLors) {
  RESPROJ_REQUIRE_GPU();
  const auto s = small_tb(4, 5);
  const auto g = image_geometry::centred({12, 12, 24}, {pitch, pitch, pitch});
  const rc::sinogram_subsets sub(s, 2, 2, g);
  rc::corrections c;
  c.mu = cylinder(g, 20.0, 0.05f);
  c.efficiency.assign(sub.num_detectors(), 1.25f);
  c.scale = 0.5f;
  rc::listmode_data lm;
  lm.pairs = {0, 30, 5, 100, 7, 61};
  lm.bins = {0, 0, 0};
  lm.offset = rc::subset_offsets(3, 2);
  resproj::tof_params<float> non_tof;
  gpu::stream st;
  const rc::device_sinogram_subsets dsub(sub, st);
  rc::phase_table phases;
  const rc::gpu_listmode_data d(sub, dsub, lm, c, non_tof, st, true, &phases,
                                rc::sensitivity_lors::all);
  std::vector<float> got(std::size_t(g.num_voxels()));
  d.sensitivity.download(span<float>(got.data(), got.size()), st);
  st.synchronize();
  auto want =
      rc::all_lor_sensitivity(s, g, span<const float>(c.mu.data(), c.mu.size()), 2);
  for (float &v : want)
    v *= 0.5f * 1.25f * 1.25f;
  expect_close(got, want, float_difference_image);
  EXPECT_GT(phases.seconds("sens"), 0.0);

  auto uneven = c;
  uneven.efficiency[3] = 1.f;
  expect_invalid(
      [&] {
        rc::gpu_listmode_data(sub, dsub, lm, uneven, non_tof, st, true, nullptr,
                              rc::sensitivity_lors::all);
      },
      "c.efficiency");
}
