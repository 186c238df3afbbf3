// Host-streamed detector pairs and packed list-mode records (lor_streamer)
// give the values of the resident detector pairs and of the explicit end
// points: non-TOF forward/back and TOF list-mode forward/back, pageable
// and pinned host arrays, chunk sizes that do and do not divide the count.
// A declared sinogram layout of host LORs changes no result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/detector_lors.hpp"
#include "common/expect.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/scanner/listmode.hpp"

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
    const rp::op::tof_listmode tof_lm{tof, d_bins.cspan()};
    gpu::device_buffer<float> out(n, s);
    gpu::forward(rp::op::non_tof{}, d_img, lors, out.span(), s);
    fwd_ref = download(out, s);
    d_bp.zero(s);
    gpu::back(rp::op::non_tof{}, d_bp, lors, d_values.cspan(), s);
    bp_ref = download(d_bp, s);
    gpu::forward(tof_lm, d_img, lors, out.span(), s);
    tof_fwd_ref = download(out, s);
    d_bp.zero(s);
    gpu::back(tof_lm, d_bp, lors, d_values.cspan(), s);
    tof_bp_ref = download(d_bp, s);
  }

  /// Host records against the resident detector table.
  rs::listmode_records<float> records(const rs::listmode_event *events) const {
    return rs::listmode_records<float>(d_det.data(), set.num_detectors(), events, n);
  }
};

class StreamerSources : public GpuTest,
                        public ::testing::WithParamInterface<std::size_t> {};

TEST_P(StreamerSources, EqualResidentAndEndPoints) {
  problem p;
  auto &s = p.s;
  const std::size_t n = p.n;
  gpu::lor_streamer<float> streamer(GetParam());

  // Resident detector pairs agree with the end points.
  const rp::detector_pairs<float> resident(p.d_det.data(), p.set.num_detectors(),
                                           p.d_pairs.data(), n);
  gpu::device_buffer<float> out(n, s);
  gpu::forward(rp::op::non_tof{}, p.d_img, resident, out.span(), s);
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
    const rs::listmode_records<float> records =
        p.records(pinned ? pe.data() : p.events.data());
    const rp::span<const float> values(pinned ? pv.data() : p.values.data(), n);
    const rp::span<float> host_out(pinned ? po.data() : pageable_out.data(), n);
    const auto result = [&] {
      return std::vector<float>(host_out.begin(), host_out.end());
    };
    const rp::detector_pairs<float> host_pairs(p.d_det.data(), p.set.num_detectors(),
                                               pairs, n);

    // Non-TOF forward / back: pairs and records.
    const rp::op::non_tof plain;
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(plain, p.d_img, host_pairs, host_out, s);
    EXPECT_LT(relative_error(result(), p.fwd_ref, 0), 1e-6);
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(plain, p.d_img, records, host_out, s);
    EXPECT_LT(relative_error(result(), p.fwd_ref, 0), 1e-6);
    p.d_bp.zero(s);
    streamer.back(plain, p.d_bp, host_pairs, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.bp_ref, 0), 1e-5);
    p.d_bp.zero(s);
    streamer.back(plain, p.d_bp, records, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.bp_ref, 0), 1e-5);

    // TOF list-mode forward / back: pairs + host bins, and records with
    // their own bins (empty bins in the operation) or the operation's.
    const rp::op::tof_listmode with_bins{p.tof, bins};
    const rp::op::tof_listmode record_bins{p.tof};
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(with_bins, p.d_img, host_pairs, host_out, s);
    EXPECT_LT(relative_error(result(), p.tof_fwd_ref, 0), 1e-6);
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(record_bins, p.d_img, records, host_out, s);
    EXPECT_LT(relative_error(result(), p.tof_fwd_ref, 0), 1e-6);
    std::fill(host_out.begin(), host_out.end(), -1.f);
    streamer.forward(with_bins, p.d_img, records, host_out, s);
    EXPECT_LT(relative_error(result(), p.tof_fwd_ref, 0), 1e-6);
    p.d_bp.zero(s);
    streamer.back(with_bins, p.d_bp, host_pairs, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.tof_bp_ref, 0), 1e-5);
    p.d_bp.zero(s);
    streamer.back(record_bins, p.d_bp, records, values, s);
    EXPECT_LT(relative_error(download(p.d_bp, s), p.tof_bp_ref, 0), 1e-5);
  }

  // The end-point form still works on the same streamer after the others.
  std::vector<float> fwd(n);
  streamer.forward(rp::op::non_tof{}, p.d_img,
                   rp::lor_view<const float>(p.set.starts.data(), p.set.ends.data(), n),
                   rp::span<float>(fwd.data(), n), s);
  EXPECT_LT(relative_error(fwd, p.fwd_ref, 0), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, StreamerSources,
                         ::testing::Values(std::size_t(1000), std::size_t(7001),
                                           std::size_t(100000)));

