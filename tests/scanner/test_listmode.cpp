// Tests of the 10-byte list-mode event record: layout, encoding,
// conversion to pair / bin arrays and validation.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/expect.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/listmode.hpp"

namespace rs = resproj::scanner;
using resproj::span;

// The record lives in core; the scanner names are aliases of it.
static_assert(std::is_same_v<rs::listmode_event, resproj::listmode_event>);
static_assert(std::is_same_v<rs::event_check_result, resproj::event_check_result>);
static_assert(sizeof(rs::listmode_event) == 10);
static_assert(alignof(rs::listmode_event) == 1);
static_assert(sizeof(rs::listmode_event[7]) == 70); // no padding in arrays
static_assert(std::is_trivially_copyable_v<rs::listmode_event>);
static_assert(std::is_standard_layout_v<rs::listmode_event>);
static_assert(std::is_trivially_copyable_v<rs::event_check_result>);
static_assert(std::is_same_v<decltype(rs::event_check_result::num_invalid), std::size_t>);
static_assert(
    std::is_same_v<decltype(rs::event_check_result::first_invalid), std::size_t>);

namespace {

using resproj_test::expect_invalid;

} // namespace

TEST(ListmodeEvent, ByteLayoutIsLittleEndian) {
  const auto e = rs::listmode_event::make(0x04030201u, 0x0d0c0b0au, std::int16_t(-2));
  const unsigned char expect[10] = {0x01, 0x02, 0x03, 0x04, 0x0a,
                                    0x0b, 0x0c, 0x0d, 0xfe, 0xff};
  EXPECT_EQ(std::memcmp(&e, expect, 10), 0);
  rs::listmode_event f;
  std::memcpy(&f, expect, 10);
  EXPECT_EQ(f.detector_a(), 0x04030201u);
  EXPECT_EQ(f.detector_b(), 0x0d0c0b0au);
  EXPECT_EQ(f.tof_bin(), -2);
  const rs::listmode_event z{};
  EXPECT_EQ(z.detector_a(), 0u);
  EXPECT_EQ(z.detector_b(), 0u);
  EXPECT_EQ(z.tof_bin(), 0);
}

TEST(ListmodeEvent, FieldsRoundTrip) {
  const std::uint32_t dets[] = {0u, 1u, 255u, 256u, 19583u, 0x7fffffffu, 0xffffffffu};
  const std::int16_t bins[] = {0,
                               1,
                               28,
                               -1,
                               255,
                               256,
                               std::numeric_limits<std::int16_t>::min(),
                               std::numeric_limits<std::int16_t>::max()};
  for (auto a : dets)
    for (auto b : dets)
      for (auto t : bins) {
        auto e = rs::listmode_event::make(a, b, t);
        ASSERT_EQ(e.detector_a(), a);
        ASSERT_EQ(e.detector_b(), b);
        ASSERT_EQ(e.tof_bin(), t);
        e.set_detector_a(b);
        e.set_tof_bin(std::int16_t(7));
        ASSERT_EQ(e.detector_a(), b);
        ASSERT_EQ(e.detector_b(), b);
        ASSERT_EQ(e.tof_bin(), 7);
      }
}

TEST(ListmodeEvent, SplitAndPackRoundTrip) {
  std::vector<rs::listmode_event> ev;
  for (std::uint32_t i = 0; i < 100; ++i)
    ev.push_back(rs::listmode_event::make(i * 191u, 19583u - i, std::int16_t(i % 29)));
  std::vector<std::int32_t> pairs;
  std::vector<std::int16_t> bins;
  rs::split_events(ev, pairs, bins);
  ASSERT_EQ(pairs.size(), 200u);
  ASSERT_EQ(bins.size(), 100u);
  for (std::size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(pairs[2 * i], std::int32_t(i * 191));
    EXPECT_EQ(pairs[2 * i + 1], std::int32_t(19583 - i));
    EXPECT_EQ(bins[i], std::int16_t(i % 29));
  }
  const auto back = rs::pack_events(span<const std::int32_t>(pairs.data(), pairs.size()),
                                    span<const std::int16_t>(bins.data(), bins.size()));
  ASSERT_EQ(back.size(), ev.size());
  EXPECT_EQ(std::memcmp(back.data(), ev.data(), 10 * ev.size()), 0);
  // Non-TOF: bins left alone / packed as 0.
  std::vector<std::int32_t> p2(200);
  rs::split_events(span<const rs::listmode_event>(ev.data(), ev.size()),
                   span<std::int32_t>(p2.data(), p2.size()), span<std::int16_t>());
  EXPECT_EQ(p2, pairs);
  const auto nb = rs::pack_events(span<const std::int32_t>(pairs.data(), 4),
                                  span<const std::int16_t>());
  ASSERT_EQ(nb.size(), 2u);
  EXPECT_EQ(nb[1].tof_bin(), 0);
  // Indices of 2^31 and above become -1 (invalid) in the arrays.
  const std::vector<rs::listmode_event> big{rs::listmode_event::make(0x80000000u, 3u, 0)};
  rs::split_events(big, pairs, bins);
  EXPECT_EQ(pairs[0], -1);
  EXPECT_EQ(pairs[1], 3);
}

