// Tests of io/petsird/: files written by resproj's PETSIRD writer read back
// (detector table, events, TOF parameters, efficiencies), chunked
// streaming, the TOF and efficiency conversions on hand-made headers, and
// malformed input (truncation at every byte, wrong magic, version or
// schema, bad varints, absurd sizes, bad union tags, trailing bytes, bad
// indices), which must give an io_error naming the problem. The checks
// against the official implementation are in test_petsird_cross.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/files.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace pe = resproj::io::petsird;
using resproj::listmode_event;
using resproj::span;
using resproj_test::expect_invalid;
using resproj_test::expect_io_error;
using resproj_test::read_byte_vector;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

namespace {

pe::scanner_description small_scanner(bool with_efficiency = true) {
  const resproj::scanner::polygon_scanner ps(8, 3, 100.0, 4.0, {-5.0, 0.0, 5.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = 7;
  d.tof.bin_width = 10.f;
  d.tof.sigma = 15.f;
  if (with_efficiency)
    for (int i = 0; i < d.detectors.num_detectors(); ++i)
      d.efficiency.push_back(0.5f + 0.01f * float(i));
  return d;
}

std::vector<listmode_event> random_events(std::size_t n, std::uint32_t num_detectors,
                                          int num_bins, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<listmode_event> ev;
  for (std::size_t i = 0; i < n; ++i)
    ev.push_back(listmode_event::make(rng() % num_detectors, rng() % num_detectors,
                                      std::int16_t(int(rng() % unsigned(num_bins)))));
  return ev;
}

/// A small file written by our writer: 3 event blocks, the first event (5, 3, 2).
struct written_file {
  temp_dir dir;
  std::string path = dir.file("small.petsird");
  pe::scanner_description d = small_scanner();
  std::vector<std::vector<listmode_event>> prompts, delayeds;

  explicit written_file(std::size_t n = 40) {
    const auto nd = std::uint32_t(d.detectors.num_detectors());
    for (unsigned b = 0; b < 3; ++b) {
      prompts.push_back(random_events(n, nd, d.tof.num_bins, 10 + b));
      delayeds.push_back(random_events(n / 4, nd, d.tof.num_bins, 20 + b));
    }
    prompts[0][0] = listmode_event::make(5, 3, 2);
    std::vector<pe::time_block_events> blocks;
    for (std::size_t b = 0; b < 3; ++b)
      blocks.push_back(
          {std::uint32_t(10 * b), std::uint32_t(10 * b + 10),
           span<const listmode_event>(prompts[b].data(), prompts[b].size()),
           span<const listmode_event>(delayeds[b].data(), delayeds[b].size())});
    pe::write_file(path, d,
                   span<const pe::time_block_events>(blocks.data(), blocks.size()));
  }
};

/// What PETSIRD stores for our event: first detection >= second, the TOF
/// bin mirrored when swapped.
void expect_stored(const std::vector<listmode_event> &in,
                   const pe::coincidence_arrays &out, std::size_t first, int num_bins) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::int32_t a = std::int32_t(in[i].detector_a()),
                       b = std::int32_t(in[i].detector_b());
    const bool swap = a < b;
    ASSERT_EQ(out.pairs[2 * (first + i)], swap ? b : a) << i;
    ASSERT_EQ(out.pairs[2 * (first + i) + 1], swap ? a : b) << i;
    ASSERT_EQ(out.tof_bins[first + i],
              swap ? num_bins - 1 - in[i].tof_bin() : in[i].tof_bin());
  }
}

/// Drains a reader over `bytes[0, size)`.
void read_all(const std::vector<unsigned char> &bytes, std::size_t size,
              std::size_t chunk = 64) {
  pe::reader r(bytes.data(), size, "memory");
  pe::event_chunk c;
  while (r.next_chunk(chunk, c)) {
  }
}

} // namespace

