// Reading PETSIRD list-mode files on the host (io/petsird/), against the
// library's own 10-byte event files: events per second from a file in the
// page cache.
//
// The file: the dmi scanner as one module type (19,584 detecting elements),
// the dmi TOF bins, N uniformly random prompts (seeded) in time blocks of
// 65,536 events of 1 ms, as `demo --petsird` writes them; written once to
// the temporary directory before the timed runs and removed at the end.
//
// Rows (items_per_second: events per second):
//   cpu/petsird/scan        finding the time-block boundaries of the whole
//                           stream (the serial step of the parallel reader)
//   cpu/petsird/sequential  `reader::next_chunk` to the end (one thread)
//   cpu/petsird/parallel    `read_file_parallel` (the hardware's threads)
//   cpu/listmode/read       the same events as a 10-byte event file,
//                           `io::read_listmode_file`
//
// Extra flag (before the Google Benchmark flags):
//   --petsird_events=N   events in the file (default 4,000,000)
// Each benchmark runs 5 repetitions after a warm-up; read the median.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/bench_support.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/dmi.hpp"

namespace {

namespace rp = resproj;
namespace pe = resproj::io::petsird;
namespace rs = resproj::scanner;

/// The two files of the benchmark, written once.
struct files {
  std::size_t events = 0;
  std::string petsird, listmode;

  explicit files(std::size_t n) : events(n) {
    const auto dir = std::filesystem::temp_directory_path();
    const std::string tag = std::to_string(std::random_device{}());
    petsird = (dir / ("resproj_bench_" + tag + ".petsird")).string();
    listmode = (dir / ("resproj_bench_" + tag + ".lm")).string();
    const auto dmi = rs::dmi();
    const std::uint32_t nd = std::uint32_t(dmi.num_crystals());
    const auto tof = rs::dmi_tof<float>();
    std::mt19937_64 rng(20261201);
    std::vector<rp::listmode_event> ev(n);
    for (auto &e : ev) {
      const std::uint32_t a = std::uint32_t(rng() % nd);
      std::uint32_t b = std::uint32_t(rng() % nd);
      if (b == a)
        b = (b + 1) % nd;
      e = rp::listmode_event::make(a, b,
                                   std::int16_t(rng() % std::uint64_t(tof.num_bins)));
    }
    pe::scanner_description d(dmi.to_detector_table());
    d.tof = tof;
    std::vector<pe::time_block_events> blocks;
    const std::size_t per_block = 65536;
    for (std::size_t first = 0; first < n; first += per_block) {
      pe::time_block_events b;
      b.start_ms = std::uint32_t(blocks.size());
      b.stop_ms = b.start_ms + 1;
      b.prompts = rp::span<const rp::listmode_event>(ev.data() + first,
                                                     std::min(per_block, n - first));
      blocks.push_back(b);
    }
    pe::write_file(petsird, d,
                   rp::span<const pe::time_block_events>(blocks.data(), blocks.size()));
    rp::io::write_listmode_file(listmode,
                                rp::span<const rp::listmode_event>(ev.data(), n));
  }
  ~files() {
    std::error_code ec;
    std::filesystem::remove(petsird, ec);
    std::filesystem::remove(listmode, ec);
  }
  files(const files &) = delete;
  files &operator=(const files &) = delete;
};

files *g_files = nullptr;

void set_items(benchmark::State &state) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) *
                          std::int64_t(g_files->events));
}

void bm_scan(benchmark::State &state) {
  // The stream after the header, in memory, scanned as the parallel reader
  // scans each window.
  pe::binary_input head(g_files->petsird);
  pe::read_preamble(head);
  (void)pe::read_header(head);
  const std::uint64_t start = head.offset();
  std::uint64_t size = 0;
  const auto file = rp::io::positional_file::open_read(g_files->petsird, size);
  std::vector<unsigned char> bytes(std::size_t(size - start));
  file.pread_exact(g_files->petsird, bytes.data(), bytes.size(), start);
  for (auto _ : state) {
    pe::binary_input in(bytes.data(), bytes.size(), g_files->petsird, start);
    const auto w = pe::detail::scan_window(in, 0);
    if (!w.ended)
      state.SkipWithError("the scan did not reach the end of the stream");
    benchmark::DoNotOptimize(w.blocks.data());
  }
  set_items(state);
}

void bm_sequential(benchmark::State &state) {
  for (auto _ : state) {
    pe::reader r(g_files->petsird);
    pe::event_chunk c;
    std::size_t n = 0;
    while (r.next_chunk(std::size_t(1) << 22, c))
      n += c.prompts.size();
    if (n != g_files->events)
      state.SkipWithError("wrong event count");
  }
  set_items(state);
}

void bm_parallel(benchmark::State &state) {
  for (auto _ : state) {
    const auto f = pe::read_file_parallel(g_files->petsird);
    if (f.events.prompts.size() != g_files->events)
      state.SkipWithError("wrong event count");
  }
  set_items(state);
}

void bm_listmode(benchmark::State &state) {
  for (auto _ : state) {
    const auto ev = rp::io::read_listmode_file(g_files->listmode);
    if (ev.size() != g_files->events)
      state.SkipWithError("wrong event count");
  }
  set_items(state);
}

std::size_t take_events_flag(int &argc, char **argv) {
  const char *flag = "--petsird_events=";
  std::size_t n = 4000000;
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

} // namespace

int main(int argc, char **argv) {
  const std::size_t n = take_events_flag(argc, argv);
  if (!resproj_bench::initialize_with_defaults(argc, argv))
    return 1;
  if (n < 1) {
    std::fprintf(stderr, "--petsird_events must be >= 1\n");
    return 1;
  }
  files f(n);
  g_files = &f;
  benchmark::AddCustomContext("events", std::to_string(n));
  benchmark::AddCustomContext("threads",
                              std::to_string(std::thread::hardware_concurrency()));
  return resproj_bench::run_registered(
      "bench_petsird",
      [] {
        for (const auto &[name, fn] :
             {std::pair<const char *, void (*)(benchmark::State &)>{"cpu/petsird/scan",
                                                                    bm_scan},
              {"cpu/petsird/sequential", bm_sequential},
              {"cpu/petsird/parallel", bm_parallel},
              {"cpu/listmode/read", bm_listmode}})
          benchmark::RegisterBenchmark(name, fn)
              ->Unit(benchmark::kMillisecond)
              ->ReportAggregatesOnly(true)
              ->UseRealTime();
      },
      [] { g_files = nullptr; });
}
