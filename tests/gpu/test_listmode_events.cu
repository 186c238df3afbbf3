// Device-side list-mode records: GPU validation (count and first offending
// index) agrees with the host rule, conversions round trip, and bad
// arguments are rejected by name. (Projections of records streamed from
// the host: test_streamer_sources.cu.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/expect.hpp"
#include "common/random.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;
namespace rt = resproj_test;

namespace {

/// Valid random events for `nd` detectors and `nb` bins.
std::vector<rp::listmode_event> random_events(std::size_t n, std::uint32_t nd, int nb,
                                              rt::rng &random) {
  std::vector<rp::listmode_event> ev(n);
  for (auto &e : ev)
    e = rp::listmode_event::make(std::uint32_t(random.below(nd)),
                                 std::uint32_t(random.below(nd)),
                                 std::int16_t(random.below(std::uint64_t(nb))));
  return ev;
}

/// Makes event i invalid in one of several ways.
void spoil(rp::listmode_event &e, std::uint32_t nd, int nb, rt::rng &random) {
  switch (random.below(5)) {
  case 0:
    e.set_detector_a(nd);
    break;
  case 1:
    e.set_detector_b(nd + std::uint32_t(random.below(1000)));
    break;
  case 2:
    e.set_detector_a(0xffffffffu);
    break; // -1 as int32
  case 3:
    e.set_tof_bin(std::int16_t(nb));
    break;
  default:
    e.set_tof_bin(std::int16_t(-1 - int(random.below(100))));
    break;
  }
}

TEST_F(GpuTest, ValidationFindsCountAndFirstBadEvent) {
  const std::uint32_t nd = 1000;
  const int nb = 13;
  rt::rng random(41);
  gpu::stream s;
  for (const std::size_t n : {std::size_t(1), std::size_t(777), std::size_t(300000)}) {
    // none bad, a random few, a random many, all bad
    for (const double fraction : {0.0, 1e-4, 0.05, 1.0}) {
      auto ev = random_events(n, nd, nb, random);
      std::size_t bad = fraction == 1.0 ? n : std::size_t(fraction * double(n));
      if (fraction > 0 && fraction < 1 && bad == 0)
        bad = 1;
      for (std::size_t k = 0; k < bad; ++k)
        spoil(ev[fraction == 1.0 ? k : random.below(n)], nd, nb, random);
      const auto expected = rs::validate_events(ev, nd, nb); // host rule
      if (fraction == 0.0)
        ASSERT_EQ(expected.num_invalid, 0u);
      if (fraction == 1.0)
        ASSERT_EQ(expected.num_invalid, n);

      auto d_ev =
          gpu::make_device_buffer(rp::span<const rp::listmode_event>(ev.data(), n), s);
      const auto got = gpu::validate_events(d_ev.cspan(), nd, nb, s);
      EXPECT_EQ(got.num_invalid, expected.num_invalid) << n << " " << fraction;
      EXPECT_EQ(got.first_invalid, expected.first_invalid) << n << " " << fraction;

      // Asynchronous form with a caller workspace.
      const std::size_t bytes = gpu::validate_events_workspace_bytes(n);
      gpu::device_buffer<unsigned char> ws(bytes, s);
      gpu::device_buffer<rp::event_check_result> d_res(1, s);
      gpu::validate_events(d_ev.cspan(), nd, nb, ws.data(), bytes, d_res.data(), s);
      rp::event_check_result r;
      d_res.copy_to_host(&r, 1, 0, s);
      s.synchronize();
      EXPECT_EQ(r.num_invalid, expected.num_invalid);
      EXPECT_EQ(r.first_invalid, expected.first_invalid);

      // Split arrays, with and without bins.
      std::vector<std::int32_t> pairs;
      std::vector<std::int16_t> bins;
      rs::split_events(ev, pairs, bins);
      auto d_pairs = gpu::make_device_buffer(
          rp::span<const std::int32_t>(pairs.data(), pairs.size()), s);
      auto d_bins =
          gpu::make_device_buffer(rp::span<const std::int16_t>(bins.data(), n), s);
      const rp::span<const std::int32_t> hp(pairs.data(), pairs.size());
      const rp::span<const std::int16_t> hb(bins.data(), bins.size());
      const auto exp_split = rs::validate_events(hp, hb, nd, nb);
      const auto got_split =
          gpu::validate_events(d_pairs.cspan(), d_bins.cspan(), nd, nb, s);
      EXPECT_EQ(got_split.num_invalid, exp_split.num_invalid);
      EXPECT_EQ(got_split.first_invalid, exp_split.first_invalid);
      const auto exp_nobins = rs::validate_events(hp, {}, nd, nb);
      const auto got_nobins = gpu::validate_events(d_pairs.cspan(), {}, nd, nb, s);
      EXPECT_EQ(got_nobins.num_invalid, exp_nobins.num_invalid);
      EXPECT_EQ(got_nobins.first_invalid, exp_nobins.first_invalid);
    }
  }
}

TEST_F(GpuTest, ValidationOfNoEvents) {
  gpu::stream s;
  const auto r = gpu::validate_events(rp::span<const rp::listmode_event>(), 10, 3, s);
  EXPECT_EQ(r.num_invalid, 0u);
  EXPECT_EQ(r.first_invalid, 0u);
  // The asynchronous form needs no workspace for no events.
  gpu::device_buffer<rp::event_check_result> d_res(1, s);
  d_res.fill(rp::event_check_result{7, 7}, s);
  gpu::validate_events(rp::span<const rp::listmode_event>(), 10, 3, nullptr, 0,
                       d_res.data(), s);
  rp::event_check_result h{5, 5};
  d_res.copy_to_host(&h, 1, 0, s);
  s.synchronize();
  EXPECT_EQ(h.num_invalid, 0u);
  EXPECT_EQ(h.first_invalid, 0u);
}

TEST_F(GpuTest, ConversionRoundTrips) {
  rt::rng random(7);
  const std::size_t n = 100003;
  auto ev = random_events(n, 0xffffffffu, 30000, random);
  for (std::size_t k = 0; k < 50; ++k) // negative bins and huge indices
    spoil(ev[random.below(n)], 5, 3, random);
  gpu::stream s;
  auto d_ev =
      gpu::make_device_buffer(rp::span<const rp::listmode_event>(ev.data(), n), s);
  gpu::device_buffer<std::int32_t> d_pairs(2 * n, s);
  gpu::device_buffer<std::int16_t> d_bins(n, s);
  gpu::split_events(d_ev.cspan(), d_pairs.span(), d_bins.span(), s);
  std::vector<std::int32_t> pairs(2 * n), host_pairs;
  std::vector<std::int16_t> bins(n), host_bins;
  d_pairs.copy_to_host(rp::span<std::int32_t>(pairs.data(), pairs.size()), s);
  d_bins.copy_to_host(rp::span<std::int16_t>(bins.data(), n), s);
  s.synchronize();
  rs::split_events(ev, host_pairs, host_bins);
  EXPECT_EQ(pairs, host_pairs);
  EXPECT_EQ(bins, host_bins);

  // Pack back on the device: equal to the host packing of the same arrays.
  gpu::device_buffer<rp::listmode_event> d_packed(n, s);
  gpu::pack_events(d_pairs.cspan(), d_bins.cspan(), d_packed.span(), s);
  std::vector<rp::listmode_event> packed(n);
  d_packed.copy_to_host(rp::span<rp::listmode_event>(packed.data(), n), s);
  s.synchronize();
  const auto host_packed =
      rs::pack_events(rp::span<const std::int32_t>(pairs.data(), 2 * n),
                      rp::span<const std::int16_t>(bins.data(), n));
  std::size_t differ = 0, same_as_input = 0;
  for (std::size_t i = 0; i < n; ++i) {
    differ += std::memcmp(packed[i].bytes, host_packed[i].bytes, 10) != 0;
    same_as_input += std::memcmp(packed[i].bytes, ev[i].bytes, 10) == 0;
  }
  EXPECT_EQ(differ, 0u);
  // Only indices >= 2^31 (split to -1) do not survive the round trip.
  std::size_t huge = 0;
  for (const auto &e : ev)
    huge += (e.detector_a() > 0x7fffffffu && e.detector_a() != 0xffffffffu) ||
            (e.detector_b() > 0x7fffffffu && e.detector_b() != 0xffffffffu);
  EXPECT_EQ(same_as_input, n - huge);

  // Without bins: bins are not written / packed as 0.
  gpu::split_events(d_ev.cspan(), d_pairs.span(), {}, s);
  gpu::pack_events(d_pairs.cspan(), {}, d_packed.span(), s);
  d_packed.copy_to_host(rp::span<rp::listmode_event>(packed.data(), n), s);
  s.synchronize();
  for (std::size_t i = 0; i < n; i += 997)
    EXPECT_EQ(packed[i].tof_bin(), 0);
}

TEST_F(GpuTest, ListmodeEventsBadArguments) {
  gpu::stream s;
  gpu::device_buffer<rp::listmode_event> d_ev(4, s);
  gpu::device_buffer<std::int32_t> d_pairs(8, s);
  gpu::device_buffer<std::int16_t> d_bins(4, s);
  std::vector<rp::listmode_event> host_ev(4);
  rt::expect_invalid([&] { gpu::validate_events(d_ev.cspan(), -1, 3, s); },
                     "num_detectors");
  rt::expect_invalid(
      [&] {
        gpu::validate_events(rp::span<const rp::listmode_event>(host_ev.data(), 4), 5, 3,
                             s);
      },
      "events");
  rt::expect_invalid(
      [&] {
        gpu::validate_events(d_pairs.cspan().subspan(0, 7), d_bins.cspan(), 5, 3, s);
      },
      "pairs");
  rt::expect_invalid(
      [&] {
        gpu::validate_events(d_pairs.cspan(), d_bins.cspan().subspan(0, 3), 5, 3, s);
      },
      "tof_bins");
  gpu::device_buffer<rp::event_check_result> d_res(1, s);
  rt::expect_invalid(
      [&] { gpu::validate_events(d_ev.cspan(), 5, 3, nullptr, 0, d_res.data(), s); },
      "workspace_bytes");
  rt::expect_invalid(
      [&] { gpu::split_events(d_ev.cspan(), d_pairs.span().subspan(0, 7), {}, s); },
      "pairs");
  rt::expect_invalid(
      [&] { gpu::pack_events(d_pairs.cspan(), {}, d_ev.span().subspan(0, 3), s); },
      "events");
}

} // namespace