TEST(Petsird, WriterRoundTripGivesTheSameTableEventsAndTof) {
  const written_file f;
  const pe::file_contents c = pe::read_file(f.path);
  const auto table = pe::make_detector_table(c.header.scanner);
  EXPECT_EQ(table.xyz(), f.d.detectors.xyz());
  ASSERT_EQ(c.header.scanner.num_module_types(), 1u);
  EXPECT_FALSE(c.header.has_exam);
  ASSERT_EQ(c.events.blocks.size(), 3u);
  std::size_t p = 0, q = 0;
  for (std::size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(c.events.blocks[b].kind, pe::time_block_kind::event);
    EXPECT_EQ(c.events.blocks[b].start_ms, 10 * b);
    EXPECT_EQ(c.events.blocks[b].stop_ms, 10 * b + 10);
    expect_stored(f.prompts[b], c.events.prompts, p, 7);
    expect_stored(f.delayeds[b], c.events.delayeds, q, 7);
    p += f.prompts[b].size();
    q += f.delayeds[b].size();
  }
  EXPECT_EQ(c.events.prompts.size(), p);
  EXPECT_EQ(c.events.delayeds.size(), q);
  const auto tof = pe::common_tof_parameters(c.header.scanner);
  EXPECT_EQ(tof.num_bins, 7);
  EXPECT_NEAR(tof.bin_width, 10.f, 1e-5f);
  EXPECT_NEAR(tof.sigma, 15.f, 1e-4f);
  EXPECT_NEAR(tof.center_offset, 0.f, 1e-5f);
}

TEST(Petsird, WrittenEfficienciesBecomeNormalisationFactors) {
  const written_file f;
  pe::reader r(f.path, pe::read_options{true, 4096});
  const pe::efficiency_model m(r.scanner());
  EXPECT_FALSE(m.has_module_pair_factors());
  EXPECT_EQ(m.detector_efficiencies(), f.d.efficiency);
  EXPECT_FLOAT_EQ(m(7, 2), f.d.efficiency[7] * f.d.efficiency[2]);
  EXPECT_FLOAT_EQ(m.pair_factor(2, 7), f.d.efficiency[7] * f.d.efficiency[2]);
  pe::event_chunk c;
  ASSERT_TRUE(r.next_chunk(5, c));
  ASSERT_EQ(c.prompts.efficiency.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(c.prompts.efficiency[i],
                    m(c.prompts.pairs[2 * i], c.prompts.pairs[2 * i + 1]));
  expect_invalid([&] { (void)m.detector_efficiencies(1); }, "energy");
}

TEST(Petsird, ChunksOfAnySizeGiveTheSameEvents) {
  const written_file f(300);
  const pe::file_contents all = pe::read_file(f.path);
  for (const std::size_t chunk :
       {std::size_t(1), std::size_t(7), std::size_t(75), std::size_t(100000)}) {
    pe::reader r(f.path, pe::read_options{false, 100}); // a tiny buffer, many refills
    std::vector<std::int32_t> pairs;
    std::vector<std::int16_t> bins;
    std::size_t delayeds = 0, blocks = 0;
    r.for_each_chunk(chunk, [&](const pe::event_chunk &c) {
      EXPECT_LE(c.num_events(), chunk);
      pairs.insert(pairs.end(), c.prompts.pairs.begin(), c.prompts.pairs.end());
      bins.insert(bins.end(), c.prompts.tof_bins.begin(), c.prompts.tof_bins.end());
      delayeds += c.delayeds.size();
      blocks += c.blocks.size();
    });
    EXPECT_EQ(pairs, all.events.prompts.pairs) << chunk;
    EXPECT_EQ(bins, all.events.prompts.tof_bins) << chunk;
    EXPECT_EQ(delayeds, all.events.delayeds.size());
    EXPECT_EQ(blocks, 3u);
  }
}

TEST(Petsird, ReaderCanBeMoved) {
  const written_file f;
  pe::reader a(f.path);
  pe::reader b(std::move(a));
  pe::event_chunk c;
  ASSERT_TRUE(b.next_chunk(3, c));
  EXPECT_EQ(c.prompts.pairs[0], 5);
  EXPECT_EQ(c.prompts.pairs[1], 3);
  EXPECT_EQ(c.prompts.tof_bins[0], 2);
}

TEST(Petsird, TruncationAtEveryByteIsAnIoError) {
  const written_file f(6);
  const std::vector<unsigned char> bytes = read_byte_vector(f.path);
  ASSERT_NO_THROW(read_all(bytes, bytes.size()));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      read_all(bytes, n, 1 + n % 5);
      ADD_FAILURE() << "no error at length " << n;
    } catch (const resproj::io_error &e) {
      ASSERT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    } catch (const std::exception &e) {
      ADD_FAILURE() << "length " << n << ": wrong exception: " << e.what();
    }
  }
  // Through a file, with a buffer smaller than the schema.
  temp_dir dir;
  const std::string path = dir.file("cut.petsird");
  write_bytes(path, std::vector<unsigned char>(bytes.begin(), bytes.end() - 20));
  expect_io_error(
      [&] {
        (void)pe::read_file(path, pe::read_options{false, 64});
      },
      {path, "truncated"});
}

