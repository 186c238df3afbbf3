// GPU projectors over detector-indexed LORs (a resident detector table and
// index pairs) and sinogram sources give the values of the same LORs as
// explicit end points; a declared layout changes no value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/detector_lors.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rt = resproj_test;

namespace {

TEST_F(GpuTest, DetectorPairsEqualEndPoints) {
  const auto g = rp::image_geometry::centred({20, 24, 10}, {2.0, 2.0, 3.0});
  const rt::detector_lor_set<float> set(5000, 45.0, 28.0, 9);
  const std::size_t n = set.size();
  std::vector<float> image(std::size_t(g.num_voxels()));
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = 0.5f + float((i * 37) % 101) / 101.f;

  gpu::stream s;
  gpu::device_image<float> d_img(g, s), d_bp_a(g, s), d_bp_b(g, s);
  d_img.upload(rp::span<const float>(image.data(), image.size()), s);
  auto d_starts = gpu::make_device_buffer(
      rp::span<const float>(set.starts.data(), set.starts.size()), s);
  auto d_ends =
      gpu::make_device_buffer(rp::span<const float>(set.ends.data(), set.ends.size()), s);
  auto d_det = gpu::make_device_buffer(
      rp::span<const float>(set.detectors.data(), set.detectors.size()), s);
  auto d_pairs = gpu::make_device_buffer(
      rp::span<const std::int32_t>(set.pairs.data(), set.pairs.size()), s);
  const rp::lor_view<const float> explicit_lors(d_starts.data(), d_ends.data(), n);
  const rp::detector_pairs<float> indexed(d_det.data(), set.num_detectors(),
                                          d_pairs.data(), n);

  const rp::op::non_tof non_tof{};
  gpu::device_buffer<float> a(n, s), b(n, s);
  gpu::forward(non_tof, d_img, explicit_lors, a.span(), s);
  gpu::forward(non_tof, d_img, indexed, b.span(), s);
  EXPECT_EQ(download(a, s), download(b, s));

  d_bp_a.zero(s);
  d_bp_b.zero(s);
  gpu::back(non_tof, d_bp_a, explicit_lors, a.cspan(), s);
  gpu::back(non_tof, d_bp_b, indexed, a.cspan(), s);
  std::vector<float> bp_a(image.size()), bp_b(image.size());
  d_bp_a.download(rp::span<float>(bp_a.data(), bp_a.size()), s);
  d_bp_b.download(rp::span<float>(bp_b.data(), bp_b.size()), s);
  s.synchronize();
  double diff = 0, norm = 0; // atomics: summation order may differ
  for (std::size_t i = 0; i < bp_a.size(); ++i) {
    diff += double(bp_a[i] - bp_b[i]) * (bp_a[i] - bp_b[i]);
    norm += double(bp_a[i]) * bp_a[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-6);

  rp::tof_params<float> tof;
  tof.bin_width = 8.f;
  tof.num_bins = 9;
  tof.sigma = 6.f;
  tof.num_sigmas = 3.f;
  gpu::device_buffer<float> sa(n * 9, s), sb(n * 9, s);
  gpu::forward(rp::op::tof_sinogram{tof}, d_img, explicit_lors, sa.span(), s);
  gpu::forward(rp::op::tof_sinogram{tof}, d_img, indexed, sb.span(), s);
  EXPECT_EQ(download(sa, s), download(sb, s));

  std::vector<std::int16_t> bins(n);
  for (std::size_t i = 0; i < n; ++i)
    bins[i] = std::int16_t(i % 9);
  auto d_bins = gpu::make_device_buffer(rp::span<const std::int16_t>(bins.data(), n), s);
  const rp::op::tof_listmode listmode{tof, d_bins.cspan()};
  gpu::forward(listmode, d_img, explicit_lors, a.span(), s);
  gpu::forward(listmode, d_img, indexed, b.span(), s);
  EXPECT_EQ(download(a, s), download(b, s));

  // CPU agrees with the GPU on the detector-indexed call.
  std::vector<float> cpu(n);
  rp::cpu::forward(non_tof, rp::image_view<const float>(image.data(), g),
                   rp::detector_pairs<float>(set.detectors.data(), set.num_detectors(),
                                             set.pairs.data(), n),
                   rp::span<float>(cpu.data(), n));
  gpu::forward(non_tof, d_img, indexed, b.span(), s);
  const auto gpu_values = download(b, s);
  diff = norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff += double(gpu_values[i] - cpu[i]) * (gpu_values[i] - cpu[i]);
    norm += double(cpu[i]) * cpu[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-5);
}

TEST_F(GpuTest, DetectorPairsInHostMemoryAreRejected) {
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  gpu::stream s;
  gpu::device_image<float> d_img(g, s);
  d_img.zero(s);
  gpu::device_buffer<float> out(2, s);
  const std::vector<float> detectors = {-9, 0, 0, 9, 0, 0};
  const std::int32_t pairs[4] = {0, 1, 1, 0};
  try {
    gpu::forward(rp::op::non_tof{}, d_img,
                 rp::detector_pairs<float>(detectors.data(), 2, pairs, 2), out.span(), s);
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "lors.detectors");
  }
}

} // namespace

