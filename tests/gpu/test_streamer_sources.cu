// Host-streamed detector pairs and packed list-mode records (lor_streamer)
// give the values of the resident detector pairs and of the explicit end
// points: non-TOF forward/back and TOF list-mode forward/back, pageable
// and pinned host arrays, chunk sizes that do and do not divide the count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/detector_lors.hpp"
#include "common/expect.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;
namespace rt = resproj_test;
using resproj_test_gpu::relative_error;

namespace {

/// A detector LOR set, its list-mode records, an image and values on the
/// device, and the resident (device) reference projections.
struct problem {
  rp::image_geometry g = rp::image_geometry::centred({24, 24, 12}, {2.0, 2.0, 2.5});
  rt::detector_lor_set<float> set{30011, 40.0, 26.0, 17};
  std::size_t n = set.size();
  std::vector<float> image, values;
  std::vector<std::int16_t> bins;
  std::vector<rs::listmode_event> events;
  rp::tof_params<float> tof;
  gpu::stream s;
  gpu::device_image<float> d_img{g, s}, d_bp{g, s};
  gpu::device_buffer<float> d_det, d_starts, d_ends, d_values;
  gpu::device_buffer<std::int32_t> d_pairs;
  gpu::device_buffer<std::int16_t> d_bins;
  // references: resident explicit end points
  std::vector<float> fwd_ref, bp_ref, tof_fwd_ref, tof_bp_ref;

  problem() {
    image =
        resproj_test_gpu::random_values<float>(std::size_t(g.num_voxels()), 3, 0.2, 1.0);
    values = resproj_test_gpu::random_values<float>(n, 4, 0.5, 2.0);
    tof.bin_width = 6.f;
    tof.num_bins = 11;
    tof.sigma = 5.f;
    tof.num_sigmas = 3.f;
    bins.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      bins[i] = std::int16_t((i * 7) % 11);
    events =
        rs::pack_events(rp::span<const std::int32_t>(set.pairs.data(), set.pairs.size()),
                        rp::span<const std::int16_t>(bins.data(), n));
    d_img.upload(rp::span<const float>(image.data(), image.size()), s);
    d_det = gpu::make_device_buffer(
        rp::span<const float>(set.detectors.data(), set.detectors.size()), s);
    d_starts = gpu::make_device_buffer(
        rp::span<const float>(set.starts.data(), set.starts.size()), s);
    d_ends = gpu::make_device_buffer(
        rp::span<const float>(set.ends.data(), set.ends.size()), s);
    d_values = gpu::make_device_buffer(rp::span<const float>(values.data(), n), s);
    d_pairs = gpu::make_device_buffer(
        rp::span<const std::int32_t>(set.pairs.data(), set.pairs.size()), s);
    d_bins = gpu::make_device_buffer(rp::span<const std::int16_t>(bins.data(), n), s);

    const rp::lor_view<const float> lors(d_starts.data(), d_ends.data(), n);
    gpu::device_buffer<float> out(n, s);
    gpu::forward<float>(d_img, lors, out.span(), s);
    fwd_ref = download(out, s);
    d_bp.zero(s);
    gpu::back<float>(d_bp, lors, d_values.cspan(), s);
    bp_ref = download(d_bp, s);
    gpu::forward_tof_lm<float>(d_img, lors, d_bins.cspan(), tof, out.span(), s);
    tof_fwd_ref = download(out, s);
    d_bp.zero(s);
    gpu::back_tof_lm<float>(d_bp, lors, d_bins.cspan(), tof, d_values.cspan(), s);
    tof_bp_ref = download(d_bp, s);
  }

  rp::span<const float> detectors() const { return d_det.cspan(); }
  std::size_t voxels() const { return image.size(); }
};

class streamer_sources : public gpu_test,
                         public ::testing::WithParamInterface<std::size_t> {};

TEST_P(streamer_sources, equal_resident_and_end_points) {
  problem p;
  auto &s = p.s;
  const std::size_t n = p.n;
  gpu::lor_streamer<float> streamer(GetParam());

  // Resident detector pairs agree with the end points.
  const rp::detector_pairs<float> resident(p.d_det.data(), p.set.num_detectors(),
                                           p.d_pairs.data(), n);
  gpu::device_buffer<float> out(n, s);
  gpu::forward<float>(p.d_img, resident, out.span(), s);
  EXPECT_LT(relative_error(download(out, s), p.fwd_ref, 0), 1e-6);

  for (const bool pinned : {false, true}) {
    SCOPED_TRACE(pinned ? "pinned host arrays" : "pageable host arrays");
    // Host copies of pairs, bins, records and values (pinned or pageable).
    gpu::pinned_buffer<std::int32_t> pp(2 * n);
    gpu::pinned_buffer<std::int16_t> pb(n);
    gpu::pinned_buffer<rs::listmode_event> pe(n);
    gpu::pinned_buffer<float> pv(n), po(n);
    std::copy(p.set.pairs.begin(), p.set.pairs.end(), pp.data());
    std::copy(p.bins.begin(), p.bins.end(), pb.data());
    std::copy(p.events.begin(), p.events.end(), pe.data());
    std::copy(p.values.begin(), p.values.end(), pv.data());
    std::vector<float> pageable_out(n);
    const std::int32_t *pairs = pinned ? pp.data() : p.set.pairs.data();
    const rp::span<const std::int16_t> bins(pinned ? pb.data() : p.bins.data(), n);
    const rp::span<const rs::listmode_event> events(pinned ? pe.data() : p.events.data(),
                                                    n);
    const rp::span<const float> values(pinned ? pv.data() : p.values.data(), n);
    const rp::span<float> host_out(pinned ? po.data() : pageable_out.data(), n);
    const auto result = [&] {
      return std::vector<float>(host_out.begin(), host_out.end());
    };
    const rp::detector_pairs<float> host_pairs(p.d_det.data(), p.set.num_detectors(),
                                               pairs, n);

    // Non-TOF forward / back: pairs and records.
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(p.d_img, host_pairs, host_out, s);
    EXPECT_LT(relative_error(result(), p.fwd_ref, 0), 1e-6);
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(p.d_img, p.detectors(), events, host_out, s);
    EXPECT_LT(relative_error(result(), p.fwd_ref, 0), 1e-6);
    p.d_bp.zero(s);
    streamer.back(p.d_bp, host_pairs, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.bp_ref, 0), 1e-5);
    p.d_bp.zero(s);
    streamer.back(p.d_bp, p.detectors(), events, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.bp_ref, 0), 1e-5);