TEST(Petsird, PreambleErrorsNameTheProblem) {
  const written_file f;
  std::vector<unsigned char> b = read_byte_vector(f.path);
  auto read = [&](const std::vector<unsigned char> &x) {
    return [x] { read_all(x, x.size()); };
  };
  auto magic = b;
  magic[0] = 'Y';
  expect_io_error(read(magic), {"yardl magic", "not a yardl binary file"});
  auto version = b;
  version[5] = 2;
  expect_io_error(read(version), {"version 2 is not supported"});
  auto schema = b;
  schema[5 + 4 + 2 + 100] ^= 1; // the schema's length takes 2 varint bytes
  expect_io_error(read(schema), {"schema", "is not the schema of PETSIRD 0.12.0",
                                 "byte 100", "another PETSIRD version"});
  expect_io_error([] { (void)pe::reader("/nonexistent/x.petsird"); },
                  {"/nonexistent/x.petsird"});
}

TEST(Petsird, BadVarintsAndAbsurdSizesAreRejected) {
  const written_file f;
  const std::vector<unsigned char> b = read_byte_vector(f.path);
  const std::size_t header = 5 + 4 + 2 + pe::schema_size; // model name length here
  auto with = [&](std::vector<unsigned char> patch) {
    std::vector<unsigned char> x(b.begin(), b.begin() + std::ptrdiff_t(header));
    x.insert(x.end(), patch.begin(), patch.end());
    x.insert(x.end(), 64, 0);
    return [x] { read_all(x, x.size()); };
  };
  expect_io_error(with(std::vector<unsigned char>(11, 0x80)),
                  {"scanner.model_name", "varint"});
  expect_io_error(with({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}),
                  {"scanner.model_name", "does not fit 64 bits"});
  expect_io_error(with({0x80, 0x80, 0x80, 0x80, 0x80, 0x10}),
                  {"scanner.model_name", "absurd size"});
  expect_io_error(with({0x80, 0x80, 0x04}), {"scanner.model_name", "bytes left"});
  // No model name, then 2^20 module types: more than the bytes left hold.
  expect_io_error(with({0x00, 0x80, 0x80, 0x40}),
                  {"scanner.scanner_geometry.replicated_modules", "bytes left"});
}

TEST(Petsird, BadTimeBlocksAreRejected) {
  const written_file f;
  const std::vector<unsigned char> b = read_byte_vector(f.path);
  const std::size_t at = std::size_t(pe::reader(f.path).time_blocks_offset());
  ASSERT_EQ(b[at], 1); // one time block per stream block
  ASSERT_EQ(b[at + 1], 0);
  auto patched = [&](std::size_t i, unsigned char v) {
    auto x = b;
    x[i] = v;
    return [x] { read_all(x, x.size()); };
  };
  expect_io_error(patched(at + 1, 9),
                  {"time block 0 (union tag)", "not a PETSIRD time block"});
  // [count][tag][start][stop][singles][rows][cols][n][a b tof]: a, then tof.
  ASSERT_EQ(b[at + 8], 5);
  expect_io_error(patched(at + 8, 0x7f), {"prompt_events[0][0]", "detection bin 127"});
  ASSERT_EQ(b[at + 10], 2);
  expect_io_error(patched(at + 10, 7), {"TOF index 7", "7 TOF bins"});
  expect_io_error(patched(at + 5, 2), {"prompt_events (size)", "absurd size"});
  auto trailing = b;
  trailing.push_back(0);
  expect_io_error([trailing] { read_all(trailing, trailing.size()); },
                  {"1 bytes after the end of the time-block stream"});
}

