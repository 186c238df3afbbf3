// Files into device memory and back: a large file (4 GiB, or
// RESPROJ_BENCH_IO_BYTES) in RESPROJ_BENCH_DIR (default /tmp), created once
// and reused.
//
//   io/h2d-pinned            pinned host -> device copy of the same bytes, no
//                            file (the bus limit)
//   io/read/naive            std::ifstream into a pageable std::vector, then
//                            one cudaMemcpy (warm cache)
//   io/read/default          resproj device_file_io with default options
//                            (what a caller gets; warm page cache)
//   io/read/bounce/threads:N/task_kib:K/buffers:B/pool:P
//                            bounce path: N threads, K KiB tasks (= bounce
//                            buffer size), B buffers per worker, persistent
//                            workers (P = 1) or threads per call (P = 0)
//   io/read/mapped/threads:N/chunk_mib:C/depth:D
//                            page-cache DMA path: read-only registration of
//                            the file mapping in C MiB chunks, D in flight per
//                            worker; counter mapped = 1 if it ran (0 = it fell
//                            back to bounce; the label says why)
//   io/read-cold/pread       plain sequential pread into pinned memory, no
//                            GPU copy, file dropped from the page cache
//                            before each iteration (the disk's own rate)
//   io/read-cold/...         default, bounce (8 threads, 4 MiB: round 1's
//                            setting) and mapped reads, same cold cache
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
#include "common/gpu_main.cuh"
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

/// One read variant of the benchmark table.
struct read_case {
  bool defaults = false; ///< default options (the fields below are ignored)
  gpu::read_path path = gpu::read_path::bounce;
  unsigned threads = 8;
  std::size_t task_kib = 1024;
  unsigned buffers = 3;
  bool pool = true;
  std::size_t chunk_mib = 32;
  unsigned depth = 2;

  gpu::file_io_options options() const {
    gpu::file_io_options o;
    o.gds = gpu::gds_mode::bounce;
    if (defaults)
      return o;
    o.reads = path;
    o.threads = threads;
    o.task_bytes = task_kib << 10;
    o.buffers_per_worker = buffers;
    o.persistent_threads = pool;
    o.map_chunk_bytes = chunk_mib << 20;
    o.map_depth = depth;
    return o;
  }
  std::string name(const char *prefix) const {
    std::string n = prefix;
    if (defaults)
      return n + "/default";
    if (path == gpu::read_path::mapped)
      return n + "/mapped/threads:" + std::to_string(threads) +
             "/chunk_mib:" + std::to_string(chunk_mib) +
             "/depth:" + std::to_string(depth);
    return n + "/bounce/threads:" + std::to_string(threads) +
           "/task_kib:" + std::to_string(task_kib) +
           "/buffers:" + std::to_string(buffers) +
           "/pool:" + std::to_string(pool ? 1 : 0);
  }
};

void bm_read_resproj(benchmark::State &state, read_case c, bool cold) {
  rb::guarded(state, [&] {
    io_problem &p = problem();
    gpu::device_file_io io(c.options());
    // Untimed first read (warm runs): pinned buffers, worker threads and
    // streams are set up once per object, as in an application reading many
    // files. Cold runs include that set-up (small next to the disk time).
    gpu::file_io_result r;
    if (!cold) {
      r = io.read(p.path, 0, p.device, p.stream);
      p.stream.synchronize();
    }
    for (auto _ : state) {
      if (cold && !rb::drop_from_page_cache(p.path))
        throw resproj::io_error("cannot drop " + p.path + " from the page cache");
      const auto t0 = clock_type::now();
      r = io.read(p.path, 0, p.device, p.stream);
      p.stream.synchronize();
      state.SetIterationTime(seconds_since(t0));
    }
    state.counters["threads"] = r.threads;
    state.counters["mapped"] = r.method == gpu::io_method::mapped ? 1 : 0;
    if (!r.map_problem.empty())
      state.SetLabel(r.map_problem);
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
  std::vector<read_case> warm;
  warm.push_back(read_case{true});
  read_case b; // bounce: 8 threads, 1 MiB tasks, 3 buffers, persistent workers
  for (unsigned t : {1u, 2u, 4u, 8u, 12u, 16u}) {
    read_case c = b;
    c.threads = t;
    warm.push_back(c);
  }
  for (std::size_t kib : {256u, 512u, 2048u, 4096u}) {
    read_case c = b;
    c.task_kib = kib;
    warm.push_back(c);
  }
  for (unsigned bufs : {2u, 4u}) {
    read_case c = b;
    c.buffers = bufs;
    warm.push_back(c);
  }
  {
    read_case c = b;
    c.pool = false;
    warm.push_back(c);
    c = b;
    c.threads = 16;
    c.task_kib = 512;
    warm.push_back(c);
    c.task_kib = 256;
    c.buffers = 4;
    warm.push_back(c);
  }
  read_case m = b; // mapped: 8 threads, 32 MiB chunks, 2 in flight
  m.path = gpu::read_path::mapped;
  for (unsigned t : {4u, 8u, 16u}) {
    read_case c = m;
    c.threads = t;
    warm.push_back(c);
  }
  for (std::size_t mib : {8u, 128u}) {
    read_case c = m;
    c.chunk_mib = mib;
    warm.push_back(c);
  }
  {
    read_case c = m;
    c.depth = 4;
    warm.push_back(c);
  }
  for (const read_case &c : warm)
    io_defaults(RegisterBenchmark(c.name("io/read").c_str(), bm_read_resproj, c, false))
        ->Iterations(3)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true);

  io_defaults(RegisterBenchmark("io/read-cold/pread", bm_read_cold_pread))
      ->Iterations(2)
      ->Repetitions(1);
  read_case round1 = b; // round 1's setting, for comparison
  round1.task_kib = 4096;
  round1.buffers = 2;
  for (const read_case &c : {read_case{true}, round1, m})
    io_defaults(
        RegisterBenchmark(c.name("io/read-cold").c_str(), bm_read_resproj, c, true))
        ->Iterations(2)
        ->Repetitions(1);
  io_defaults(RegisterBenchmark("io/write/resproj", bm_write_resproj))
      ->Iterations(2)
      ->Repetitions(1);
  io_defaults(RegisterBenchmark("io/write/naive", bm_write_naive))
      ->Iterations(2)
      ->Repetitions(1);
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_gpu_io", register_all,
                      [] { problem_holder.reset(); });
}