TEST_F(GpuTest, StreamerSourcesBadArguments) {
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
  auto d_events =
      gpu::make_device_buffer(rp::span<const rs::listmode_event>(events.data(), 2), s);
  std::vector<float> out(2);
  const rp::span<float> host_out(out.data(), 2);
  const rp::op::non_tof plain;
  gpu::lor_streamer<float> streamer(16);
  // Host detector table.
  rt::expect_invalid(
      [&] {
        streamer.forward(plain, d_img,
                         rp::detector_pairs<float>(detectors.data(), 2, pairs.data(), 2),
                         host_out, s);
      },
      "host_lors.detectors");
  // Device pairs where host pairs are required.
  rt::expect_invalid(
      [&] {
        streamer.forward(plain, d_img,
                         rp::detector_pairs<float>(d_det.data(), 2, d_pairs.data(), 2),
                         host_out, s);
      },
      "host_lors.pairs");
  // Records: host table, empty table, device records, too-small output.
  rt::expect_invalid(
      [&] {
        streamer.forward(
            plain, d_img,
            rs::listmode_records<float>(detectors.data(), 2, events.data(), 2), host_out,
            s);
      },
      "host_lors.detectors");
  rt::expect_invalid(
      [&] {
        streamer.forward(plain, d_img,
                         rs::listmode_records<float>(d_det.data(), 0, events.data(), 2),
                         host_out, s);
      },
      "host_lors.detectors");
  rt::expect_invalid(
      [&] {
        streamer.forward(plain, d_img,
                         rs::listmode_records<float>(d_det.data(), 2, d_events.data(), 2),
                         host_out, s);
      },
      "host_lors.events");
  rt::expect_invalid(
      [&] {
        streamer.forward(plain, d_img,
                         rs::listmode_records<float>(d_det.data(), 2, events.data(), 2),
                         host_out.subspan(0, 1), s);
      },
      "host_out");
  // TOF list-mode with pairs: too few host bins, no bins, device bins.
  rp::tof_params<float> tof;
  tof.bin_width = 1.f;
  tof.num_bins = 3;
  tof.sigma = 1.f;
  const std::vector<std::int16_t> bins(2);
  auto d_bins = gpu::make_device_buffer(rp::span<const std::int16_t>(bins.data(), 2), s);
  const rp::detector_pairs<float> host_pairs(d_det.data(), 2, pairs.data(), 2);
  rt::expect_invalid(
      [&] {
        streamer.forward(
            rp::op::tof_listmode{tof, rp::span<const std::int16_t>(bins.data(), 1)},
            d_img, host_pairs, host_out, s);
      },
      "bins");
  rt::expect_invalid(
      [&] {
        streamer.forward(rp::op::tof_listmode{tof}, d_img, host_pairs, host_out, s);
      },
      "bins");
  rt::expect_invalid(
      [&] {
        streamer.forward(rp::op::tof_listmode{tof, d_bins.cspan()}, d_img, host_pairs,
                         host_out, s);
      },
      "bins");
  // TOF sinogram: values for every bin, per-LOR arrays in host memory.
  std::vector<float> values(2 * 3);
  rt::expect_invalid(
      [&] {
        streamer.back(rp::op::tof_sinogram{tof}, d_img, host_pairs,
                      rp::span<const float>(values.data(), 5), s);
      },
      "host_values");
  auto device_sigmas = tof;
  device_sigmas.sigmas = d_det.cspan().subspan(0, 2);
  rt::expect_invalid(
      [&] {
        streamer.back(rp::op::tof_sinogram{device_sigmas}, d_img, host_pairs,
                      rp::span<const float>(values.data(), 6), s);
      },
      "tof.sigmas");
  auto bad_tof = tof;
  bad_tof.num_bins = 0;
  rt::expect_invalid(
      [&] {
        streamer.back(rp::op::tof_sinogram{bad_tof}, d_img, host_pairs,
                      rp::span<const float>(values.data(), 6), s);
      },
      "tof.num_bins");
  // Nothing was written by the rejected calls; the streamer still works.
  d_img.zero(s);
  streamer.back(rp::op::tof_sinogram{tof}, d_img, host_pairs,
                rp::span<const float>(values.data(), 6), s);
  s.synchronize();
}