TEST(Petsird, TofParametersFromBinEdges) {
  pe::scanner_information s;
  s.module_types.resize(2);
  s.tof_bin_edges = {{{-30, -10, 10, 30}}, {{-30, -10, 10, 30}, {-15, -5, 5, 15, 25}}};
  s.tof_resolution = {{47.1f}, {47.1f, 30.f}};
  const auto p = pe::tof_parameters(s, 0, 0);
  EXPECT_EQ(p.num_bins, 3);
  EXPECT_FLOAT_EQ(p.bin_width, 20.f);
  EXPECT_FLOAT_EQ(p.center_offset, 0.f);
  EXPECT_NEAR(p.sigma, 47.1 / 2.354820045, 1e-4);
  const auto q = pe::tof_parameters<double>(s, 1, 1);
  EXPECT_EQ(q.num_bins, 4);
  EXPECT_DOUBLE_EQ(q.bin_width, 10.0);
  EXPECT_DOUBLE_EQ(q.center_offset, 5.0);
  EXPECT_EQ(pe::tof_parameters(s, 0, 1).num_bins, 3); // either order
  expect_io_error([&] { (void)pe::common_tof_parameters(s); },
                  {"tof_bin_edges[1][1]", "differ"});
  s.tof_bin_edges[0][0] = {-30, -20, 10, 30};
  expect_io_error([&] { (void)pe::tof_parameters(s, 0, 0); },
                  {"tof_bin_edges[0][0]", "non-uniform TOF bins are not supported"});
  s.tof_bin_edges[0][0] = {30, 10, -10, -30};
  expect_io_error([&] { (void)pe::tof_parameters(s, 0, 0); }, {"increasing"});
  s.tof_bin_edges[0][0] = {5};
  expect_io_error([&] { (void)pe::tof_parameters(s, 0, 0); }, {"fewer than 2 edges"});
  s.tof_bin_edges[0][0] = {-200, 200}; // non-TOF: one bin, the coincidence window
  EXPECT_EQ(pe::tof_parameters(s, 0, 0).num_bins, 1);
  s.tof_resolution[0][0] = 0;
  expect_io_error([&] { (void)pe::tof_parameters(s, 0, 0); }, {"tof_resolution[0][0]"});
  expect_invalid([&] { (void)pe::tof_parameters(s, 2, 0); }, "t1");
}

TEST(Petsird, EfficiencySizesAreChecked) {
  pe::scanner_information s;
  s.module_types.resize(1);
  s.module_types[0].element_transforms.resize(2);
  s.module_types[0].module_transforms.resize(3);
  s.efficiencies.detection_bin_efficiencies = {std::vector<float>(5, 1.f)};
  expect_io_error([&] { pe::efficiency_model m(s); },
                  {"detection_bin_efficiencies[0]", "number of detection bins 6"});
  s.efficiencies.detection_bin_efficiencies = {std::vector<float>(6, 2.f)};
  s.efficiencies.module_pair_sgid = {{{{-1}, {0, -1}, {0, 1, -1}}}};
  s.efficiencies.module_pair = {{{pe::module_pair_efficiencies{{{1, 2}, {3, 4}}, 0}}}};
  expect_io_error([&] { pe::efficiency_model m(s); }, {"sgid 1 has no"});
  s.efficiencies.module_pair[0][0].push_back({{{5, 6}, {7, 8}}, 1});
  const pe::efficiency_model m(s);
  EXPECT_TRUE(m.has_module_pair_factors());
  EXPECT_EQ(m(0, 1), 0.f);     // same module: sgid -1
  EXPECT_EQ(m(2, 0), 4.f * 1); // module 1 / module 0, elements 0 / 0, sgid 0
  EXPECT_EQ(m(0, 3), 4.f * 3); // ordered to (3, 0): element 1 / 0
  EXPECT_EQ(m(5, 2), 4.f * 7); // module 2 / 1, sgid 1, elements 1 / 0
}

