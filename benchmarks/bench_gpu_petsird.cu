// PETSIRD list-mode files into device memory (gpu/petsird_events.cuh),
// against the library's own 10-byte event files: events per second from a
// file in the page cache to device arrays, wall-clock (the calls block the
// host until the events are on the device).
//
// The files: benchmarks/common/petsird_files.hpp (the dmi scanner, N random
// prompts in time blocks of 65,536 events).
//
// Rows (items_per_second: events per second):
//   gpu/petsird/to_device                `gpu::read_petsird_to_device`, plain call
//   gpu/petsird/to_device/window_mib:W   the same with W MiB windows
//   gpu/listmode/to_device               the 10-byte file,
//                                        `gpu::read_listmode_to_device`
//   gpu/pinned_alloc/mib:W               allocating and freeing W MiB of
//                                        pinned memory (items: MiB), which
//                                        each read does for its two windows
//
// Extra flag (before the Google Benchmark flags):
//   --petsird_events=N   events in the file (default 40,000,000)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "common/bench_support.hpp"
#include "common/gpu_main.cuh"
#include "common/petsird_files.hpp"
#include "resproj/gpu/file_io_formats.cuh"
#include "resproj/gpu/petsird_events.cuh"
#include "resproj/gpu/pinned_buffer.cuh"

namespace {

namespace gpu = resproj::gpu;
namespace rb = resproj_bench;

std::size_t g_events = 40000000;
std::unique_ptr<rb::petsird_files> g_files_owned;

/// The files, written at the first benchmark that reads them.
rb::petsird_files &files() {
  if (!g_files_owned)
    g_files_owned = std::make_unique<rb::petsird_files>(g_events);
  return *g_files_owned;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void bm_petsird(benchmark::State &state, std::size_t window_mib) {
  rb::guarded(state, [&] {
    gpu::stream s;
    gpu::petsird_device_options o;
    if (window_mib > 0)
      o.decode.window_bytes = window_mib << 20;
    (void)gpu::read_petsird_to_device(files().petsird, s, o); // warm-up
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto ev = gpu::read_petsird_to_device(files().petsird, s, o);
      state.SetIterationTime(seconds_since(t0));
      if (ev.num_prompts != files().events)
        state.SkipWithError("wrong event count");
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) *
                            std::int64_t(files().events));
  });
}

void bm_listmode(benchmark::State &state) {
  rb::guarded(state, [&] {
    gpu::stream s;
    gpu::device_file_io io;
    (void)gpu::read_listmode_to_device(io, files().listmode, s);
    s.synchronize();
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto ev = gpu::read_listmode_to_device(io, files().listmode, s);
      s.synchronize();
      state.SetIterationTime(seconds_since(t0));
      if (ev.size() != files().events)
        state.SkipWithError("wrong event count");
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) *
                            std::int64_t(files().events));
  });
}

void bm_pinned_alloc(benchmark::State &state, std::size_t mib) {
  rb::guarded(state, [&] {
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      { const gpu::pinned_buffer<unsigned char> b(mib << 20); }
      state.SetIterationTime(seconds_since(t0));
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(mib));
  });
}

void register_all() {
  const auto common = [](benchmark::internal::Benchmark *b) {
    b->Unit(benchmark::kMillisecond)->UseManualTime()->ReportAggregatesOnly(true);
  };
  common(benchmark::RegisterBenchmark("gpu/petsird/to_device",
                                      [](benchmark::State &s) { bm_petsird(s, 0); }));
  for (const std::size_t w : {2, 4, 16, 64})
    common(benchmark::RegisterBenchmark(
        ("gpu/petsird/to_device/window_mib:" + std::to_string(w)).c_str(),
        [w](benchmark::State &s) { bm_petsird(s, w); }));
  common(benchmark::RegisterBenchmark("gpu/listmode/to_device", bm_listmode));
  for (const std::size_t w : {8, 64})
    common(benchmark::RegisterBenchmark(
        ("gpu/pinned_alloc/mib:" + std::to_string(w)).c_str(),
        [w](benchmark::State &s) { bm_pinned_alloc(s, w); }));
}

} // namespace

int main(int argc, char **argv) {
  g_events = rb::take_petsird_events_flag(argc, argv, g_events);
  if (g_events < 1) {
    std::fprintf(stderr, "--petsird_events must be >= 1\n");
    return 1;
  }
  return rb::gpu_main(
      argc, argv, "bench_gpu_petsird",
      [] {
        benchmark::AddCustomContext("events", std::to_string(g_events));
        register_all();
      },
      [] { g_files_owned.reset(); });
}
