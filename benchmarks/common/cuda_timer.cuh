/// @file
/// @brief Google Benchmark timing helpers for GPU code: CUDA-event timing on
/// a stream with `state.SetIterationTime` (register the benchmark with
/// `->UseManualTime()`), and a host wall-clock variant for calls that block
/// the host (host-LOR streaming, the naive allocate-copy-compute-free
/// pattern).
///
/// Both helpers run the body once before the timed loop (warm-up: module
/// load, first-touch of memory pools, caches), and run an optional `setup`
/// before every iteration outside the timed region (e.g. zeroing the image
/// before a back projection). Needs nvcc.
#pragma once

#include <chrono>
#include <utility>

#include <benchmark/benchmark.h>

#include "resproj/gpu/event.cuh"
#include "resproj/gpu/stream.cuh"

namespace resproj_bench {

/// Does nothing: the default `setup` of the timers below.
struct no_setup {
  void operator()() const noexcept {}
};

/// Times `body`, which enqueues asynchronous work on `s`, with CUDA events:
/// per iteration `setup()` (enqueued before the start event, so work it
/// queues on `s` is not timed), start event, `body()`, end event, wait for
/// the end event, `state.SetIterationTime(elapsed)`. The time is the GPU's
/// time from the start event to the end event, which includes any gap in
/// which the GPU waited for the host to enqueue work (launch overhead of
/// many small calls counts, as it should).
///
/// Work `body` queues on other streams is timed only if it is joined back
/// into `s` before `body` returns (event record + wait), or if `body`
/// blocks the host until it is done (then use `time_on_host`).
///
/// @param state  the benchmark's state (registered with UseManualTime)
/// @param s      stream that `setup` and `body` enqueue on
/// @param setup  untimed per-iteration preparation (may enqueue on `s`)
/// @param body   the timed work
template <class Setup, class Body>
void time_on_stream(benchmark::State &state, resproj::gpu::stream_ref s, Setup &&setup,
                    Body &&body) {
  // Warm-up, outside the measurement.
  setup();
  body();
  s.synchronize();
  resproj::gpu::event start(/*timing=*/true), stop(/*timing=*/true);
  for (auto _ : state) {
    setup();
    start.record(s);
    body();
    stop.record(s);
    stop.synchronize();
    state.SetIterationTime(double(resproj::gpu::event::elapsed_ms(start, stop)) * 1e-3);
  }
}

/// `time_on_stream` without per-iteration setup.
template <class Body>
void time_on_stream(benchmark::State &state, resproj::gpu::stream_ref s, Body &&body) {
  time_on_stream(state, s, no_setup{}, std::forward<Body>(body));
}

/// Times `body` with the host's steady clock, for calls that return only
/// when their work is complete (host-blocking calls). `setup()` runs before
/// each iteration, untimed; if it enqueues GPU work, it must wait for it
/// (e.g. synchronise its stream) so that the work is not timed.
template <class Setup, class Body>
void time_on_host(benchmark::State &state, Setup &&setup, Body &&body) {
  using clock = std::chrono::steady_clock;
  setup();
  body(); // warm-up
  for (auto _ : state) {
    setup();
    const auto t0 = clock::now();
    body();
    const auto t1 = clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
}

/// `time_on_host` without per-iteration setup.
template <class Body> void time_on_host(benchmark::State &state, Body &&body) {
  time_on_host(state, no_setup{}, std::forward<Body>(body));
}

} // namespace resproj_bench