TEST(ListmodeEvent, ValidationCountsAndFirstIndex) {
  const std::int32_t nd = rs::dmi().to_detector_table().num_detectors(); // 19584
  const int nb = 29;
  std::vector<rs::listmode_event> ev(1000);
  for (std::uint32_t i = 0; i < 1000; ++i)
    ev[i] = rs::listmode_event::make(i * 19u, std::uint32_t(nd) - 1 - i,
                                     std::int16_t(8 + i % 13));
  auto check = [&](std::size_t n_bad, std::size_t first, int bins) {
    const auto r = rs::validate_events(ev, nd, bins);
    EXPECT_EQ(r.num_invalid, n_bad);
    EXPECT_EQ(r.first_invalid, first);
    std::vector<std::int32_t> pairs;
    std::vector<std::int16_t> tb;
    rs::split_events(ev, pairs, tb);
    const auto q =
        rs::validate_events(span<const std::int32_t>(pairs.data(), pairs.size()),
                            span<const std::int16_t>(tb.data(), tb.size()), nd, bins);
    EXPECT_EQ(q.num_invalid, n_bad);
    EXPECT_EQ(q.first_invalid, first);
  };
  check(0, 1000, nb);                            // none: first_invalid == count
  ev[700].set_detector_a(std::uint32_t(nd));     // one past the table
  ev[300].set_tof_bin(std::int16_t(nb));         // one past the bins
  ev[500].set_tof_bin(std::int16_t(-1));         // negative bin
  ev[900].set_detector_b(0xffffffffu);           // huge index
  ev[901].set_detector_a(std::uint32_t(nd - 1)); // last detector: valid
  ev[902].set_tof_bin(std::int16_t(nb - 1));     // last bin: valid
  check(4, 300, nb);
  check(2, 700, 0); // non-TOF: bins not checked
  EXPECT_TRUE(rs::event_is_valid(0, nd - 1, 0, nd, nb));
  EXPECT_FALSE(rs::event_is_valid(-1, 0, 0, nd, nb));
  EXPECT_FALSE(rs::event_is_valid(0, 0, nb, nd, nb));
  EXPECT_TRUE(rs::event_is_valid(0, 0, nb, nd, 0));
  // Empty input.
  const auto e = rs::validate_events(std::vector<rs::listmode_event>{}, nd, nb);
  EXPECT_EQ(e.num_invalid, 0u);
  EXPECT_EQ(e.first_invalid, 0u);
}

TEST(ListmodeEvent, RejectsBadSizes) {
  std::vector<rs::listmode_event> ev(3);
  std::vector<std::int32_t> pairs(5);
  std::vector<std::int16_t> bins(2);
  expect_invalid(
      [&] {
        rs::split_events(span<const rs::listmode_event>(ev.data(), ev.size()),
                         span<std::int32_t>(pairs.data(), pairs.size()),
                         span<std::int16_t>());
      },
      "pairs");
  pairs.resize(6);
  expect_invalid(
      [&] {
        rs::split_events(span<const rs::listmode_event>(ev.data(), ev.size()),
                         span<std::int32_t>(pairs.data(), pairs.size()),
                         span<std::int16_t>(bins.data(), bins.size()));
      },
      "tof_bins");
  expect_invalid(
      [&] {
        rs::validate_events(span<const std::int32_t>(pairs.data(), 5),
                            span<const std::int16_t>(), 10, 0);
      },
      "pairs");
  expect_invalid(
      [&] {
        rs::validate_events(span<const std::int32_t>(pairs.data(), 6),
                            span<const std::int16_t>(bins.data(), 2), 10, 29);
      },
      "tof_bins");
  expect_invalid([&] { rs::validate_events(ev, -1, 29); }, "num_detectors");
  expect_invalid(
      [&] {
        rs::pack_events(span<const std::int32_t>(pairs.data(), 3),
                        span<const std::int16_t>());
      },
      "pairs");
  expect_invalid(
      [&] {
        rs::pack_events(span<const std::int32_t>(pairs.data(), 6),
                        span<const std::int16_t>(bins.data(), 1));
      },
      "tof_bins");
}
