// gpu::read_petsird_to_device (gpu/petsird_events.cuh): the device arrays
// equal the host reader's, whatever the thread count and window size, with
// varints of one to three bytes; bad arguments and bad files are rejected
// with the reader's own errors. Skips without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/gpu/petsird_events.cuh"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace gpu = resproj::gpu;
namespace pe = resproj::io::petsird;
using resproj::listmode_event;
using resproj::span;

namespace {

/// A PETSIRD file of `blocks` event blocks written by our writer.
std::string write_file(const resproj_test::temp_dir &dir, std::size_t blocks) {
  const resproj::scanner::polygon_scanner ps(10, 4, 120.0, 4.0, {-4.0, 0.0, 4.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = 11;
  d.tof.bin_width = 10.f;
  d.tof.sigma = 18.f;
  std::mt19937 rng(3);
  const auto n = std::uint32_t(d.detectors.num_detectors());
  std::vector<std::vector<listmode_event>> ev(2 * blocks);
  std::vector<pe::time_block_events> tb;
  for (std::size_t b = 0; b < ev.size(); ++b)
    for (std::size_t i = 0; i < 100 + 37 * b; ++i)
      ev[b].push_back(
          listmode_event::make(rng() % n, rng() % n, std::int16_t(rng() % 11)));
  for (std::size_t b = 0; b < blocks; ++b)
    tb.push_back(
        {std::uint32_t(b), std::uint32_t(b + 1),
         span<const listmode_event>(ev[2 * b].data(), ev[2 * b].size()),
         span<const listmode_event>(ev[2 * b + 1].data(), ev[2 * b + 1].size())});
  const std::string path = dir.file("events.petsird");
  pe::write_file(path, d, span<const pe::time_block_events>(tb.data(), tb.size()));
  return path;
}

template <class T>
std::vector<T> head(const gpu::device_buffer<T> &b, std::size_t n, gpu::stream_ref s) {
  std::vector<T> all = resproj::test::download(b, s);
  all.resize(n);
  return all;
}

/// The device arrays of `got` equal the reader's arrays `want`.
void expect_events(const gpu::device_petsird_events &got, const pe::file_contents &want,
                   gpu::stream_ref s) {
  ASSERT_EQ(got.num_prompts, want.events.prompts.size());
  ASSERT_EQ(got.num_delayeds, want.events.delayeds.size());
  EXPECT_EQ(got.num_time_blocks, want.events.blocks.size());
  EXPECT_EQ(head(got.prompt_pairs, 2 * got.num_prompts, s), want.events.prompts.pairs);
  EXPECT_EQ(head(got.prompt_tof_bins, got.num_prompts, s), want.events.prompts.tof_bins);
  EXPECT_EQ(head(got.delayed_pairs, 2 * got.num_delayeds, s), want.events.delayeds.pairs);
  EXPECT_EQ(head(got.delayed_tof_bins, got.num_delayeds, s),
            want.events.delayeds.tof_bins);
}

} // namespace

TEST_F(GpuTest, PetsirdEventsOnTheDeviceEqualTheHostArrays) {
  const resproj_test::temp_dir dir;
  const std::string path = write_file(dir, 12);
  const pe::file_contents want = pe::read_file(path);
  gpu::stream s;
  for (const unsigned threads : {1u, 3u})
    for (const std::size_t window :
         {std::size_t(1), std::size_t(20000), std::size_t(1) << 26}) {
      gpu::petsird_device_options o;
      o.decode.window_bytes = window;
      o.decode.threads = threads;
      const gpu::device_petsird_events ev = gpu::read_petsird_to_device(path, s, o);
      expect_events(ev, want, s);
      EXPECT_EQ(pe::make_detector_table(ev.header.scanner).xyz(),
                pe::make_detector_table(want.header.scanner).xyz());
    }
}

TEST_F(GpuTest, PetsirdWithLongVarintsOnTheDeviceEqualsTheReader) {
  // Many events with varints of one to three bytes (a scanner of 1.2e4
  // detectors): tiles in every position of their pages.
  const resproj_test::temp_dir dir;
  const resproj::scanner::polygon_scanner ps(40, 60, 300.0, 4.0,
                                             {-4.0, 0.0, 4.0, 8.0, 12.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = 201;
  d.tof.bin_width = 2.f;
  d.tof.sigma = 18.f;
  const auto n = std::uint32_t(d.detectors.num_detectors());
  std::mt19937 rng(9);
  std::vector<std::vector<listmode_event>> ev(40);
  std::vector<pe::time_block_events> tb;
  for (std::size_t b = 0; b < ev.size(); ++b)
    for (std::size_t i = 0; i < 20000 + 977 * b; ++i)
      ev[b].push_back(
          listmode_event::make(rng() % n, rng() % n, std::int16_t(rng() % 201)));
  for (std::size_t b = 0; b + 1 < ev.size(); b += 2)
    tb.push_back({std::uint32_t(b), std::uint32_t(b + 1),
                  span<const listmode_event>(ev[b].data(), ev[b].size()),
                  span<const listmode_event>(ev[b + 1].data(), ev[b + 1].size())});
  const std::string path = dir.file("large.petsird");
  pe::write_file(path, d, span<const pe::time_block_events>(tb.data(), tb.size()));
  const pe::file_contents want = pe::read_file(path);
  gpu::stream s;
  for (const std::size_t window : {std::size_t(300000), std::size_t(1) << 26}) {
    gpu::petsird_device_options o;
    o.decode.window_bytes = window;
    expect_events(gpu::read_petsird_to_device(path, s, o), want, s);
  }
}

TEST_F(GpuTest, PetsirdToDeviceRejectsBadArgumentsAndFiles) {
  const resproj_test::temp_dir dir;
  const std::string path = write_file(dir, 2);
  gpu::stream s;
  resproj_test::expect_invalid(
      [&] { (void)gpu::read_petsird_to_device(path, cudaStreamLegacy); }, "s");
  std::string bytes = resproj_test::read_bytes(path);
  const std::string cut = dir.file("cut.petsird");
  resproj_test::write_bytes(cut, bytes.substr(0, bytes.size() - 5));
  resproj_test::expect_io_error([&] { (void)gpu::read_petsird_to_device(cut, s); },
                                {cut, "truncated"});
  // Damaged events, found by the kernel: the reader's own error.
  const std::uint64_t blocks = pe::reader(path).time_blocks_offset();
  const std::string bad = dir.file("bad.petsird");
  for (const std::size_t at :
       {std::size_t(blocks + 10), std::size_t(blocks + 12), bytes.size() - 10}) {
    std::string x = bytes;
    x[at] = char(0x7f);
    resproj_test::write_bytes(bad, x);
    std::string want = "no error", got = "no error";
    try {
      (void)pe::read_file(bad);
    } catch (const resproj::io_error &e) {
      want = e.what();
    }
    try {
      (void)gpu::read_petsird_to_device(bad, s);
    } catch (const resproj::io_error &e) {
      got = e.what();
    }
    EXPECT_NE(want, "no error") << at;
    EXPECT_EQ(got, want) << at;
  }
  // The stream still works afterwards.
  const auto ev = gpu::read_petsird_to_device(path, s);
  EXPECT_EQ(ev.num_time_blocks, 2u);
}
