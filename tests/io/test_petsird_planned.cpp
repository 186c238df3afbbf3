// The decoding behind the GPU PETSIRD reader, run on the host
// (io/petsird/varint_index.hpp, list_plan.hpp, planned_read.hpp): the
// varint-end index skips where decoding stops, a varint decoded from its
// last byte is what the reader decodes, and the planned reading gives the
// reader's arrays, and for every damaged file the reader's very error.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace pe = resproj::io::petsird;
using resproj::listmode_event;
using resproj::span;
using resproj_test::read_byte_vector;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

namespace {

/// Varints of 1 to 10 bytes in random order, and the offset after each.
struct varint_stream {
  std::vector<unsigned char> bytes;
  std::vector<std::size_t> ends;
  explicit varint_stream(int n, unsigned seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < n; ++i) {
      const int len = 1 + int(rng() % (i % 7 == 0 ? 10u : 3u));
      for (int b = 0; b + 1 < len; ++b)
        bytes.push_back(static_cast<unsigned char>(0x80u | (rng() & 0x7fu)));
      bytes.push_back(static_cast<unsigned char>(len == 10 ? 1u : (rng() & 0x7fu)));
      ends.push_back(bytes.size());
    }
  }
};

/// A PETSIRD file of three event blocks written by our writer (a scanner
/// of 72 detectors and 7 TOF bins: every varint of an event is one byte).
std::string write_file(const temp_dir &dir, std::size_t n, const std::string &name) {
  const resproj::scanner::polygon_scanner ps(8, 3, 100.0, 4.0, {-5.0, 0.0, 5.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = 7;
  d.tof.bin_width = 10.f;
  d.tof.sigma = 15.f;
  std::mt19937 rng(11);
  std::vector<std::vector<listmode_event>> ev(6);
  for (std::size_t b = 0; b < ev.size(); ++b)
    for (std::size_t i = 0; i < (b % 2 == 0 ? n : n / 4 + 1); ++i)
      ev[b].push_back(
          listmode_event::make(rng() % 72, rng() % 72, std::int16_t(rng() % 7)));
  std::vector<pe::time_block_events> blocks;
  for (std::size_t b = 0; b < 3; ++b)
    blocks.push_back(
        {std::uint32_t(b), std::uint32_t(b + 1),
         span<const listmode_event>(ev[2 * b].data(), ev[2 * b].size()),
         span<const listmode_event>(ev[2 * b + 1].data(), ev[2 * b + 1].size())});
  const std::string path = dir.file(name);
  pe::write_file(path, d,
                 span<const pe::time_block_events>(blocks.data(), blocks.size()));
  return path;
}

/// The message of the io_error `f` throws, or "no error".
template <class F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const resproj::io_error &e) {
    return e.what();
  }
  return "no error";
}

pe::detail::host_plan_decoder read_planned(const std::string &path, unsigned threads,
                                           std::size_t window) {
  pe::parallel_read_options o;
  o.threads = threads;
  o.window_bytes = window;
  pe::detail::host_plan_decoder d;
  (void)pe::detail::read_planned(path, o, d);
  return d;
}

} // namespace

TEST(PetsirdPlanned, VarintIndexSkipsWhereDecodingStops) {
  const varint_stream v(9000, 3); // about 18 pages
  pe::varint_end_index index(v.bytes.data(), v.bytes.size());
  ASSERT_GT(index.num_pages(), 10u);
  std::size_t counted = 0;
  for (std::size_t p = 0; p < index.num_pages(); ++p) {
    index.count_page(p);
    counted += index.page_ends(p);
  }
  EXPECT_EQ(counted, v.ends.size());
  EXPECT_EQ(pe::count_varint_ends(v.bytes.data(), v.bytes.size()), v.ends.size());
  std::mt19937 rng(4);
  for (int trial = 0; trial < 3000; ++trial) {
    const std::size_t first = rng() % v.ends.size();
    const std::size_t k = 1 + rng() % (trial % 3 == 0 ? 20 : v.ends.size() - first);
    const std::size_t from = first == 0 ? 0 : v.ends[first - 1];
    ASSERT_EQ(index.skip(from, k),
              first + k - 1 < v.ends.size() ? v.ends[first + k - 1] : v.bytes.size() + 1)
        << first << " " << k;
  }
  EXPECT_EQ(index.skip(0, v.ends.size() + 1), v.bytes.size() + 1);
  EXPECT_EQ(index.skip(v.ends[100], v.ends.size()), v.bytes.size() + 1);
}

