// Files into device memory and back (issue 6): a large file (4 GiB, or
// RESPROJ_BENCH_IO_BYTES) in RESPROJ_BENCH_DIR (default /tmp), created once
// and reused.
//
//   io/h2d-pinned            pinned host -> device copy of the same bytes, no
//                            file (the bus limit)
//   io/read/naive            std::ifstream into a pageable std::vector, then
//                            one cudaMemcpy (warm cache)
//   io/read/threads:N/task_mib:M  resproj device_file_io, N = 1, 2, 4, 8, 16
//                            threads with 4 MiB tasks, and 8 threads with 1 and
//                            16 MiB tasks (warm)
//   io/read-cold/pread       plain sequential pread into pinned memory, no
//                            GPU copy, file dropped from the page cache
//                            before each iteration (the disk's own rate)
//   io/read-cold/resproj     resproj read (8 threads, 4 MiB), same cold cache
//   io/write/resproj         device -> file with resproj (into the page cache)
//   io/write/naive           cudaMemcpy into a pageable vector + std::ofstream
//
// Time: wall clock per iteration (manual time), stream synchronised inside
// the timed region, because the resproj calls are host-blocking for the file
// side and the device data count only once ready. bytes_per_second is the
// rate (SetBytesProcessed).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/bench_support.hpp"
#include "common/io_bench_file.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"

namespace {

namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
using clock_type = std::chrono::steady_clock;

/// The shared problem: the file, a device buffer of its size, a stream.
struct io_problem {
  std::string path;
  std::string write_path;
  std::uint64_t bytes = 0;
  gpu::stream stream;
  gpu::device_buffer<unsigned char> device;
  io_problem()
      : path(rb::io_bench_dir() + "/resproj_bench_io.bin"),
        write_path(rb::io_bench_dir() + "/resproj_bench_io_write.bin"),
        bytes(rb::io_bench_bytes()), device(std::size_t(bytes), stream) {
    rb::ensure_io_bench_file(path, bytes);
    stream.synchronize();
  }
  ~io_problem() { std::remove(write_path.c_str()); }
};

std::unique_ptr<io_problem> problem_holder;
io_problem &problem() {
  if (!problem_holder)
    problem_holder = std::make_unique<io_problem>();
  return *problem_holder;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void finish(benchmark::State &state, std::uint64_t bytes) {
  state.SetBytesProcessed(std::int64_t(bytes) * std::int64_t(state.iterations()));
  state.counters["GiB"] = double(bytes) / double(1u << 30);
}

void bm_h2d_pinned(benchmark::State &state) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    // Chunked so that a very large file needs no equally large pinned block.
    const std::size_t chunk = std::size_t(256) << 20;
    gpu::pinned_buffer<unsigned char> host(
        std::size_t(std::min<std::uint64_t>(chunk, p.bytes)));
    std::memset(host.data(), 1, host.size());
    for (auto _ : state) {
      const auto t0 = clock_type::now();
      for (std::uint64_t done = 0; done < p.bytes; done += host.size()) {
        const std::size_t n =
            std::size_t(std::min<std::uint64_t>(host.size(), p.bytes - done));
        RESPROJ_CUDA_TRY(cudaMemcpyAsync(p.device.data() + done, host.data(), n,
                                         cudaMemcpyHostToDevice, p.stream.get()));
      }
      p.stream.synchronize();
      state.SetIterationTime(seconds_since(t0));
    }
    finish(state, p.bytes);
  });
}

void bm_read_naive(benchmark::State &state) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    std::vector<char> host;
    for (auto _ : state) {
      const auto t0 = clock_type::now();
      host.resize(std::size_t(p.bytes)); // a fresh vector per read, as naive code does
      std::ifstream in(p.path, std::ios::binary);
      in.read(host.data(), std::streamsize(p.bytes));
      if (!in)
        throw resproj::io_error("naive read of " + p.path + " failed");
      RESPROJ_CUDA_TRY(
          cudaMemcpy(p.device.data(), host.data(), host.size(), cudaMemcpyHostToDevice));
      state.SetIterationTime(seconds_since(t0));
      std::vector<char>().swap(host);
    }
    finish(state, p.bytes);
  });
}

void bm_read_resproj(benchmark::State &state, bool cold) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    gpu::file_io_options opt;
    opt.threads = unsigned(state.range(0)); // 0: default
    opt.task_bytes = std::size_t(state.range(1)) << 20;
    opt.gds = gpu::gds_mode::bounce;
    gpu::device_file_io io(opt);
    unsigned threads = 0;
    for (auto _ : state) {
      if (cold && !rb::drop_from_page_cache(p.path))
        throw resproj::io_error("cannot drop " + p.path + " from the page cache");
      const auto t0 = clock_type::now();
      threads = io.read(p.path, 0, p.device, p.stream).threads;
      p.stream.synchronize();
      state.SetIterationTime(seconds_since(t0));
    }
    state.counters["threads"] = threads;
    finish(state, p.bytes);
  });
}

