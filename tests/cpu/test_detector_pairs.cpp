// Detector-indexed LORs (detector table + index pairs) give exactly the
// values of the same LORs as explicit end points, for every CPU projector.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/detector_lors.hpp"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace rt = resproj_test;

namespace {

template <class T> class DetectorPairs : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DetectorPairs, value_types);

template <class T> std::vector<T> ramp(std::size_t n, double scale) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = T(0.5 + std::fmod(double(i) * scale, 1.0));
  return v;
}

TYPED_TEST(DetectorPairs, SameValuesAsEndPoints) {
  using T = TypeParam;
  const auto g = rp::image_geometry::centred({20, 24, 10}, {2.0, 2.0, 3.0});
  const rt::detector_lor_set<T> set(3000, 45.0, 28.0, 7);
  const std::size_t n = set.size();
  const rp::lor_view<const T> explicit_lors(set.starts.data(), set.ends.data(), n);
  const rp::detector_pairs<T> indexed(set.detectors.data(), set.num_detectors(),
                                      set.pairs.data(), n);
  const auto image = ramp<T>(std::size_t(g.num_voxels()), 0.137);
  const rp::image_view<const T> x(image.data(), g);

  // Non-TOF forward and back.
  std::vector<T> a(n), b(n);
  rp::cpu::forward<T>(x, explicit_lors, rp::span<T>(a.data(), n));
  rp::cpu::forward<T>(x, indexed, rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  std::vector<T> bp_a(image.size(), T(0)), bp_b(image.size(), T(0));
  const rp::cpu::options serial{rp::cpu::back_accumulation::atomic, 1};
  rp::cpu::back<T>(rp::image_view<T>(bp_a.data(), g), explicit_lors,
                   rp::span<const T>(a.data(), n), serial);
  rp::cpu::back<T>(rp::image_view<T>(bp_b.data(), g), indexed,
                   rp::span<const T>(a.data(), n), serial);
  EXPECT_EQ(bp_a, bp_b);

  // TOF sinogram and list-mode.
  rp::tof_params<T> tof;
  tof.bin_width = T(8);
  tof.num_bins = 9;
  tof.sigma = T(6);
  tof.num_sigmas = T(3);
  std::vector<T> sa(n * 9), sb(n * 9);
  rp::cpu::forward_tof_sino<T>(x, explicit_lors, tof, rp::span<T>(sa.data(), sa.size()));
  rp::cpu::forward_tof_sino<T>(x, indexed, tof, rp::span<T>(sb.data(), sb.size()));
  EXPECT_EQ(sa, sb);
  std::vector<std::int16_t> bins(n);
  for (std::size_t i = 0; i < n; ++i)
    bins[i] = std::int16_t(i % 9);
  const rp::span<const std::int16_t> bin_span(bins.data(), n);
  rp::cpu::forward_tof_lm<T>(x, explicit_lors, bin_span, tof, rp::span<T>(a.data(), n));
  rp::cpu::forward_tof_lm<T>(x, indexed, bin_span, tof, rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  std::fill(bp_a.begin(), bp_a.end(), T(0));
  std::fill(bp_b.begin(), bp_b.end(), T(0));
  rp::cpu::back_tof_lm<T>(rp::image_view<T>(bp_a.data(), g), explicit_lors, bin_span, tof,
                          rp::span<const T>(a.data(), n), serial);
  rp::cpu::back_tof_lm<T>(rp::image_view<T>(bp_b.data(), g), indexed, bin_span, tof,
                          rp::span<const T>(a.data(), n), serial);
  EXPECT_EQ(bp_a, bp_b);
}

TEST(DetectorPairs, RejectsMissingTableOrPairs) {
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  std::vector<float> image(64, 1.f), out(2, -1.f), detectors(6, 0.f);
  const std::int32_t pairs[4] = {0, 1, 1, 0};
  const rp::image_view<const float> x(image.data(), g);
  try {
    rp::cpu::forward<float>(x, rp::detector_pairs<float>(nullptr, 0, pairs, 2),
                            rp::span<float>(out.data(), 2));
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "lors.detectors");
  }
  try {
    rp::cpu::forward<float>(x, rp::detector_pairs<float>(detectors.data(), 2, nullptr, 2),
                            rp::span<float>(out.data(), 2));
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "lors.pairs");
  }
  EXPECT_EQ(out[0], -1.f);
  EXPECT_EQ(out[1], -1.f);
}

} // namespace

namespace {

// A sinogram subset derived in the projector equals its explicit LORs.
TEST(SinogramSource, SameValuesAsEndPoints) {
  namespace rs = resproj::scanner;
  const auto scanner = rs::small_test_scanner();
  const auto layout = rs::span1_sinogram(scanner, 3);
  const auto planes = layout.plane_table();
  const auto detectors = scanner.detector_centres();
  const std::vector<int> views = rs::subset_views(layout, 1, 4);
  const std::vector<std::int32_t> views32(views.begin(), views.end());
  const auto source = rs::make_sinogram_source<float>(
      detectors.data(), detectors.size() / 3, layout.geometry(planes.data()),
      views32.data(), int(views32.size()), 0, layout.num_planes());
  std::vector<float> starts, ends;
  rs::sinogram_lors(scanner, layout, views, starts, ends);
  ASSERT_EQ(source.count, starts.size() / 3);

  const auto g = rp::image_geometry::centred({30, 30, 12}, {3.0, 3.0, 2.0});
  const auto image = ramp<float>(std::size_t(g.num_voxels()), 0.21);
  const rp::image_view<const float> x(image.data(), g);
  const std::size_t n = source.count;
  std::vector<float> a(n), b(n);
  rp::cpu::forward<float>(x, rp::lor_view<const float>(starts.data(), ends.data(), n),
                          rp::span<float>(a.data(), n));
  rp::cpu::forward<float>(x, source, rp::span<float>(b.data(), n));
  EXPECT_EQ(a, b);
  // A subview is the same slice of the values.
  std::vector<float> c(100);
  rp::cpu::forward<float>(x, source.subview(n - 100, 100),
                          rp::span<float>(c.data(), 100));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.end() - 100));
  // Too many LORs for the subset are rejected.
  auto bad = source;
  bad.count += 1;
  std::vector<float> d(n + 1);
  EXPECT_THROW(rp::cpu::forward<float>(x, bad, rp::span<float>(d.data(), n + 1)),
               rp::invalid_argument);
}

} // namespace