TEST(PetsirdPlanned, VarintDecodedFromItsLastByteIsTheReadersValue) {
  // Every length from 1 to 11 bytes, canonical and padded with zero groups,
  // values below and past 32 bits, after a varint that ends just before.
  std::mt19937 rng(6);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<unsigned char> bytes = {0x05u};
    const int len = 1 + trial % 11;
    const bool small = trial % 3 != 0;
    for (int b = 0; b < len; ++b) {
      unsigned group = rng() & 0x7fu;
      if (small && 7 * b >= 28)
        group = 7 * b == 28 ? group & 0x0fu : 0u;
      if (b == 9)
        group &= trial % 5 == 0 ? 0x7fu : 0x01u;
      bytes.push_back(static_cast<unsigned char>(b + 1 < len ? 0x80u | group : group));
    }
    bytes.push_back(0x01u);
    pe::binary_input in(bytes.data() + 1, bytes.size() - 1, "mem", 0);
    std::uint32_t want = 0;
    const bool ok = error_of([&] { want = in.u32_checked("v"); }) == "no error";
    std::uint32_t got = 0;
    const bool decoded =
        pe::detail::decode_varint_at(bytes.data(), std::uint64_t(len), 1, got);
    ASSERT_EQ(decoded, ok) << trial;
    if (ok) {
      ASSERT_EQ(got, want) << trial;
    }
  }
}

TEST(PetsirdPlanned, PlannedDecodingGivesTheReadersArrays) {
  const temp_dir dir;
  const std::string path = write_file(dir, 20000, "events.petsird"); // ~60 pages a block
  const pe::file_contents want = pe::read_file(path);
  for (const unsigned threads : {1u, 3u})
    for (const std::size_t window :
         {std::size_t(1), std::size_t(50000), std::size_t(1) << 24}) {
      pe::parallel_read_options o;
      o.threads = threads;
      o.window_bytes = window;
      pe::detail::host_plan_decoder d;
      const auto r = pe::detail::read_planned(path, o, d);
      EXPECT_EQ(d.prompt_pairs, want.events.prompts.pairs) << threads << " " << window;
      EXPECT_EQ(d.prompt_tof_bins, want.events.prompts.tof_bins);
      EXPECT_EQ(d.delayed_pairs, want.events.delayeds.pairs);
      EXPECT_EQ(d.delayed_tof_bins, want.events.delayeds.tof_bins);
      EXPECT_EQ(r.num_prompts, want.events.prompts.size());
      EXPECT_EQ(r.num_delayeds, want.events.delayeds.size());
      EXPECT_EQ(r.num_time_blocks, want.events.blocks.size());
    }
}

TEST(PetsirdPlanned, EveryDamagedByteGivesTheReadersError) {
  // Each byte of the time blocks (and a few of the header's end) set to
  // values that matter to varints, counts and tags; and cuts at every
  // length: the planned reading fails exactly as `read_file` does, or
  // gives its arrays.
  const temp_dir dir;
  const std::string path = write_file(dir, 6, "small.petsird");
  const std::vector<unsigned char> bytes = read_byte_vector(path);
  const std::size_t blocks = std::size_t(pe::reader(path).time_blocks_offset());
  const std::string damaged = dir.file("damaged.petsird");
  const auto compare = [&](const std::vector<unsigned char> &x, const std::string &what) {
    write_bytes(damaged, x);
    pe::file_contents want;
    const std::string sequential = error_of([&] { want = pe::read_file(damaged); });
    for (const std::size_t window : {std::size_t(1), std::size_t(1) << 20}) {
      pe::detail::host_plan_decoder d;
      const std::string planned = error_of([&] { d = read_planned(damaged, 2, window); });
      ASSERT_EQ(planned, sequential) << what << " window " << window;
      if (sequential == "no error") {
        ASSERT_EQ(d.prompt_pairs, want.events.prompts.pairs) << what;
        ASSERT_EQ(d.delayed_tof_bins, want.events.delayeds.tof_bins) << what;
      }
    }
  };
  for (std::size_t i = blocks - 3; i < bytes.size(); ++i)
    for (const unsigned value :
         {0x00u, 0x01u, 0x02u, 0x06u, 0x07u, 0x47u, 0x7fu, 0x80u, 0xffu}) {
      auto x = bytes;
      x[i] = static_cast<unsigned char>(value);
      compare(x, "byte " + std::to_string(i) + " = " + std::to_string(value));
    }
  for (std::size_t n = blocks - 3; n < bytes.size(); ++n)
    compare(std::vector<unsigned char>(bytes.begin(), bytes.begin() + std::ptrdiff_t(n)),
            "cut at " + std::to_string(n));
}

TEST(PetsirdPlanned, TheFirstBadWindowInFileOrderIsReported) {
  // Block 0 bad at its last delayed, block 1 at its first prompt; with
  // small windows they fall into different windows: block 0's error wins.
  const temp_dir dir;
  const std::string path = write_file(dir, 30000, "two.petsird");
  const pe::file_contents c = pe::read_file(path);
  auto bytes = read_byte_vector(path);
  const std::size_t block1 = std::size_t(c.events.blocks[1].offset);
  bytes[block1 - 1 - 2 - 3] = 0x7f; // [last delayed][triples 0][quadruples 0][count 1]
  bytes[block1 + 9] = 0x7e;
  const std::string bad = dir.file("bad.petsird");
  write_bytes(bad, bytes);
  const std::string sequential = error_of([&] { (void)pe::read_file(bad); });
  EXPECT_NE(sequential.find("time block 0.delayed_events"), std::string::npos)
      << sequential;
  for (const std::size_t window : {std::size_t(1), std::size_t(1) << 24})
    EXPECT_EQ(error_of([&] { (void)read_planned(bad, 3, window); }), sequential);
}