void bm_read_cold_pread(benchmark::State &state) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    const std::size_t chunk = std::size_t(16) << 20;
    gpu::pinned_buffer<unsigned char> host(chunk);
    const int fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw resproj::io_error("cannot open " + p.path);
    try {
      for (auto _ : state) {
        if (!rb::drop_from_page_cache(p.path))
          throw resproj::io_error("cannot drop " + p.path + " from the page cache");
        const auto t0 = clock_type::now();
        for (std::uint64_t done = 0; done < p.bytes;) {
          const ssize_t r = ::pread(fd, host.data(), chunk, off_t(done));
          if (r <= 0)
            throw resproj::io_error("pread of " + p.path + " failed");
          done += std::uint64_t(r);
        }
        state.SetIterationTime(seconds_since(t0));
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    finish(state, p.bytes);
  });
}

void bm_write_resproj(benchmark::State &state) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    gpu::file_io_options opt;
    opt.gds = gpu::gds_mode::bounce;
    gpu::device_file_io io(opt);
    for (auto _ : state) {
      const auto t0 = clock_type::now();
      io.write(p.write_path, 0, p.device, p.stream, false);
      state.SetIterationTime(seconds_since(t0));
    }
    finish(state, p.bytes);
  });
}

void bm_write_naive(benchmark::State &state) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    std::vector<char> host;
    for (auto _ : state) {
      const auto t0 = clock_type::now();
      host.resize(std::size_t(p.bytes));
      RESPROJ_CUDA_TRY(
          cudaMemcpy(host.data(), p.device.data(), host.size(), cudaMemcpyDeviceToHost));
      std::ofstream out(p.write_path, std::ios::binary | std::ios::trunc);
      out.write(host.data(), std::streamsize(host.size()));
      out.close();
      if (!out)
        throw resproj::io_error("naive write of " + p.write_path + " failed");
      state.SetIterationTime(seconds_since(t0));
      std::vector<char>().swap(host);
    }
    finish(state, p.bytes);
  });
}

template <class B> B *io_defaults(B *b) {
  return b->UseManualTime()->Unit(benchmark::kMillisecond);
}

void register_all() {
  using benchmark::RegisterBenchmark;
  // Few repetitions: every iteration moves the whole file.
  io_defaults(RegisterBenchmark("io/h2d-pinned", bm_h2d_pinned))
      ->Repetitions(3)
      ->ReportAggregatesOnly(true);
  io_defaults(RegisterBenchmark("io/read/naive", bm_read_naive))
      ->Iterations(2)
      ->Repetitions(2)
      ->ReportAggregatesOnly(true);
  for (int threads : {1, 2, 4, 8, 16})
    io_defaults(RegisterBenchmark("io/read", bm_read_resproj, false))
        ->ArgNames({"threads", "task_mib"})
        ->Args({threads, 4})
        ->Repetitions(3)
        ->ReportAggregatesOnly(true);
  for (int task_mib : {1, 16}) // task (= bounce buffer) size at the default thread count
    io_defaults(RegisterBenchmark("io/read", bm_read_resproj, false))
        ->ArgNames({"threads", "task_mib"})
        ->Args({8, task_mib})
        ->Repetitions(3)
        ->ReportAggregatesOnly(true);
  io_defaults(RegisterBenchmark("io/read-cold/pread", bm_read_cold_pread))
      ->Iterations(3)
      ->Repetitions(1);
  io_defaults(RegisterBenchmark("io/read-cold/resproj", bm_read_resproj, true))
      ->ArgNames({"threads", "task_mib"})
      ->Args({8, 4})
      ->Iterations(3)
      ->Repetitions(1);
  io_defaults(RegisterBenchmark("io/write/resproj", bm_write_resproj))
      ->Iterations(2)
      ->Repetitions(1);
  io_defaults(RegisterBenchmark("io/write/naive", bm_write_naive))
      ->Iterations(2)
      ->Repetitions(1);
}

class counting_reporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs)
      if (rb::run_failed(r, 0))
        ++failed_;
    ConsoleReporter::ReportRuns(runs);
  }
  int failed() const { return failed_; }

private:
  int failed_ = 0;
};

} // namespace

int main(int argc, char **argv) {
  const bool list_only = rb::lists_only(argc, argv);
  if (!rb::initialize_with_defaults(argc, argv))
    return 1;
  if (gpu::device_count() == 0 && !list_only) {
    std::printf("no CUDA device: GPU benchmarks skipped\n");
    return 0;
  }
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
    std::fprintf(stderr, "bench_gpu_io: %s\n", e.what());
    exit_code = 1;
  }
  std::fflush(stdout);
  problem_holder.reset();
  benchmark::Shutdown();
  return exit_code;
}
