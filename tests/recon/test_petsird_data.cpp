// The reconstruction layer's PETSIRD input (recon/petsird_data.hpp): a file
// written with the reconstruction's scanner gives its prompts as list-mode
// data (events with a < b come back with the ends swapped and the TOF bin
// mirrored, which projects the same); a file of another scanner or other
// TOF bins is refused by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/recon/petsird_data.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace pe = resproj::io::petsird;
using resproj::listmode_event;
using resproj::span;

namespace {

pe::scanner_description scanner_of(int crystals_per_side, int num_bins) {
  const resproj::scanner::polygon_scanner ps(8, crystals_per_side, 100.0, 4.0,
                                             {-5.0, 0.0, 5.0});
  pe::scanner_description d(ps.to_detector_table());
  d.tof.num_bins = num_bins;
  d.tof.bin_width = 10.f;
  d.tof.sigma = 15.f;
  return d;
}

std::string write(const resproj_test::temp_dir &dir, const pe::scanner_description &d,
                  const std::vector<listmode_event> &prompts,
                  const std::vector<listmode_event> &delayeds) {
  const std::string path = dir.file("scan.petsird");
  const std::size_t half = prompts.size() / 2;
  const pe::time_block_events blocks[2] = {
      {0, 1, span<const listmode_event>(prompts.data(), half),
       span<const listmode_event>(delayeds.data(), delayeds.size())},
      {1, 2, span<const listmode_event>(prompts.data() + half, prompts.size() - half),
       span<const listmode_event>()}};
  pe::write_file(path, d, span<const pe::time_block_events>(blocks, 2));
  return path;
}

} // namespace

TEST(PetsirdData, PromptsBecomeListmodeData) {
  const resproj_test::temp_dir dir;
  const auto d = scanner_of(3, 7);
  const std::vector<listmode_event> prompts = {
      listmode_event::make(20, 3, 0), listmode_event::make(70, 5, 6),
      listmode_event::make(2, 40, 1), // a < b: stored as (40, 2), bin 7 - 1 - 1
      listmode_event::make(50, 49, 3)};
  const std::vector<listmode_event> delayeds = {listmode_event::make(9, 1, 2)};
  const std::string path = write(dir, d, prompts, delayeds);
  resproj::tof_params<float> tof = d.tof;
  const auto lm = resproj::recon::read_petsird_listmode_data(path, 72, tof);
  ASSERT_EQ(lm.count(), 4u); // the prompts only
  const std::vector<std::int32_t> pairs = {20, 3, 70, 5, 40, 2, 50, 49};
  const std::vector<std::int16_t> bins = {0, 6, 5, 3};
  EXPECT_EQ(lm.pairs, pairs);
  EXPECT_EQ(lm.bins, bins);
}

TEST(PetsirdData, AnotherScannerOrOtherTofBinsAreRefused) {
  const resproj_test::temp_dir dir;
  const auto d = scanner_of(3, 7);
  const std::string path =
      write(dir, d, {listmode_event::make(20, 3, 0), listmode_event::make(7, 1, 2)}, {});
  resproj::tof_params<float> tof = d.tof;
  resproj_test::expect_io_error(
      [&] { resproj::recon::read_petsird_listmode_data(path, 96, tof); },
      {path, "72 detecting elements", "96"});
  resproj::tof_params<float> other = tof;
  other.num_bins = 9;
  resproj_test::expect_io_error(
      [&] { resproj::recon::read_petsird_listmode_data(path, 72, other); },
      {path, "TOF bins"});
  other = tof;
  other.bin_width = 12.f;
  resproj_test::expect_io_error(
      [&] { resproj::recon::read_petsird_listmode_data(path, 72, other); },
      {path, "TOF bins"});
}
