/// @file
/// @brief The files of the PETSIRD read benchmarks, written once to the
/// temporary directory: the dmi scanner as one module type (19,584
/// detecting elements), the dmi TOF bins, N uniformly random prompts
/// (seeded) in time blocks of 65,536 events of 1 ms, as `demo --petsird`
/// writes them, and the same events as a 10-byte list-mode file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "resproj/io/listmode_file.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/dmi.hpp"

namespace resproj_bench {

/// The two files of the benchmark, written once.
struct petsird_files {
  std::size_t events = 0;
  std::string petsird, listmode;

  explicit petsird_files(std::size_t n) : events(n) {
    const auto dir = std::filesystem::temp_directory_path();
    const std::string tag = std::to_string(std::random_device{}());
    petsird = (dir / ("resproj_bench_" + tag + ".petsird")).string();
    listmode = (dir / ("resproj_bench_" + tag + ".lm")).string();
    const auto dmi = resproj::scanner::dmi();
    const std::uint32_t nd = std::uint32_t(dmi.num_crystals());
    const auto tof = resproj::scanner::dmi_tof<float>();
    std::mt19937_64 rng(20261201);
    std::vector<resproj::listmode_event> ev(n);
    for (auto &e : ev) {
      const std::uint32_t a = std::uint32_t(rng() % nd);
      std::uint32_t b = std::uint32_t(rng() % nd);
      if (b == a)
        b = (b + 1) % nd;
      e = resproj::listmode_event::make(
          a, b, std::int16_t(rng() % std::uint64_t(tof.num_bins)));
    }
    resproj::io::petsird::scanner_description d(dmi.to_detector_table());
    d.tof = tof;
    std::vector<resproj::io::petsird::time_block_events> blocks;
    const std::size_t per_block = 65536;
    for (std::size_t first = 0; first < n; first += per_block) {
      resproj::io::petsird::time_block_events b;
      b.start_ms = std::uint32_t(blocks.size());
      b.stop_ms = b.start_ms + 1;
      b.prompts = resproj::span<const resproj::listmode_event>(
          ev.data() + first, std::min(per_block, n - first));
      blocks.push_back(b);
    }
    resproj::io::petsird::write_file(
        petsird, d,
        resproj::span<const resproj::io::petsird::time_block_events>(blocks.data(),
                                                                     blocks.size()));
    resproj::io::write_listmode_file(
        listmode, resproj::span<const resproj::listmode_event>(ev.data(), n));
  }
  ~petsird_files() {
    std::error_code ec;
    std::filesystem::remove(petsird, ec);
    std::filesystem::remove(listmode, ec);
  }
  petsird_files(const petsird_files &) = delete;
  petsird_files &operator=(const petsird_files &) = delete;
};

/// Removes `--petsird_events=N` from the arguments and returns N (`n` when
/// the flag is absent).
inline std::size_t take_petsird_events_flag(int &argc, char **argv, std::size_t n) {
  const char *flag = "--petsird_events=";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
      n = std::size_t(std::atoll(argv[i] + std::strlen(flag)));
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return n;
}

} // namespace resproj_bench