TEST(Petsird, WriterRejectsBadArgumentsBeforeWriting) {
  temp_dir dir;
  const std::string path = dir.file("bad.petsird");
  auto d = small_scanner();
  const std::vector<listmode_event> ok = {listmode_event::make(1, 0, 0)};
  const std::vector<listmode_event> past = {listmode_event::make(72, 0, 0)};
  const std::vector<listmode_event> backwards = {listmode_event::make(0, 1, 0)};
  auto write = [&](const pe::scanner_description &x,
                   const std::vector<listmode_event> &e) {
    const pe::time_block_events b{
        0, 1, span<const listmode_event>(e.data(), e.size()), {}};
    pe::write_file(path, x, span<const pe::time_block_events>(&b, 1));
  };
  expect_invalid([&] { write(d, past); }, "blocks[0].prompts");
  auto offset = d;
  offset.tof.center_offset = 1.f;
  expect_invalid([&] { write(offset, backwards); }, "blocks[0].prompts");
  auto no_bins = d;
  no_bins.tof.num_bins = 0;
  expect_invalid([&] { write(no_bins, ok); }, "d.tof.num_bins");
  auto eff = d;
  eff.efficiency.pop_back();
  expect_invalid([&] { write(eff, ok); }, "d.efficiency");
  EXPECT_FALSE(std::filesystem::exists(path));
  write(offset, ok); // a >= b: fine with an offset
  const auto c = pe::read_file(path);
  EXPECT_NEAR(pe::tof_parameters(c.header.scanner, 0, 0).center_offset, 1.f, 1e-5f);
}

TEST(Petsird, ParallelDecodingGivesTheSameResult) {
  const written_file f(500);
  const pe::file_contents want = pe::read_file(f.path, pe::read_options{true, 4096});
  for (const unsigned threads : {1u, 2u, 5u})
    for (const std::size_t window :
         {std::size_t(1), std::size_t(5000), std::size_t(1) << 20}) {
      pe::parallel_read_options o;
      o.threads = threads;
      o.window_bytes = window; // at least 4096: the first block grows the window
      o.event_efficiencies = true;
      std::size_t chunks = 0;
      pe::file_contents got;
      got.header = pe::read_parallel(f.path, o, [&](const pe::event_chunk &c) {
        pe::append_events(got.events, c);
        ++chunks;
      });
      EXPECT_EQ(got.events.prompts.pairs, want.events.prompts.pairs);
      EXPECT_EQ(got.events.prompts.tof_bins, want.events.prompts.tof_bins);
      EXPECT_EQ(got.events.prompts.efficiency, want.events.prompts.efficiency);
      EXPECT_EQ(got.events.delayeds.pairs, want.events.delayeds.pairs);
      EXPECT_EQ(got.events.delayeds.tof_bins, want.events.delayeds.tof_bins);
      ASSERT_EQ(got.events.blocks.size(), want.events.blocks.size());
      for (std::size_t i = 0; i < got.events.blocks.size(); ++i) {
        EXPECT_EQ(got.events.blocks[i].index, want.events.blocks[i].index);
        EXPECT_EQ(got.events.blocks[i].offset, want.events.blocks[i].offset);
      }
      EXPECT_EQ(chunks == 1, window == (std::size_t(1) << 20)) << window;
    }
  resproj::thread_pool pool;
  pe::parallel_read_options o;
  o.threads = 3;
  o.pool = &pool;
  EXPECT_EQ(pe::read_file_parallel(f.path, o).events.prompts.pairs,
            want.events.prompts.pairs);
}

TEST(Petsird, ParallelDecodingReportsTheSameErrors) {
  const written_file f(6);
  const std::vector<unsigned char> bytes = read_byte_vector(f.path);
  temp_dir dir;
  const std::string path = dir.file("cut.petsird");
  pe::parallel_read_options o;
  o.threads = 2;
  o.window_bytes = 1;
  const std::size_t blocks = std::size_t(pe::reader(f.path).time_blocks_offset());
  for (std::size_t n = blocks - 3; n < bytes.size(); ++n) {
    write_bytes(path, std::vector<unsigned char>(bytes.begin(),
                                                 bytes.begin() + std::ptrdiff_t(n)));
    std::string sequential, parallel;
    try {
      (void)pe::read_file(path);
    } catch (const resproj::io_error &e) {
      sequential = e.what();
    }
    try {
      (void)pe::read_file_parallel(path, o);
    } catch (const resproj::io_error &e) {
      parallel = e.what();
    }
    EXPECT_FALSE(sequential.empty()) << n;
    EXPECT_EQ(parallel, sequential) << n;
  }
  auto patched = bytes;
  patched[blocks + 8] = 0x7f; // detection bin past the table, in block 0
  write_bytes(path, patched);
  expect_io_error([&] { (void)pe::read_file_parallel(path, o); },
                  {"time block 0.prompt_events[0][0]", "detection bin 127"});
}

