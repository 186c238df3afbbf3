/// @file
/// @brief The `dmi` TOF parameters and list-mode event sets of
/// docs/benchmark-problems.md, generated the same way by every benchmark
/// program (seeded, one generator per block of 65,536 events, so the events
/// do not depend on the number of host threads). Plain C++.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "common/bench_support.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/sinogram.hpp"

namespace resproj_bench {

/// `dmi-tof-lm` / `dmi-tof-lm-sorted`: 1e7 events, this seed.
inline constexpr std::size_t dmi_tof_lm_events = 10000000;
inline constexpr std::uint64_t dmi_tof_lm_seed = 20261129;
/// `dmi-lm-osem`: 4e7 events, another seed.
inline constexpr std::size_t dmi_lm_osem_events = 40000000;
inline constexpr std::uint64_t dmi_lm_osem_seed = 20261130;

/// The dmi TOF parameters ("TOF" in benchmark-problems.md).
template <class T> resproj::tof_params<T> dmi_tof() {
  return resproj::scanner::dmi_tof<T>();
}

/// List-mode events as detector pairs of the dmi detector table
/// (`scanner::dmi().detector_centres()`, crystal `ring * 544 + c`) and TOF
/// bins.
struct dmi_events {
  std::vector<std::int32_t> pairs; ///< (a, b) per event
  std::vector<std::int16_t> bins;  ///< TOF bin per event
  std::size_t size() const noexcept { return bins.size(); }
};

/// `count` events, each a uniformly random LOR of the full span-1 dmi
/// sinogram with a TOF bin uniform in 8..20, in random (acquisition) order.
inline dmi_events make_dmi_events(std::size_t count, std::uint64_t seed) {
  namespace rs = resproj::scanner;
  const auto scanner = rs::dmi();
  const auto layout = rs::dmi_sinogram();
  const int n = scanner.crystals_per_ring();
  const std::uint64_t per_plane =
      std::uint64_t(layout.num_views) * std::uint64_t(layout.num_radial);
  const std::uint64_t total = per_plane * std::uint64_t(layout.num_planes());
  dmi_events e;
  e.pairs.resize(2 * count);
  e.bins.resize(count);
  constexpr std::size_t block = 65536; // one seeded generator per block
  const std::size_t blocks = (count + block - 1) / block;
  parallel_ranges(blocks, [&](std::size_t b0, std::size_t nblk) {
    for (std::size_t k = b0; k < b0 + nblk; ++k) {
      std::mt19937_64 rng(seed + 7919 * k);
      std::uniform_int_distribution<std::uint64_t> pick(0, total - 1);
      std::uniform_int_distribution<int> bin(8, 20);
      const std::size_t last = std::min(count, (k + 1) * block);
      for (std::size_t i = k * block; i < last; ++i) {
        const std::uint64_t idx = pick(rng);
        const int plane = int(idx / per_plane);
        const std::uint64_t rest = idx % per_plane;
        const int view = int(rest / std::uint64_t(layout.num_radial));
        const int radial = int(rest % std::uint64_t(layout.num_radial));
        int c0, c1;
        rs::detail::span1_crystal_pair(n, layout.radial_trim, view, radial, c0, c1);
        const auto &rings = layout.planes[std::size_t(plane)];
        e.pairs[2 * i] = std::int32_t(rings.first * n + c0);
        e.pairs[2 * i + 1] = std::int32_t(rings.second * n + c1);
        e.bins[i] = std::int16_t(bin(rng));
      }
    }
  });
  return e;
}

/// Explicit end points (xyz per event) of detector pairs, from `table`
/// (xyz per detector).
inline void end_points_of(const std::vector<float> &table,
                          const std::vector<std::int32_t> &pairs,
                          std::vector<float> &starts, std::vector<float> &ends) {
  const std::size_t count = pairs.size() / 2;
  starts.resize(3 * count);
  ends.resize(3 * count);
  parallel_ranges(count, [&](std::size_t first, std::size_t num) {
    for (std::size_t i = first; i < first + num; ++i)
      for (std::size_t c = 0; c < 3; ++c) {
        starts[3 * i + c] = table[3 * std::size_t(pairs[2 * i]) + c];
        ends[3 * i + c] = table[3 * std::size_t(pairs[2 * i + 1]) + c];
      }
  });
}

} // namespace resproj_bench
