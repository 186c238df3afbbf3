// Cross-checks of io/petsird/ against the official `petsird` Python package
// (0.12). The ctest `io.petsird.cross` (tests/io/petsird/run_cross_tests.sh)
// has tests/io/petsird/make_petsird_files.py write PETSIRD files and the
// arrays the reader must return, runs these tests on them with
// RESPROJ_PETSIRD_DATA set to that folder, and then has
// check_resproj_file.py read the file that PetsirdCross.WriteForTheOfficialReader
// leaves there. Without RESPROJ_PETSIRD_DATA these tests skip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace pe = resproj::io::petsird;
namespace io = resproj::io;
using resproj::listmode_event;
using resproj::span;
using resproj_test::expect_io_error;

namespace {

std::string data_dir() {
  const char *d = std::getenv("RESPROJ_PETSIRD_DATA");
  return d != nullptr ? std::string(d) : std::string();
}

#define REQUIRE_DATA()                                                                   \
  if (data_dir().empty())                                                                \
  GTEST_SKIP() << "RESPROJ_PETSIRD_DATA is not set: run `ctest -L petsird` (needs a "    \
                  "Python with the petsird package, see docs/petsird.md)"

template <class T> std::vector<T> npy(const std::string &name) {
  return io::read_npy_vector<T>(data_dir() + "/" + name + ".npy");
}

void expect_arrays(const pe::coincidence_arrays &got, const std::string &kind) {
  EXPECT_EQ(got.pairs, npy<std::int32_t>("multi." + kind + "_pairs"));
  EXPECT_EQ(got.tof_bins, npy<std::int16_t>("multi." + kind + "_tof"));
  const auto energy = npy<std::int32_t>("multi." + kind + "_energy");
  ASSERT_EQ(got.energy_bins.size(), energy.size());
  for (std::size_t i = 0; i < energy.size(); ++i)
    ASSERT_EQ(int(got.energy_bins[i]), energy[i]) << kind << " " << i;
  const auto eff = npy<float>("multi." + kind + "_eff");
  ASSERT_EQ(got.efficiency.size(), eff.size());
  for (std::size_t i = 0; i < eff.size(); ++i)
    ASSERT_NEAR(got.efficiency[i], eff[i], 1e-6f * std::fabs(eff[i])) << kind << " " << i;
}

} // namespace