/// LORs of a sinogram in [plane][view][radial] order, in host memory, and
/// the same LORs as detector pairs into a table of their end points.
struct sinogram_problem {
  static constexpr std::size_t views = 12, radial = 24, planes = 10;
  static constexpr std::size_t per_plane = views * radial;
  static constexpr std::size_t n = planes * per_plane;
  rp::image_geometry g = rp::image_geometry::centred({24, 24, 12}, {2.0, 2.0, 2.5});
  std::vector<float> starts, ends, detectors, values, tof_values, sigmas;
  std::vector<std::int32_t> pairs;
  rp::tof_params<float> tof;
  gpu::stream s;
  gpu::device_image<float> d_img{g, s}, d_bp{g, s};
  gpu::device_buffer<float> d_det;

  sinogram_problem() {
    const double pi = 3.14159265358979323846;
    for (std::size_t p = 0; p < planes; ++p)
      for (std::size_t v = 0; v < views; ++v)
        for (std::size_t r = 0; r < radial; ++r) {
          const double phi = pi * double(v) / views;
          const double off = (double(r) - 0.5 * double(radial - 1)) * 1.8;
          const double z = -12.5 + 2.5 * double(p) + 0.4;
          const double c[2] = {-off * std::sin(phi), off * std::cos(phi)};
          const double d[2] = {std::cos(phi), std::sin(phi)};
          for (const double t : {-40.0, 40.0}) {
            std::vector<float> &e = t < 0 ? starts : ends;
            e.push_back(float(c[0] + t * d[0]));
            e.push_back(float(c[1] + t * d[1]));
            e.push_back(float(z + (t < 0 ? -0.3 : 0.3)));
          }
        }
    detectors = starts;
    detectors.insert(detectors.end(), ends.begin(), ends.end());
    for (std::size_t i = 0; i < n; ++i) {
      pairs.push_back(std::int32_t(i));
      pairs.push_back(std::int32_t(n + i));
    }
    tof.bin_width = 6.f;
    tof.num_bins = 11;
    tof.sigma = 5.f;
    tof.num_sigmas = 3.f;
    sigmas = resproj_test_gpu::random_values<float>(n, 7, 4.0, 6.0);
    values = resproj_test_gpu::random_values<float>(n, 5, 0.5, 2.0);
    tof_values = resproj_test_gpu::random_values<float>(n * 11, 6, 0.5, 2.0);
    const auto image =
        resproj_test_gpu::random_values<float>(std::size_t(g.num_voxels()), 3, 0.2, 1.0);
    d_img.upload(rp::span<const float>(image.data(), image.size()), s);
    d_det = gpu::make_device_buffer(
        rp::span<const float>(detectors.data(), detectors.size()), s);
  }
  rp::lor_view<const float> lors() const {
    return rp::lor_view<const float>(starts.data(), ends.data(), n);
  }
  rp::detector_pairs<float> host_pairs() const {
    return rp::detector_pairs<float>(d_det.data(), 2 * n, pairs.data(), n);
  }
  rp::op::tof_sinogram<float> tof_op() const {
    rp::tof_params<float> t = tof;
    t.sigmas = rp::span<const float>(sigmas.data(), n);
    return rp::op::tof_sinogram<float>(t);
  }
};