namespace {

TEST_F(GpuTest, SinogramSourceEqualsEndPoints) {
  namespace rs = resproj::scanner;
  const auto scanner = rs::small_test_scanner();
  const auto layout = rs::span1_sinogram(scanner, 3);
  const auto planes = layout.plane_table();
  const auto detectors = scanner.detector_centres();
  const std::vector<int> views = rs::subset_views(layout, 2, 4);
  const std::vector<std::int32_t> views32(views.begin(), views.end());
  std::vector<float> starts, ends;
  rs::sinogram_lors(scanner, layout, views, starts, ends);
  const std::size_t n = starts.size() / 3;

  const auto g = rp::image_geometry::centred({30, 30, 12}, {3.0, 3.0, 2.0});
  std::vector<float> image(std::size_t(g.num_voxels()));
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = 0.25f + float((i * 53) % 97) / 97.f;
  gpu::stream s;
  gpu::device_image<float> d_img(g, s);
  d_img.upload(rp::span<const float>(image.data(), image.size()), s);
  auto d_starts =
      gpu::make_device_buffer(rp::span<const float>(starts.data(), starts.size()), s);
  auto d_ends =
      gpu::make_device_buffer(rp::span<const float>(ends.data(), ends.size()), s);
  auto d_det = gpu::make_device_buffer(
      rp::span<const float>(detectors.data(), detectors.size()), s);
  auto d_planes = gpu::make_device_buffer(
      rp::span<const std::int32_t>(planes.data(), planes.size()), s);
  auto d_views = gpu::make_device_buffer(
      rp::span<const std::int32_t>(views32.data(), views32.size()), s);
  const auto source = rs::make_sinogram_source<float>(
      d_det.data(), detectors.size() / 3, layout.geometry(d_planes.data()),
      d_views.data(), int(views32.size()), 0, layout.num_planes());
  ASSERT_EQ(source.count, n);

  // The source declares its layout; the same LORs as end points without a
  // layout are taken in memory order, with one (a sinogram of the subset's
  // views by the radial bins) like the source.
  const rp::lor_layout sinogram =
      rp::lor_layout::sinogram(views32.size(), std::size_t(layout.num_radial));
  ASSERT_EQ(source.layout, sinogram);
  ASSERT_EQ(sinogram.planes_in(n), std::size_t(layout.num_planes()));
  const rp::lor_view<const float> end_points(d_starts.data(), d_ends.data(), n);
  const auto declared = end_points.with_layout(sinogram);
  // The library's choice takes lanes along planes for the sinogram layouts.
  const int sms = gpu::detail::multiprocessor_count(d_img.device());
  const auto choice = [&](const rp::lor_layout &l) {
    return gpu::choose_kernel(gpu::operation_kind::non_tof, gpu::direction::forward, l, n,
                              true, sms);
  };
  EXPECT_EQ(choice(sinogram).rows, std::size_t(layout.num_planes()));
  EXPECT_EQ(choice(rp::lor_layout{}).rows, 0u);

  // With the lanes per LOR fixed, the mapping changes nothing: identical.
  const rp::op::non_tof op{};
  gpu::tuning lanes;
  for (int tpl : {1, 4}) {
    lanes.threads_per_lor = tpl;
    gpu::device_buffer<float> a(n, s), b(n, s), c(n, s);
    a.fill(-1.f, s);
    b.fill(-1.f, s);
    c.fill(-1.f, s);
    gpu::forward(op, d_img, end_points, a.span(), s, lanes);
    gpu::forward(op, d_img, source, b.span(), s, lanes);
    gpu::forward(op, d_img, declared, c.span(), s, lanes);
    const auto va = download(a, s);
    EXPECT_EQ(download(b, s), va) << "sinogram source, threads_per_lor " << tpl;
    EXPECT_EQ(download(c, s), va) << "declared end points, threads_per_lor " << tpl;
  }

  // The library's choice: the source and the declared end points run the
  // same kernel (identical); without a layout the lane count may differ:
  // rounding only.
  gpu::device_buffer<float> a(n, s), b(n, s), c(n, s);
  gpu::forward(op, d_img, end_points, a.span(), s);
  gpu::forward(op, d_img, source, b.span(), s);
  gpu::forward(op, d_img, declared, c.span(), s);
  const auto va = download(a, s), vb = download(b, s), vc = download(c, s);
  EXPECT_EQ(vc, vb);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff += double(vb[i] - va[i]) * (vb[i] - va[i]);
    norm += double(va[i]) * va[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-6);

  // Back projections agree to the rounding order of the atomic adds.
  gpu::device_image<float> bp_a(g, s), bp_b(g, s), bp_c(g, s);
  bp_a.zero(s);
  bp_b.zero(s);
  bp_c.zero(s);
  gpu::back(op, bp_a, end_points, a.cspan(), s);
  gpu::back(op, bp_b, source, a.cspan(), s);
  gpu::back(op, bp_c, declared, a.cspan(), s);
  const auto ia = download(bp_a, s);
  for (const auto *bp : {&bp_b, &bp_c}) {
    const auto ib = download(*bp, s);
    diff = norm = 0;
    for (std::size_t i = 0; i < ia.size(); ++i) {
      diff += double(ib[i] - ia[i]) * (ib[i] - ia[i]);
      norm += double(ia[i]) * ia[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-6);
  }

  // A host view list behind a device call is rejected.
  auto host_views = source;
  host_views.views = views32.data();
  try {
    gpu::forward(op, d_img, host_views, b.span(), s);
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "lors.views");
  }
}

} // namespace
