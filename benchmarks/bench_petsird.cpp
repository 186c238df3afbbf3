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
//   cpu/petsird/planned     the decoding of the GPU reader on the host:
//                           windows read and planned, then every varint
//                           decoded from the byte where it ends (one thread)
//   cpu/petsird/plan_only   the host side of the GPU reader alone: 8 MiB
//                           windows read (the hardware's threads) and
//                           planned, nothing decoded
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
#include "common/petsird_files.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/petsird/petsird.hpp"
#include "resproj/scanner/dmi.hpp"

namespace {

namespace rp = resproj;
namespace pe = resproj::io::petsird;
namespace rs = resproj::scanner;

using resproj_bench::petsird_files;

petsird_files *g_files = nullptr;

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

void bm_planned(benchmark::State &state) {
  for (auto _ : state) {
    pe::detail::host_plan_decoder d;
    const auto r = pe::detail::read_planned(g_files->petsird, {}, d);
    if (r.num_prompts != g_files->events)
      state.SkipWithError("wrong event count");
  }
  set_items(state);
}

/// A backend that only takes the windows: the host side of the GPU reader.
struct plan_only {
  std::vector<unsigned char> window;
  unsigned char *window_memory(std::size_t n) {
    window.resize(n);
    return window.data();
  }
  void decode(const unsigned char *, std::size_t, const pe::detail::window_plan &,
              std::size_t) {}
  std::size_t first_bad_window() const noexcept { return ~std::size_t(0); }
};

void bm_plan_only(benchmark::State &state) {
  pe::parallel_read_options o;
  o.window_bytes = std::size_t(8) << 20;
  for (auto _ : state) {
    plan_only d;
    const auto r = pe::detail::read_planned(g_files->petsird, o, d);
    if (r.num_prompts != g_files->events)
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

} // namespace

int main(int argc, char **argv) {
  const std::size_t n = resproj_bench::take_petsird_events_flag(argc, argv, 4000000);
  if (!resproj_bench::initialize_with_defaults(argc, argv))
    return 1;
  if (n < 1) {
    std::fprintf(stderr, "--petsird_events must be >= 1\n");
    return 1;
  }
  petsird_files f(n);
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
              {"cpu/petsird/planned", bm_planned},
              {"cpu/petsird/plan_only", bm_plan_only},
              {"cpu/listmode/read", bm_listmode}})
          benchmark::RegisterBenchmark(name, fn)
              ->Unit(benchmark::kMillisecond)
              ->ReportAggregatesOnly(true)
              ->UseRealTime();
      },
      [] { g_files = nullptr; });
}