    // TOF list-mode forward / back: pairs + bins and records.
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward_tof_lm(p.d_img, host_pairs, bins, p.tof, host_out, s);
    EXPECT_LT(relative_error(result(), p.tof_fwd_ref, 0), 1e-6);
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward_tof_lm(p.d_img, p.detectors(), events, p.tof, host_out, s);
    EXPECT_LT(relative_error(result(), p.tof_fwd_ref, 0), 1e-6);
    p.d_bp.zero(s);
    streamer.back_tof_lm(p.d_bp, host_pairs, bins, p.tof, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.tof_bp_ref, 0), 1e-5);
    p.d_bp.zero(s);
    streamer.back_tof_lm(p.d_bp, p.detectors(), events, p.tof, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.tof_bp_ref, 0), 1e-5);
  }

  // The end-point form still works on the same streamer after the others.
  std::vector<float> fwd(n);
  streamer.forward(p.d_img,
                   rp::lor_view<const float>(p.set.starts.data(), p.set.ends.data(), n),
                   rp::span<float>(fwd.data(), n), s);
  EXPECT_LT(relative_error(fwd, p.fwd_ref, 0), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(chunk_sizes, streamer_sources,
                         ::testing::Values(std::size_t(1000), std::size_t(7001),
                                           std::size_t(100000)));

TEST_F(gpu_test, streamer_sources_bad_arguments) {
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  gpu::stream s;
  gpu::device_image<float> d_img(g, s);
  d_img.zero(s);
  const std::vector<float> detectors = {-9, 0, 0, 9, 0, 0};
  auto d_det = gpu::make_device_buffer(rp::span<const float>(detectors.data(), 6), s);
  const std::vector<std::int32_t> pairs = {0, 1, 1, 0};
  auto d_pairs =
      gpu::make_device_buffer(rp::span<const std::int32_t>(pairs.data(), 4), s);
  const std::vector<rs::listmode_event> events(2);
  std::vector<float> out(2);
  const rp::span<float> host_out(out.data(), 2);
  gpu::lor_streamer<float> streamer(16);
  // Host detector table.
  rt::expect_invalid(
      [&] {
        streamer.forward(d_img,
                         rp::detector_pairs<float>(detectors.data(), 2, pairs.data(), 2),
                         host_out, s);
      },
      "host_lors.detectors");
  // Device pairs where host pairs are required.
  rt::expect_invalid(
      [&] {
        streamer.forward(d_img,
                         rp::detector_pairs<float>(d_det.data(), 2, d_pairs.data(), 2),
                         host_out, s);
      },
      "host_lors.pairs");
  // Records: host table, bad table size, too-small output.
  rt::expect_invalid(
      [&] {
        streamer.forward(d_img, rp::span<const float>(detectors.data(), 6),
                         rp::span<const rs::listmode_event>(events.data(), 2), host_out,
                         s);
      },
      "detectors");
  rt::expect_invalid(
      [&] {
        streamer.forward(d_img, d_det.cspan().subspan(0, 5),
                         rp::span<const rs::listmode_event>(events.data(), 2), host_out,
                         s);
      },
      "detectors");
  rt::expect_invalid(
      [&] {
        streamer.forward(d_img, d_det.cspan(),
                         rp::span<const rs::listmode_event>(events.data(), 2),
                         host_out.subspan(0, 1), s);
      },
      "host_out");
  // TOF list-mode with pairs: too few host bins.
  rp::tof_params<float> tof;
  tof.bin_width = 1.f;
  tof.num_bins = 3;
  tof.sigma = 1.f;
  const std::vector<std::int16_t> bins(1);
  rt::expect_invalid(
      [&] {
        streamer.forward_tof_lm(
            d_img, rp::detector_pairs<float>(d_det.data(), 2, pairs.data(), 2),
            rp::span<const std::int16_t>(bins.data(), 1), tof, host_out, s);
      },
      "host_bins");
}

} // namespace