/// Forward and back projections of a streamer call over `lors`.
struct streamed_results {
  std::vector<float> fwd, tof_fwd, bp, tof_bp;
};

template <class Lors>
streamed_results stream_all(sinogram_problem &p, gpu::lor_streamer<float> &streamer,
                            const Lors &lors) {
  auto &s = p.s;
  const std::size_t n = p.n, nb = std::size_t(p.tof.num_bins);
  streamed_results r;
  r.fwd.assign(n, -1.f);
  r.tof_fwd.assign(n * nb, -1.f);
  streamer.forward(rp::op::non_tof{}, p.d_img, lors, rp::span<float>(r.fwd.data(), n), s);
  streamer.forward(p.tof_op(), p.d_img, lors, rp::span<float>(r.tof_fwd.data(), n * nb),
                   s);
  p.d_bp.zero(s);
  streamer.back(rp::op::non_tof{}, p.d_bp, lors,
                rp::span<const float>(p.values.data(), n), s);
  r.bp = download(p.d_bp, s);
  p.d_bp.zero(s);
  streamer.back(p.tof_op(), p.d_bp, lors,
                rp::span<const float>(p.tof_values.data(), n * nb), s);
  r.tof_bp = download(p.d_bp, s);
  return r;
}

void expect_same_results(const streamed_results &got, const streamed_results &ref) {
  // Forward: non-TOF chunks of whole planes go by transaxial bins, which
  // group each sample's bilinear terms differently (the same values to
  // rounding); TOF values do not depend on which thread computes them.
  EXPECT_LT(relative_error(got.fwd, ref.fwd, 0), 1e-6);
  EXPECT_EQ(got.tof_fwd, ref.tof_fwd);
  // Back: the same sums, added in another order.
  EXPECT_LT(relative_error(got.bp, ref.bp, 0), 1e-5);
  EXPECT_LT(relative_error(got.tof_bp, ref.tof_bp, 0), 1e-5);
  double sum = 0;
  for (const float x : ref.fwd)
    sum += double(x);
  EXPECT_GT(sum, 0.0);
}

class StreamerLayout : public GpuTest,
                       public ::testing::WithParamInterface<std::size_t> {};

TEST_P(StreamerLayout, SinogramLayoutChangesNoResult) {
  sinogram_problem p;
  const std::size_t chunk = GetParam();
  const rp::lor_layout layout = rp::lor_layout::sinogram(p.views, p.radial);
  if (chunk % p.per_plane == 0) {
    // Chunks of whole planes run with lanes along planes.
    const int sms = gpu::detail::multiprocessor_count(gpu::current_device());
    EXPECT_GT(gpu::choose_kernel(gpu::operation_kind::non_tof, gpu::direction::forward,
                                 layout, chunk, true, sms)
                  .rows,
              std::size_t(1));
    EXPECT_GT(gpu::choose_kernel(gpu::operation_kind::tof_sinogram, gpu::direction::back,
                                 layout, chunk, true, sms)
                  .rows,
              std::size_t(1));
  }
  gpu::lor_streamer<float> streamer(chunk);
  {
    SCOPED_TRACE("end points");
    const streamed_results ref = stream_all(p, streamer, p.lors());
    expect_same_results(stream_all(p, streamer, p.lors().with_layout(layout)), ref);
  }
  {
    SCOPED_TRACE("detector pairs");
    const streamed_results ref = stream_all(p, streamer, p.host_pairs());
    expect_same_results(stream_all(p, streamer, p.host_pairs().with_layout(layout)), ref);
  }
}

// Chunks of 4 whole planes (the last of 2), and chunks that cut planes.
INSTANTIATE_TEST_SUITE_P(ChunkSizes, StreamerLayout,
                         ::testing::Values(std::size_t(4 * sinogram_problem::per_plane),
                                           std::size_t(1000)));

} // namespace