TEST(PetsirdCross, MultiModuleTypesReadExactlyAsWritten) {
  REQUIRE_DATA();
  pe::read_options o;
  o.event_efficiencies = true;
  const pe::file_contents c = pe::read_file(data_dir() + "/multi.petsird", o);
  const pe::scanner_information &s = c.header.scanner;
  EXPECT_TRUE(c.header.has_exam);
  EXPECT_EQ(s.model_name, "two module types");
  ASSERT_EQ(s.num_module_types(), 2u);
  ASSERT_TRUE(s.gantry_alignment.has_value());

  // Geometry: box centres after element and module transforms.
  const auto table = pe::make_detector_table(s);
  const auto want = npy<float>("multi.detectors");
  ASSERT_EQ(table.xyz().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(table.xyz()[i], want[i], 1e-4f) << i;
  const pe::detector_map map(s);
  EXPECT_EQ(map.num_detectors(), 18);
  EXPECT_EQ(map.first_detector(1), 12);
  EXPECT_EQ(map.detector(1, 1, 2), 17);
  EXPECT_EQ(map.detector_of_bin(0, 23), 11); // 2 energy bins
  EXPECT_EQ(map.type_of(12), 1u);

  // Events, energy bins and per-event efficiencies.
  expect_arrays(c.events.prompts, "prompt");
  expect_arrays(c.events.delayeds, "delayed");
  EXPECT_EQ(std::int64_t(c.events.skipped_events), npy<std::int32_t>("multi.skipped")[0]);

  // Every time block, in order, with its kind and interval.
  const auto blocks = npy<std::int32_t>("multi.blocks");
  ASSERT_EQ(c.events.blocks.size() * 3, blocks.size());
  for (std::size_t i = 0; i < c.events.blocks.size(); ++i) {
    EXPECT_EQ(int(c.events.blocks[i].kind), blocks[3 * i]) << i;
    EXPECT_EQ(std::int64_t(c.events.blocks[i].start_ms), blocks[3 * i + 1]) << i;
    EXPECT_EQ(std::int64_t(c.events.blocks[i].stop_ms), blocks[3 * i + 2]) << i;
    EXPECT_EQ(c.events.blocks[i].index, i);
  }

  // TOF: pair [0][0] as the library's parameters; pair [1][1] differs.
  const auto tof = npy<double>("multi.tof");
  const auto p = pe::tof_parameters<double>(s, 0, 0);
  EXPECT_EQ(p.num_bins, int(tof[0]));
  EXPECT_NEAR(p.bin_width, tof[1], 1e-9 * tof[1]);
  EXPECT_NEAR(p.center_offset, tof[2], 1e-9);
  EXPECT_NEAR(p.sigma, tof[3], 1e-6 * tof[3]);
  EXPECT_EQ(pe::tof_parameters(s, 1, 1).num_bins, 7);
  expect_io_error([&] { (void)pe::common_tof_parameters(s); }, {"tof_bin_edges[1][1]"});

  // Normalisation of every detector pair (energy bin 0), both orders.
  const pe::efficiency_model model(s);
  EXPECT_TRUE(model.has_module_pair_factors());
  EXPECT_FLOAT_EQ(model.calibration_factor(), 2.5f);
  const auto pair_eff = npy<float>("multi.pair_eff");
  ASSERT_EQ(pair_eff.size(), 18u * 18u);
  for (std::int32_t a = 0; a < 18; ++a)
    for (std::int32_t b = 0; b < 18; ++b) {
      const float w = pair_eff[std::size_t(a) * 18 + std::size_t(b)];
      ASSERT_NEAR(model(a, b), w, 1e-6f * std::fabs(w)) << a << " " << b;
    }
}

TEST(PetsirdCross, ChunkedReadingGivesTheSameEvents) {
  REQUIRE_DATA();
  pe::reader r(data_dir() + "/multi.petsird", pe::read_options{false, 257});
  std::vector<std::int32_t> pairs, delayed_pairs;
  std::size_t blocks = 0;
  r.for_each_chunk(13, [&](const pe::event_chunk &c) {
    EXPECT_LE(c.num_events(), 13u);
    pairs.insert(pairs.end(), c.prompts.pairs.begin(), c.prompts.pairs.end());
    delayed_pairs.insert(delayed_pairs.end(), c.delayeds.pairs.begin(),
                         c.delayeds.pairs.end());
    blocks += c.blocks.size();
  });
  EXPECT_EQ(pairs, npy<std::int32_t>("multi.prompt_pairs"));
  EXPECT_EQ(delayed_pairs, npy<std::int32_t>("multi.delayed_pairs"));
  EXPECT_EQ(blocks * 3, npy<std::int32_t>("multi.blocks").size());
}

TEST(PetsirdCross, ParallelDecodingGivesTheSameEvents) {
  REQUIRE_DATA();
  pe::parallel_read_options o;
  o.threads = 3;
  o.window_bytes = 1; // the smallest window: several windows, some grown
  o.event_efficiencies = true;
  const pe::file_contents c = pe::read_file_parallel(data_dir() + "/multi.petsird", o);
  expect_arrays(c.events.prompts, "prompt");
  expect_arrays(c.events.delayeds, "delayed");
  EXPECT_EQ(c.events.blocks.size() * 3, npy<std::int32_t>("multi.blocks").size());
  EXPECT_EQ(std::int64_t(c.events.skipped_events), npy<std::int32_t>("multi.skipped")[0]);
}

TEST(PetsirdCross, PlannedDecodingGivesTheSameEvents) {
  // The decoding of the GPU reader, on the host: several module types, TOF,
  // delayeds, time blocks of other kinds; windows from the smallest up.
  REQUIRE_DATA();
  for (const std::size_t window : {std::size_t(1), std::size_t(1) << 20}) {
    pe::parallel_read_options o;
    o.threads = 3;
    o.window_bytes = window;
    pe::detail::host_plan_decoder d;
    const auto r = pe::detail::read_planned(data_dir() + "/multi.petsird", o, d);
    EXPECT_EQ(d.prompt_pairs, npy<std::int32_t>("multi.prompt_pairs")) << window;
    EXPECT_EQ(d.prompt_tof_bins, npy<std::int16_t>("multi.prompt_tof")) << window;
    EXPECT_EQ(d.delayed_pairs, npy<std::int32_t>("multi.delayed_pairs")) << window;
    EXPECT_EQ(d.delayed_tof_bins, npy<std::int16_t>("multi.delayed_tof")) << window;
    EXPECT_EQ(r.num_time_blocks * 3, npy<std::int32_t>("multi.blocks").size());
    EXPECT_EQ(2 * r.num_prompts, d.prompt_pairs.size());
  }
}

TEST(PetsirdCross, NonUniformTofBinsAreRejected) {
  REQUIRE_DATA();
  pe::reader r(data_dir() + "/nonuniform.petsird");
  expect_io_error([&] { (void)pe::tof_parameters(r.scanner(), 0, 0); },
                  {"tof_bin_edges[0][0]", "non-uniform TOF bins are not supported"});
  pe::event_chunk c;
  EXPECT_FALSE(r.next_chunk(10, c)); // an empty stream
}

// Writes resproj_written.petsird and the arrays check_resproj_file.py
// compares the official reader's view of it with.
TEST(PetsirdCross, WriteForTheOfficialReader) {
  REQUIRE_DATA();
  const resproj::scanner::polygon_scanner ps(12, 4, 150.0, 4.0, {-4.0, 0.0, 4.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = 9;
  d.tof.bin_width = 12.5f;
  d.tof.sigma = 20.f;
  for (int i = 0; i < d.detectors.num_detectors(); ++i)
    d.efficiency.push_back(0.75f + 0.005f * float(i));
  std::mt19937 rng(7);
  const auto n = std::uint32_t(d.detectors.num_detectors());
  std::vector<std::vector<listmode_event>> ev(4);
  for (std::size_t b = 0; b < ev.size(); ++b)
    for (std::size_t i = 0; i < 50 + 10 * b; ++i)
      ev[b].push_back(
          listmode_event::make(rng() % n, rng() % n, std::int16_t(rng() % 9)));
  const std::vector<pe::time_block_events> blocks = {
      {0, 5, span<const listmode_event>(ev[0].data(), ev[0].size()),
       span<const listmode_event>(ev[1].data(), ev[1].size())},
      {5, 10, span<const listmode_event>(ev[2].data(), ev[2].size()),
       span<const listmode_event>(ev[3].data(), ev[3].size())}};
  const std::string path = data_dir() + "/resproj_written.petsird";
  pe::write_file(path, d,
                 span<const pe::time_block_events>(blocks.data(), blocks.size()));

  // What the official reader must see: events as PETSIRD orders them.
  auto stored = [](const std::vector<listmode_event> &e, std::vector<std::int32_t> &out) {
    for (const listmode_event &x : e) {
      const auto a = std::int32_t(x.detector_a()), b = std::int32_t(x.detector_b());
      out.insert(out.end(), {std::max(a, b), std::min(a, b),
                             a >= b ? x.tof_bin() : 8 - x.tof_bin()});
    }
  };
  std::vector<std::int32_t> prompts, delayeds;
  stored(ev[0], prompts);
  stored(ev[2], prompts);
  stored(ev[1], delayeds);
  stored(ev[3], delayeds);
  const std::string base = data_dir() + "/resproj_written";
  io::write_npy(base + ".prompts.npy",
                span<const std::int32_t>(prompts.data(), prompts.size()),
                {prompts.size() / 3, 3});
  io::write_npy(base + ".delayeds.npy",
                span<const std::int32_t>(delayeds.data(), delayeds.size()),
                {delayeds.size() / 3, 3});
  io::write_npy(base + ".detectors.npy",
                span<const float>(d.detectors.xyz().data(), d.detectors.xyz().size()),
                {std::size_t(n), 3});
  io::write_npy(base + ".efficiency.npy",
                span<const float>(d.efficiency.data(), d.efficiency.size()),
                {d.efficiency.size()});
  const std::vector<double> tof = {9, 12.5, 0, 20};
  io::write_npy(base + ".tof.npy", span<const double>(tof.data(), tof.size()), {4});

  // And our reader gives the table back exactly.
  EXPECT_EQ(pe::make_detector_table(pe::reader(path).scanner()).xyz(), d.detectors.xyz());
}