TEST(Petsird, ParallelDecodingReportsTheFirstBadBlockInFileOrder) {
  // Block 0 is bad at its last event (found late), block 1 at its first
  // (found at once by another worker): the error is block 0's, as the
  // sequential reader reports it, however the workers are scheduled.
  const written_file f(300000);
  const pe::file_contents c = pe::read_file(f.path);
  ASSERT_EQ(c.events.blocks.size(), 3u);
  auto bytes = read_byte_vector(f.path);
  // Each block: [count 1][tag][start][stop][singles 0][1][1][n: 3 bytes]
  // [events: 3 bytes each] ... [triples 0][quadruples 0]; 72 detection bins and
  // 7 TOF bins make each event 3 one-byte varints.
  const std::size_t block1 = std::size_t(c.events.blocks[1].offset);
  const std::size_t last_delayed_of_0 = block1 - 1 - 2 - 3;
  const std::size_t first_prompt_of_1 = block1 + 9;
  bytes[last_delayed_of_0] = 0x7f;
  bytes[first_prompt_of_1] = 0x7e;
  temp_dir dir;
  const std::string path = dir.file("two_bad_blocks.petsird");
  write_bytes(path, bytes);
  std::string sequential;
  try {
    (void)pe::read_file(path);
  } catch (const resproj::io_error &e) {
    sequential = e.what();
  }
  EXPECT_NE(sequential.find("time block 0.delayed_events"), std::string::npos)
      << sequential;
  EXPECT_NE(sequential.find("detection bin 127"), std::string::npos) << sequential;
  resproj::thread_pool pool;
  for (int repeat = 0; repeat < 5; ++repeat) {
    pe::parallel_read_options o;
    o.threads = 3;
    o.pool = &pool;
    std::string parallel;
    try {
      (void)pe::read_file_parallel(path, o);
    } catch (const resproj::io_error &e) {
      parallel = e.what();
    }
    EXPECT_EQ(parallel, sequential) << repeat;
  }
}

TEST(Petsird, EventsAndTablePlugIntoTheProjectors) {
  const written_file f(50);
  const pe::file_contents c = pe::read_file(f.path);
  const auto table = pe::make_detector_table(c.header.scanner);
  const auto tof = pe::common_tof_parameters(c.header.scanner);
  const auto geometry = resproj::image_geometry::centred({40, 40, 8}, {5.0, 5.0, 5.0});
  const std::vector<float> image(std::size_t(geometry.num_voxels()), 1.f);
  const auto &ev = c.events.prompts;
  const resproj::detector_pairs<float> lors(
      table.xyz().data(), std::size_t(table.num_detectors()), ev.pairs.data(), ev.size());
  std::vector<float> non_tof(ev.size()), with_tof(ev.size());
  resproj::cpu::forward(resproj::op::non_tof{},
                        resproj::image_view<const float>(image.data(), geometry), lors,
                        span<float>(non_tof.data(), non_tof.size()));
  resproj::cpu::forward(
      resproj::op::tof_listmode<float>(
          tof, span<const std::int16_t>(ev.tof_bins.data(), ev.tof_bins.size())),
      resproj::image_view<const float>(image.data(), geometry), lors,
      span<float>(with_tof.data(), with_tof.size()));
  std::size_t crossing = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    EXPECT_TRUE(std::isfinite(non_tof[i]) && std::isfinite(with_tof[i]));
    EXPECT_LE(with_tof[i], non_tof[i] * 1.001f + 1e-3f);
    crossing += non_tof[i] > 0 ? 1 : 0;
  }
  EXPECT_GT(crossing, ev.size() / 2);
}

