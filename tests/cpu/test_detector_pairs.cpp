// Detector-indexed LORs (detector table + index pairs, packed list-mode
// records) give exactly the values of the same LORs as explicit end points,
// for every CPU operation, whatever layout the source declares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
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
  rp::cpu::forward(rp::op::non_tof{}, x, explicit_lors, rp::span<T>(a.data(), n));
  rp::cpu::forward(rp::op::non_tof{}, x, indexed, rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  std::vector<T> bp_a(image.size(), T(0)), bp_b(image.size(), T(0));
  const rp::cpu::options serial{rp::cpu::back_accumulation::atomic, 1};
  rp::cpu::back(rp::op::non_tof{}, rp::image_view<T>(bp_a.data(), g), explicit_lors,
                rp::span<const T>(a.data(), n), serial);
  rp::cpu::back(rp::op::non_tof{}, rp::image_view<T>(bp_b.data(), g), indexed,
                rp::span<const T>(a.data(), n), serial);
  EXPECT_EQ(bp_a, bp_b);

  // TOF sinogram and list-mode.
  rp::tof_params<T> tof;
  tof.bin_width = T(8);
  tof.num_bins = 9;
  tof.sigma = T(6);
  tof.num_sigmas = T(3);
  std::vector<T> sa(n * 9), sb(n * 9);
  rp::cpu::forward(rp::op::tof_sinogram{tof}, x, explicit_lors,
                   rp::span<T>(sa.data(), sa.size()));
  rp::cpu::forward(rp::op::tof_sinogram{tof}, x, indexed,
                   rp::span<T>(sb.data(), sb.size()));
  EXPECT_EQ(sa, sb);
  std::vector<std::int16_t> bins(n);
  for (std::size_t i = 0; i < n; ++i)
    bins[i] = std::int16_t(i % 9);
  const rp::span<const std::int16_t> bin_span(bins.data(), n);
  rp::cpu::forward(rp::op::tof_listmode{tof, bin_span}, x, explicit_lors,
                   rp::span<T>(a.data(), n));
  rp::cpu::forward(rp::op::tof_listmode{tof, bin_span}, x, indexed,
                   rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  std::fill(bp_a.begin(), bp_a.end(), T(0));
  std::fill(bp_b.begin(), bp_b.end(), T(0));
  rp::cpu::back(rp::op::tof_listmode{tof, bin_span}, rp::image_view<T>(bp_a.data(), g),
                explicit_lors, rp::span<const T>(a.data(), n), serial);
  rp::cpu::back(rp::op::tof_listmode{tof, bin_span}, rp::image_view<T>(bp_b.data(), g),
                indexed, rp::span<const T>(a.data(), n), serial);
  EXPECT_EQ(bp_a, bp_b);
}

// Packed list-mode records are a LOR source too (the bins of a CPU call come
// from the operation), and a declared layout never changes a value.
TYPED_TEST(DetectorPairs, RecordsAndLayoutsGiveTheSameValues) {
  using T = TypeParam;
  const auto g = rp::image_geometry::centred({20, 24, 10}, {2.0, 2.0, 3.0});
  const rt::detector_lor_set<T> set(3000, 45.0, 28.0, 8);
  const std::size_t n = set.size();
  const rp::detector_pairs<T> indexed(set.detectors.data(), set.num_detectors(),
                                      set.pairs.data(), n);
  std::vector<std::int16_t> bins(n);
  for (std::size_t i = 0; i < n; ++i)
    bins[i] = std::int16_t(i % 9);
  const rp::span<const std::int16_t> bin_span(bins.data(), n);
  const auto events = rp::scanner::pack_events(
      rp::span<const std::int32_t>(set.pairs.data(), set.pairs.size()), bin_span);
  const rp::scanner::listmode_records<T> records(set.detectors.data(),
                                                 set.num_detectors(), events.data(), n);
  const rp::lor_view<const T> explicit_lors(set.starts.data(), set.ends.data(), n);
  const auto image = ramp<T>(std::size_t(g.num_voxels()), 0.173);
  const rp::image_view<const T> x(image.data(), g);
  rp::tof_params<T> tof;
  tof.bin_width = T(8);
  tof.num_bins = 9;
  tof.sigma = T(6);
  tof.num_sigmas = T(3);
  const rp::cpu::options serial{rp::cpu::back_accumulation::atomic, 1};

  // Every operation over the records equals the same over detector pairs.
  std::vector<T> a(n * 9), b(n * 9);
  rp::cpu::forward(rp::op::non_tof{}, x, indexed, rp::span<T>(a.data(), n));
  rp::cpu::forward(rp::op::non_tof{}, x, records, rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  rp::cpu::forward(rp::op::tof_sinogram{tof}, x, indexed, rp::span<T>(a.data(), n * 9));
  rp::cpu::forward(rp::op::tof_sinogram{tof}, x, records, rp::span<T>(b.data(), n * 9));
  EXPECT_EQ(a, b);
  const rp::op::tof_listmode lm{tof, bin_span};
  rp::cpu::forward(lm, x, indexed, rp::span<T>(a.data(), n));
  rp::cpu::forward(lm, x, records, rp::span<T>(b.data(), n));
  EXPECT_EQ(a, b);
  std::vector<T> bp_a(image.size(), T(0)), bp_b(image.size(), T(0));
  rp::cpu::back(lm, rp::image_view<T>(bp_a.data(), g), indexed,
                rp::span<const T>(a.data(), n), serial);
  rp::cpu::back(lm, rp::image_view<T>(bp_b.data(), g), records,
                rp::span<const T>(a.data(), n), serial);
  EXPECT_EQ(bp_a, bp_b);

  // A layout is a speed hint only: the CPU gives the same values with any.
  const rp::lor_layout layouts[] = {rp::lor_layout::sinogram(10, 30),
                                    rp::lor_layout::sorted_events()};
  std::vector<T> plain(n * 9), laid(n * 9);
  for (const auto &layout : layouts) {
    rp::cpu::forward(rp::op::tof_sinogram{tof}, x, explicit_lors,
                     rp::span<T>(plain.data(), n * 9));
    rp::cpu::forward(rp::op::tof_sinogram{tof}, x, explicit_lors.with_layout(layout),
                     rp::span<T>(laid.data(), n * 9));
    EXPECT_EQ(plain, laid);
    rp::cpu::forward(lm, x, indexed, rp::span<T>(plain.data(), n));
    rp::cpu::forward(lm, x, indexed.with_layout(layout), rp::span<T>(laid.data(), n));
    rp::cpu::forward(lm, x, records.with_layout(layout), rp::span<T>(b.data(), n));
    EXPECT_TRUE(
        std::equal(plain.begin(), plain.begin() + std::ptrdiff_t(n), laid.begin()));
    EXPECT_TRUE(std::equal(plain.begin(), plain.begin() + std::ptrdiff_t(n), b.begin()));
    std::fill(bp_b.begin(), bp_b.end(), T(0));
    rp::cpu::back(lm, rp::image_view<T>(bp_b.data(), g), indexed.with_layout(layout),
                  rp::span<const T>(a.data(), n), serial);
    EXPECT_EQ(bp_a, bp_b);
  }

  // Missing table or records are named.
  std::vector<T> out(2, T(-1));
  auto argument_of = [&](const rp::scanner::listmode_records<T> &l) -> std::string {
    try {
      rp::cpu::forward(rp::op::non_tof{}, x, l, rp::span<T>(out.data(), 2));
    } catch (const rp::invalid_argument &e) {
      return e.argument();
    }
    return "";
  };
  EXPECT_EQ(argument_of(rp::scanner::listmode_records<T>(nullptr, 0, events.data(), 2)),
            "lors.detectors");
  EXPECT_EQ(argument_of(rp::scanner::listmode_records<T>(
                set.detectors.data(), set.num_detectors(), nullptr, 2)),
            "lors.events");
  EXPECT_EQ(out, std::vector<T>(2, T(-1)));
}

TEST(DetectorPairs, RejectsMissingTableOrPairs) {
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  std::vector<float> image(64, 1.f), out(2, -1.f), detectors(6, 0.f);
  const std::int32_t pairs[4] = {0, 1, 1, 0};
  const rp::image_view<const float> x(image.data(), g);
  try {
    rp::cpu::forward(rp::op::non_tof{}, x,
                     rp::detector_pairs<float>(nullptr, 0, pairs, 2),
                     rp::span<float>(out.data(), 2));
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "lors.detectors");
  }
  try {
    rp::cpu::forward(rp::op::non_tof{}, x,
                     rp::detector_pairs<float>(detectors.data(), 2, nullptr, 2),
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
  rp::cpu::forward(rp::op::non_tof{}, x,
                   rp::lor_view<const float>(starts.data(), ends.data(), n),
                   rp::span<float>(a.data(), n));
  rp::cpu::forward(rp::op::non_tof{}, x, source, rp::span<float>(b.data(), n));
  EXPECT_EQ(a, b);
  // A subview is the same slice of the values.
  std::vector<float> c(100);
  rp::cpu::forward(rp::op::non_tof{}, x, source.subview(n - 100, 100),
                   rp::span<float>(c.data(), 100));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.end() - 100));
  // Too many LORs for the subset are rejected.
  auto bad = source;
  bad.count += 1;
  std::vector<float> d(n + 1);
  EXPECT_THROW(
      rp::cpu::forward(rp::op::non_tof{}, x, bad, rp::span<float>(d.data(), n + 1)),
      rp::invalid_argument);
}

// A sinogram source whose sizes no span-1 sinogram has, whose tables are
// missing, or whose view list or plane table holds an entry outside the
// sinogram is rejected by name before anything is written, forward and
// back; the CPU reads the tables (host memory) before projecting.
TEST(SinogramSource, RejectsBadTablesBeforeWriting) {
  namespace rs = resproj::scanner;
  using source = rs::sinogram_source<float>;
  const auto scanner = rs::small_test_scanner();
  const auto layout = rs::span1_sinogram(scanner, 3);
  const auto planes = layout.plane_table();
  const auto detectors = scanner.detector_centres();
  const std::vector<std::int32_t> views = {0, 5, 9};
  const source good = rs::make_sinogram_source<float>(
      detectors.data(), detectors.size() / 3, layout.geometry(planes.data()),
      views.data(), int(views.size()), 1, 4);
  const std::size_t n = good.count;

  const auto g = rp::image_geometry::centred({30, 30, 12}, {3.0, 3.0, 2.0});
  std::vector<float> image(std::size_t(g.num_voxels()), 1.f);
  const std::vector<float> out_before(n, -3.f), image_before(image.size(), -3.f);
  const std::vector<float> values(n, 1.f);
  auto expect_rejected = [&](const source &bad, const std::string &argument,
                             const std::string &detail) {
    SCOPED_TRACE(argument + " " + detail);
    std::vector<float> out = out_before, img = image_before;
    auto call = [&](bool back) {
      try {
        if (back)
          rp::cpu::back(rp::op::non_tof{}, rp::image_view<float>(img.data(), g), bad,
                        rp::span<const float>(values.data(), n));
        else
          rp::cpu::forward(rp::op::non_tof{},
                           rp::image_view<const float>(image.data(), g), bad,
                           rp::span<float>(out.data(), n));
        ADD_FAILURE() << "no exception";
      } catch (const rp::invalid_argument &e) {
        EXPECT_EQ(e.argument(), argument) << e.what();
        EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
      }
    };
    call(false);
    call(true);
    EXPECT_EQ(out, out_before);
    EXPECT_EQ(img, image_before);
  };

  // Sizes of no span-1 sinogram.
  auto odd = good;
  odd.geometry.crystals_per_ring += 1;
  expect_rejected(odd, "lors.geometry", "not a span-1 sinogram");
  auto no_rings = good;
  no_rings.geometry.num_rings = 0;
  expect_rejected(no_rings, "lors.geometry", "0 rings");
  auto views_count = good;
  views_count.geometry.num_views += 1;
  expect_rejected(views_count, "lors.geometry", "views");
  auto wide = good;
  wide.geometry.num_radial += 1; // one bin more than a ring has
  expect_rejected(wide, "lors.geometry", "radial bins");
  auto trim = good;
  trim.geometry.radial_trim = -1;
  expect_rejected(trim, "lors.geometry", "radial trim -1");
  // Missing tables, planes outside the sinogram.
  auto no_detectors = good;
  no_detectors.detectors = nullptr;
  expect_rejected(no_detectors, "lors.detectors", "missing");
  auto few_detectors = good;
  few_detectors.num_detectors -= 1;
  expect_rejected(few_detectors, "lors.detectors", "smaller than the scanner");
  auto no_views = good;
  no_views.views = nullptr;
  expect_rejected(no_views, "lors.views", "no views");
  auto no_planes = good;
  no_planes.geometry.plane_rings = nullptr;
  expect_rejected(no_planes, "lors.geometry", "no plane table");
  auto beyond = good;
  beyond.first_plane = layout.num_planes() - 3;
  expect_rejected(beyond, "lors.num_planes", "outside the sinogram");
  // Entries of the tables outside the sinogram.
  for (const std::int32_t v : {-1, layout.num_views}) {
    std::vector<std::int32_t> bad_views = views;
    bad_views[2] = v;
    auto bad = good;
    bad.views = bad_views.data();
    expect_rejected(bad, "lors.views", "entry 2: view " + std::to_string(v));
  }
  for (const std::int32_t r : {-1, scanner.num_rings()}) {
    std::vector<std::int32_t> bad_planes = planes;
    bad_planes[2 * 3 + 1] = r; // end ring of plane 3, one of the source's
    auto bad = good;
    bad.geometry.plane_rings = bad_planes.data();
    expect_rejected(bad, "lors.geometry.plane_rings",
                    "plane 3: ring " + std::to_string(r));
  }
  // A bad entry of a plane the source does not cover is not read.
  std::vector<std::int32_t> other_planes = planes;
  other_planes[2 * 7] = -1;
  auto fine = good;
  fine.geometry.plane_rings = other_planes.data();
  std::vector<float> out(n);
  EXPECT_NO_THROW(rp::cpu::forward(rp::op::non_tof{},
                                   rp::image_view<const float>(image.data(), g), fine,
                                   rp::span<float>(out.data(), n)));
}

} // namespace
