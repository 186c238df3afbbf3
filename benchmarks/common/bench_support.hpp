/// @file
/// @brief Pieces every resproj benchmark program shares: host-parallel
/// problem generation, exception-safe benchmark bodies, the registration
/// defaults, failed-run detection across Google Benchmark versions, and the
/// start-up (default repetitions, "--benchmark_list_tests" detection).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

namespace resproj_bench {

/// Runs f(first, n) for [0, total) split into contiguous ranges over the
/// host's hardware threads; rethrows the first exception.
template <class F> void parallel_ranges(std::size_t total, F &&f) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min<std::size_t>(hw, std::max<std::size_t>(total, 1));
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(workers);
  for (std::size_t w = 0; w < workers; ++w) {
    const std::size_t first = total * w / workers;
    const std::size_t last = total * (w + 1) / workers;
    threads.emplace_back([&, w, first, last] {
      try {
        if (last > first)
          f(first, last - first);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto &t : threads)
    t.join();
  for (auto &e : errors)
    if (e)
      std::rethrow_exception(e);
}

/// Runs `f`, turning an exception into a benchmark error (the run is
/// reported as failed instead of terminating the program).
template <class F> void guarded(benchmark::State &state, F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    state.SkipWithError(e.what());
  } catch (...) {
    state.SkipWithError("unknown exception");
  }
}

/// Registration defaults: CUDA-event (manual) time, microseconds, only the
/// aggregates (mean, median, stddev, cv) of the repetitions.
template <class B> B *configure(B *b) {
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->ReportAggregatesOnly(true);
  return b;
}

/// Whether a run failed (error_occurred before Google Benchmark 1.8,
/// skipped from 1.8 on).
template <class R> auto run_failed(const R &r, int) -> decltype(bool(r.error_occurred)) {
  return r.error_occurred;
}
template <class R>
auto run_failed(const R &r, long) -> decltype(static_cast<int>(r.skipped) != 0) {
  return static_cast<int>(r.skipped) != 0;
}

/// Whether the command line only asks for the list of benchmarks.
inline bool lists_only(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" ||
        a == "--benchmark_list_tests=1")
      return true;
  }
  return false;
}

/// benchmark::Initialize with defaults that the caller's own flags (parsed
/// later) override: 5 repetitions (read the medians) and at least 0.1 s of
/// timed iterations per repetition. Given as flags, they stay out of the
/// benchmark names. Returns false on unrecognised arguments.
/// Google Benchmark 1.8 (which added `Run::skipped`) wants a unit suffix on
/// --benchmark_min_time ("0.1s"); 1.7 reads a plain number.
template <class R, class = void> struct min_time_needs_suffix : std::false_type {};
template <class R>
struct min_time_needs_suffix<R, std::void_t<decltype(std::declval<R &>().skipped)>>
    : std::true_type {};

inline bool initialize_with_defaults(int argc, char **argv) {
  static char repetitions[] = "--benchmark_repetitions=5";
  static char min_time_plain[] = "--benchmark_min_time=0.1";
  static char min_time_suffix[] = "--benchmark_min_time=0.1s";
  char *min_time = min_time_needs_suffix<benchmark::BenchmarkReporter::Run>::value
                       ? min_time_suffix
                       : min_time_plain;
  std::vector<char *> args;
  args.push_back(argv[0]);
  args.push_back(repetitions);
  args.push_back(min_time);
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  int nargs = int(args.size()) - 1;
  benchmark::Initialize(&nargs, args.data());
  return !benchmark::ReportUnrecognizedArguments(nargs, args.data());
}

/// Console reporter that counts the runs that reported an error.
class counting_reporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs)
      if (run_failed(r, 0))
        ++failed_;
    ConsoleReporter::ReportRuns(runs);
  }
  int failed() const { return failed_; }

private:
  int failed_ = 0;
};

/// The body of a benchmark program's `main` after initialisation: runs
/// `register_all()`, the benchmarks (console output counted by
/// `counting_reporter`), then `release()` before Google Benchmark shuts down.
/// Returns the exit status: 0, 2 when a run reported an error, 1 when an
/// exception escaped (printed with the program's name).
template <class Register, class Release>
int run_registered(const char *program, Register &&register_all, Release &&release) {
  int exit_code = 0;
  try {
    register_all();
    counting_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    if (reporter.failed() > 0) {
      std::printf("\n%d benchmark run(s) reported an error\n", reporter.failed());
      exit_code = 2;
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    exit_code = 1;
  }
  std::fflush(stdout);
  try {
    release();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: releasing: %s\n", program, e.what());
    exit_code = 1;
  }
  benchmark::Shutdown();
  return exit_code;
}

} // namespace resproj_bench