TEST(Petsird, SkippingVarintsLandsWhereDecodingThem) {
  // Varints of 1 to 10 bytes in random order; skipping n of them (a word at
  // a time where it can) must stop where decoding n of them does, and a
  // count past the end must fail naming the field.
  std::mt19937 rng(5);
  std::vector<unsigned char> bytes;
  std::vector<std::size_t> ends; // offset after each varint
  for (int i = 0; i < 3000; ++i) {
    const int len = 1 + int(rng() % (i % 7 == 0 ? 10u : 3u));
    for (int b = 0; b + 1 < len; ++b)
      bytes.push_back(static_cast<unsigned char>(0x80u | (rng() & 0x7fu)));
    bytes.push_back(static_cast<unsigned char>(len == 10 ? 1u : (rng() & 0x7fu)));
    ends.push_back(bytes.size());
  }
  for (const std::size_t first : {std::size_t(0), std::size_t(1), std::size_t(37)}) {
    for (const std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(8),
                                std::size_t(9), std::size_t(100), std::size_t(2963)}) {
      const std::size_t start = first == 0 ? 0 : ends[first - 1];
      pe::binary_input skip(bytes.data() + start, bytes.size() - start, "mem", 0);
      skip.skip_varints(n, "field");
      EXPECT_EQ(start + skip.offset(), ends[first + n - 1]) << first << " " << n;
      pe::binary_input decode(bytes.data() + start, bytes.size() - start, "mem", 0);
      for (std::size_t i = 0; i < n; ++i)
        (void)decode.uvarint("field");
      EXPECT_EQ(decode.offset(), skip.offset());
    }
  }
  pe::binary_input past(bytes.data(), bytes.size(), "mem", 0);
  expect_io_error([&] { past.skip_varints(ends.size() + 1, "field"); },
                  {"field", "truncated"});
}

TEST(Petsird, SkippingABadVarintFailsAsDecodingIt) {
  // A varint whose tenth byte is above 1, preceded by valid varints of
  // every length (so that the word-wise scan meets it at every alignment),
  // and a list that ends early: skipping fails with the very message of
  // decoding, at the offset of the bad varint.
  for (std::size_t lead = 0; lead < 24; ++lead) {
    for (const unsigned tenth : {2u, 0x7fu, 0x80u, 0xffu}) {
      std::vector<unsigned char> bytes;
      for (std::size_t i = 0; i < lead; ++i) {
        for (std::size_t b = 0; b < i % 10; ++b)
          bytes.push_back(0x81u);
        bytes.push_back(i % 10 == 9 ? 1u : 0x05u);
      }
      for (int b = 0; b < 9; ++b)
        bytes.push_back(0xffu);
      bytes.push_back(static_cast<unsigned char>(tenth));
      for (int b = 0; b < 40; ++b) // valid varints after it
        bytes.push_back(0x01u);
      const auto message = [&](auto &&run) {
        try {
          run();
        } catch (const resproj::io_error &e) {
          return std::string(e.what());
        }
        return std::string("no error");
      };
      const std::size_t n = lead + 20;
      pe::binary_input skip(bytes.data(), bytes.size(), "mem", 100);
      pe::binary_input decode(bytes.data(), bytes.size(), "mem", 100);
      const std::string skipped = message([&] { skip.skip_varints(n, "field"); });
      const std::string decoded = message([&] {
        for (std::size_t i = 0; i < n; ++i)
          (void)decode.uvarint("field");
      });
      EXPECT_EQ(skipped, decoded) << lead << " " << tenth;
      EXPECT_NE(decoded.find("does not fit 64 bits"), std::string::npos) << decoded;
    }
  }
  std::vector<unsigned char> shortlist(30, 0x01u);
  shortlist.push_back(0x81u); // a varint cut off by the end
  pe::binary_input skip(shortlist.data(), shortlist.size(), "mem", 0);
  pe::binary_input decode(shortlist.data(), shortlist.size(), "mem", 0);
  std::string skipped, decoded;
  try {
    skip.skip_varints(31, "field");
  } catch (const resproj::io_error &e) {
    skipped = e.what();
  }
  try {
    for (int i = 0; i < 31; ++i)
      (void)decode.uvarint("field");
  } catch (const resproj::io_error &e) {
    decoded = e.what();
  }
  EXPECT_EQ(skipped, decoded);
  EXPECT_NE(decoded.find("truncated"), std::string::npos) << decoded;
}
