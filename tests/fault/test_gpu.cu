// Fault injection into the GPU pipelines: every call of a CUDA runtime
// function that a pipeline makes (counted in a clean run) is failed in turn
// by the interposer (fault_injection.c): allocations (cudaMallocAsync,
// cudaHostAlloc, event and stream creation) with cudaErrorMemoryAllocation,
// copies and synchronisations (cudaMemcpyAsync, cudaStreamSynchronize,
// cudaEventSynchronize) with cudaErrorUnknown. After each failure: the call
// threw resproj::gpu_error (gpu_out_of_memory for an allocation) carrying
// the code, no error is left in the runtime, no device or pinned allocation
// and no descriptor leaked, the pool's memory in use is back where it was,
// the caller's data are as documented, and the same objects and the device
// still give the right results. Needs the shared CUDA runtime (the
// interposer replaces its entry points); skips without a device. The
// GPUDirect Storage path is not covered (cuFile is not interposed): every
// transfer here is forced onto the bounce-buffer path.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "fault_control.h"
#include "fault_test_util.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/recon/gpu_listmode_events.cuh"

namespace {

namespace gpu = resproj::gpu;
namespace io = resproj::io;
namespace rf = resproj_fault;
namespace rt = resproj_test;
using resproj::span;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

constexpr cudaError_t oom = cudaErrorMemoryAllocation;
constexpr cudaError_t broken = cudaErrorUnknown;

/// What must be the same before and after a failed call.
struct snapshot {
  long live_device = 0, live_pinned = 0;
  std::uint64_t pool_used = 0;
  std::size_t fds = 0;
};

snapshot take_snapshot(int device) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  snapshot s;
  s.live_device = fault_live("device");
  s.live_pinned = fault_live("pinned");
  s.pool_used = gpu::pool_used_bytes(device);
  s.fds = rf::open_fds();
  return s;
}

void expect_same(const snapshot &before, const snapshot &after) {
  EXPECT_EQ(after.live_device, before.live_device) << "device allocations leaked";
  EXPECT_EQ(after.live_pinned, before.live_pinned) << "pinned allocations leaked";
  EXPECT_EQ(after.pool_used, before.pool_used) << "pool memory still in use";
  EXPECT_EQ(after.fds, before.fds) << "file descriptors left open";
}

/// Free device memory once the pool has given back what it keeps.
std::size_t free_after_trim(int device) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetMemPool(&pool, device), cudaSuccess);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  std::size_t free = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return free;
}

/// Fails each call of `family` that `run` makes in turn with `code`.
/// After each failure: resproj::gpu_error carrying `code` (gpu_out_of_memory
/// exactly for cudaErrorMemoryAllocation, never gpu_fatal_error), no error
/// left in the runtime, `after_failure()` holds, nothing leaked. A run that
/// recovers (the failed call was on a path that must not throw, such as a
/// destructor's synchronisation) must pass `verify()`. `exact`: every run
/// makes the same calls (false when worker threads race for tasks).
/// Returns the calls of a clean run.
long sweep(const char *family, cudaError_t code, const std::function<void()> &run,
           const std::function<void()> &verify,
           const std::function<void()> &after_failure = {}, bool exact = true) {
  const int device = gpu::current_device();
  run(); // warm: modules, pool, objects made on first use
  verify();
  const snapshot base = take_snapshot(device);
  const std::size_t free_before = free_after_trim(device);
  const long calls = rf::count_calls(family, run);
  verify();
  for (long n = 1; n <= calls; ++n) {
    SCOPED_TRACE(std::string(family) + " call " + std::to_string(n) + " of " +
                 std::to_string(calls) + " fails with " + cudaGetErrorName(code));
    const rf::attempt a = rf::run_with_fault(family, n, int(code), run);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    if (a.kind == rf::attempt::succeeded) {
      if (exact) {
        EXPECT_EQ(a.injected, 1);
      }
      verify();
    } else {
      EXPECT_EQ(a.injected, 1);
      EXPECT_EQ(a.kind, rf::attempt::gpu_error)
          << rf::kind_name(a.kind) << ": " << a.what;
      EXPECT_EQ(a.code, int(code)) << a.what;
      EXPECT_EQ(a.out_of_memory, code == cudaErrorMemoryAllocation) << a.what;
      EXPECT_FALSE(a.fatal) << a.what;
      EXPECT_NE(a.what.find(cudaGetErrorName(code)), std::string::npos) << a.what;
      if (after_failure)
        after_failure();
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "an error was left in the runtime";
    expect_same(base, take_snapshot(device));
  }
  // Device memory as before, up to what the driver itself may hold.
  const std::size_t free_after = free_after_trim(device);
  EXPECT_LE(free_before, free_after + (std::size_t(8) << 20))
      << "free device memory dropped by " << (free_before - free_after) << " bytes";
  run();
  verify();
  return calls;
}

std::vector<unsigned char> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto &b : v)
    b = static_cast<unsigned char>(rng());
  return v;
}

/// Bounce path only, several workers and tasks, small reads below 4 KiB.
gpu::file_io_options bounce_options() {
  gpu::file_io_options o;
  o.threads = 3;
  o.task_bytes = 64 << 10;
  o.small_bytes = 4 << 10;
  o.gds = gpu::gds_mode::bounce;
  return o;
}

/// The families every file transfer is swept over, with their failure.
struct family_code {
  const char *family;
  cudaError_t code;
  bool allocation; ///< fails before anything is copied
};
const std::vector<family_code> &transfer_families() {
  static const std::vector<family_code> f{
      {"cudaHostAlloc", oom, true},
      {"cudaMallocAsync", oom, true},
      {"cudaEventCreateWithFlags", oom, true},
      {"cudaStreamCreateWithFlags", oom, true},
      {"cudaMemcpyAsync", broken, false},
      {"cudaEventSynchronize", broken, false},
      {"cudaStreamSynchronize", broken, false},
  };
  return f;
}

class GpuFaults : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    // The interposer must see the runtime's calls, else nothing is tested.
    gpu::stream s;
    const long calls = rf::count_calls("cudaMallocAsync", [&] {
      gpu::device_buffer<float> b(16, s);
      s.synchronize();
    });
    ASSERT_GT(calls, 0) << "cudaMallocAsync is not replaced: the test executable must "
                           "link the shared CUDA runtime after libresproj_fault";
  }
  void TearDown() override {
    fault_disarm();
    fault_scope(nullptr);
  }
  temp_dir dir;
};

// ------------------------------------------------------- file transfers --

TEST_F(GpuFaults, DeviceFileReadsFailCleanly) {
  gpu::stream s;
  const std::string path = dir.file("data.bin");
  const auto bytes = random_bytes(300000 + 7, 1);
  write_bytes(path, bytes);
  gpu::device_buffer<unsigned char> dst(bytes.size(), s);
  const std::vector<unsigned char> sentinel(bytes.size(), 0xAB);
  struct variant {
    const char *name;
    std::size_t size;
    bool mapped;
  };
  // The bounce path, a read below small_bytes, and the page-cache DMA path
  // (which falls back to the bounce path where mappings cannot be
  // registered).
  for (const variant v :
       {variant{"bounce", bytes.size(), false}, variant{"small", 2000, false},
        variant{"mapped", bytes.size(), true}}) {
    gpu::file_io_options options = bounce_options();
    if (v.mapped)
      options.reads = gpu::read_path::mapped;
    for (const auto &f : transfer_families()) {
      // The mapped path unmaps its chunks after waiting for their copies: a
      // wait that only pretends to fail would let a copy read unmapped pages.
      if (v.mapped && std::string(f.family) == "cudaStreamSynchronize")
        continue;
      SCOPED_TRACE(v.name);
      auto run = [&] {
        dst.fill(0xAB, s);
        gpu::read_file(path, 0, dst.data(), v.size, s, options);
      };
      auto verify = [&] {
        const auto got = download(dst, s);
        ASSERT_TRUE(std::equal(bytes.begin(), bytes.begin() + std::ptrdiff_t(v.size),
                               got.begin()));
      };
      // Allocations come before any copy: the destination is untouched.
      // A failed copy or synchronisation may leave it partly written (as
      // documented for device_file_io::read).
      auto untouched = [&] {
        if (f.allocation)
          EXPECT_EQ(download(dst, s), sentinel) << "destination modified";
      };
      sweep(f.family, f.code, run, verify, untouched, false);
    }
  }
}

// The same device_file_io keeps working after any failure in its first
// read (its workers, streams, events and bounce buffers are made then).
TEST_F(GpuFaults, DeviceFileIoStaysUsableAfterAFailure) {
  gpu::stream s;
  const std::string path = dir.file("data.bin");
  const auto bytes = random_bytes(500000, 2);
  write_bytes(path, bytes);
  gpu::device_buffer<unsigned char> dst(bytes.size(), s);
  std::unique_ptr<gpu::device_file_io> io;
  auto verify = [&] { ASSERT_EQ(download(dst, s), bytes); };
  for (const bool mapped : {false, true}) {
    gpu::file_io_options options = bounce_options();
    if (mapped)
      options.reads = gpu::read_path::mapped;
    for (const auto &f : transfer_families()) {
      if (mapped && std::string(f.family) == "cudaStreamSynchronize")
        continue; // see DeviceFileReadsFailCleanly
      SCOPED_TRACE(mapped ? "mapped" : "bounce");
      auto run = [&] {
        io.reset();
        io = std::make_unique<gpu::device_file_io>(options);
        io->read(path, 0, dst.data(), bytes.size(), s);
      };
      auto again = [&] {
        if (!io) // the constructor failed: a new object must work
          io = std::make_unique<gpu::device_file_io>(options);
        io->read(path, 0, dst.data(), bytes.size(), s);
        verify();
      };
      sweep(f.family, f.code, run, verify, again, false);
    }
  }
}

TEST_F(GpuFaults, DeviceFormatReadersFailCleanly) {
  gpu::stream s;
  const std::string npy = dir.file("a.npy"), nii = dir.file("a.nii"),
                    lm = dir.file("a.lm");
  const resproj::image_geometry g({20, 30, 40}, {2.0, 2.0, 2.0}, {0.0, 0.0, 0.0});
  std::vector<float> image(20 * 30 * 40);
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = 0.25f * float(i);
  io::write_npy(npy, span<const float>(image.data(), image.size()), {20, 30, 40});
  io::write_nifti(nii, span<const float>(image.data(), image.size()), g);
  std::vector<resproj::scanner::listmode_event> events(30000);
  for (std::size_t i = 0; i < events.size(); ++i)
    events[i] = resproj::scanner::listmode_event::make(std::uint32_t(i % 97),
                                                       std::uint32_t(i % 89), 0);
  io::write_listmode_file(
      lm, span<const resproj::scanner::listmode_event>(events.data(), events.size()));
  gpu::device_file_io io(bounce_options());
  // The results stay alive between runs: a failed run must leave the
  // previous one as it was (and allocate nothing that stays).
  gpu::device_buffer<float> from_npy;
  std::unique_ptr<gpu::device_image<float>> from_nifti;
  gpu::device_buffer<resproj::scanner::listmode_event> from_lm;
  for (const auto &f : transfer_families()) {
    sweep(
        f.family, f.code, [&] { from_npy = gpu::read_npy_to_device<float>(io, npy, s); },
        [&] { ASSERT_EQ(download(from_npy, s), image); }, {}, false);
    sweep(
        f.family, f.code,
        [&] {
          from_nifti = std::make_unique<gpu::device_image<float>>(
              gpu::read_nifti_to_device<float>(io, nii, s));
        },
        [&] { ASSERT_EQ(download(*from_nifti, s), image); }, {}, false);
    sweep(
        f.family, f.code, [&] { from_lm = gpu::read_listmode_to_device(io, lm, s); },
        [&] {
          const auto got = download(from_lm, s);
          ASSERT_EQ(got.size(), events.size());
          ASSERT_EQ(std::memcmp(got.data(), events.data(), events.size() * 10), 0);
        },
        {}, false);
  }
}

TEST_F(GpuFaults, DeviceWritersKeepTheOldFile) {
  gpu::stream s;
  const std::string npy = dir.file("a.npy"), raw = dir.file("a.raw");
  std::vector<float> values(200000);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) - 5.0f;
  const auto d_values =
      gpu::make_device_buffer(span<const float>(values.data(), values.size()), s);
  gpu::device_file_io io(bounce_options());
  const std::string old_contents = "old contents";
  for (const auto &f : transfer_families()) {
    for (const bool as_npy : {true, false}) {
      const std::string &path = as_npy ? npy : raw;
      const std::string name = std::filesystem::path(path).filename().string();
      auto run = [&] {
        write_bytes(path, old_contents);
        if (as_npy)
          gpu::write_npy_from_device(io, path, d_values, {values.size()}, s);
        else
          gpu::write_raw_from_device(io, path, d_values, s);
      };
      auto verify = [&] {
        if (as_npy) {
          ASSERT_EQ(io::read_npy_vector<float>(path), values);
        } else {
          ASSERT_EQ(read_bytes(path).size(), values.size() * sizeof(float));
        }
      };
      auto kept = [&] {
        EXPECT_EQ(read_bytes(path), old_contents) << "the old file was not kept";
        std::set<std::string> names = rf::entries(dir.dir());
        EXPECT_EQ(names.count(name), 1u);
        for (const auto &n : names)
          EXPECT_EQ(n.find(".tmp-"), std::string::npos) << "temporary left: " << n;
      };
      sweep(f.family, f.code, run, verify, kept, false);
    }
  }
}

TEST_F(GpuFaults, ListmodeEventsToDeviceFailCleanly) {
  gpu::stream s;
  const std::string lm = dir.file("events.lm");
  std::vector<resproj::scanner::listmode_event> events(20000);
  for (std::size_t i = 0; i < events.size(); ++i)
    events[i] = resproj::scanner::listmode_event::make(
        std::uint32_t(i % 50), std::uint32_t((i * 3) % 50), std::int16_t(i % 7));
  io::write_listmode_file(
      lm, span<const resproj::scanner::listmode_event>(events.data(), events.size()));
  gpu::device_file_io io(bounce_options());
  resproj::recon::device_events loaded;
  for (const auto &f : transfer_families()) {
    sweep(
        f.family, f.code,
        [&] { loaded = resproj::recon::read_events_to_device(io, lm, 50, 7, s); },
        [&] {
          const auto pairs = download(loaded.pairs, s);
          const auto bins = download(loaded.bins, s);
          ASSERT_EQ(bins.size(), events.size());
          for (std::size_t i = 0; i < events.size(); i += 997) {
            EXPECT_EQ(pairs[2 * i], std::int32_t(events[i].detector_a()));
            EXPECT_EQ(pairs[2 * i + 1], std::int32_t(events[i].detector_b()));
            EXPECT_EQ(bins[i], events[i].tof_bin());
          }
        },
        {}, false);
  }
}

// ------------------------------------------------------------- projection --

/// A small problem: an image, LORs in host and device memory, values.
struct problem {
  rt::grid g = rt::grid::centred({16, 16, 16}, {2.0, 2.0, 2.0});
  rt::lor_set<float> lors = rt::outside_lors<float>(g, 2000, 3);
  std::vector<float> image =
      rt::random_values<float>(std::size_t(g.num_voxels()), 4, 0.5, 1.5);
  std::vector<float> values = rt::random_values<float>(lors.size(), 5, 0.5, 1.5);
  std::size_t n() const { return lors.size(); }
};

bool close_to(const std::vector<float> &a, const std::vector<float> &b, float rel) {
  if (a.size() != b.size())
    return false;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += double(a[i] - b[i]) * double(a[i] - b[i]);
    norm += double(b[i]) * double(b[i]);
  }
  return std::sqrt(diff) <= rel * std::sqrt(norm);
}

TEST_F(GpuFaults, StreamerForwardAndBackFailCleanly) {
  gpu::stream s;
  const problem p;
  const auto geometry = rt::geometry_of(p.g);
  gpu::device_image<float> image(geometry, s);
  image.upload(span<const float>(p.image.data(), p.image.size()), s);
  gpu::device_image<float> bp(geometry, s);
  std::vector<float> out(p.n()), ref_out, ref_back;
  const auto host_lors = rt::view_of(p.lors);
  auto project = [&](gpu::lor_streamer<float> &st) {
    st.forward(resproj::op::non_tof{}, image.cview(), host_lors,
               span<float>(out.data(), out.size()), s);
    bp.zero(s);
    st.back(resproj::op::non_tof{}, bp.view(), host_lors,
            span<const float>(p.values.data(), p.values.size()), s);
  };
  {
    gpu::lor_streamer<float> st(256);
    project(st);
    ref_out = out;
    ref_back = download(bp, s);
  }
  auto verify = [&] {
    EXPECT_TRUE(close_to(out, ref_out, 1e-5f));
    EXPECT_TRUE(close_to(download(bp, s), ref_back, 1e-4f));
  };
  // A streamer made and used in the run: construction included.
  for (const auto &f : transfer_families())
    sweep(
        f.family, f.code,
        [&] {
          gpu::lor_streamer<float> st(256);
          project(st);
        },
        verify, {}, false);
  // One streamer for the whole sweep: after a failure it must still work.
  // (The failed call's output or image may hold part of the result.)
  gpu::lor_streamer<float> st(256);
  for (const auto &f : transfer_families())
    sweep(
        f.family, f.code, [&] { project(st); }, verify,
        [&] {
          project(st);
          verify();
        },
        false);
}

TEST_F(GpuFaults, DeviceImagesAndResidentProjections) {
  gpu::stream s;
  const problem p;
  const auto geometry = rt::geometry_of(p.g);
  const auto d_starts = gpu::make_device_buffer(
      span<const float>(p.lors.starts.data(), p.lors.starts.size()), s);
  const auto d_ends = gpu::make_device_buffer(
      span<const float>(p.lors.ends.data(), p.lors.ends.size()), s);
  const auto d_values =
      gpu::make_device_buffer(span<const float>(p.values.data(), p.values.size()), s);
  const resproj::lor_view<const float> lors(d_starts.data(), d_ends.data(), p.n());
  gpu::device_buffer<float> d_out(p.n(), s);
  gpu::device_image<float> bp(geometry, s);
  auto run = [&] {
    gpu::device_image<float> image(geometry, s);
    image.upload(span<const float>(p.image.data(), p.image.size()), s);
    gpu::forward(resproj::op::non_tof{}, image, lors, d_out.span(), s);
    bp.zero(s);
    gpu::back(resproj::op::non_tof{}, bp, lors, d_values.cspan(), s);
  };
  run();
  const std::vector<float> ref_out = download(d_out, s), ref_back = download(bp, s);
  auto verify = [&] {
    EXPECT_TRUE(close_to(download(d_out, s), ref_out, 1e-6f));
    EXPECT_TRUE(close_to(download(bp, s), ref_back, 1e-4f));
  };
  sweep("cudaMallocAsync", oom, run, verify);
  sweep("cudaMemcpyAsync", broken, run, verify);

  // A failed upload leaves the image as it was.
  gpu::device_image<float> image(geometry, s);
  image.fill(3.0f, s);
  const std::vector<float> other(p.image.size(), 9.0f);
  const rf::attempt a = rf::run_with_fault("cudaMemcpyAsync", 1, int(broken), [&] {
    image.upload(span<const float>(other.data(), other.size()), s);
  });
  EXPECT_EQ(a.kind, rf::attempt::gpu_error) << a.what;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(download(image, s), std::vector<float>(p.image.size(), 3.0f));
}

// Last in the file: should a slot keep staging halves of different sizes,
// the next call copies past the end of its pinned buffer, which may end
// this process's use of the device.
// The first TOF sinogram call of a streamer grows its value staging (device
// and pinned, per slot). A failure half-way must not leave a slot whose
// staging halves have different sizes: the next call must work.
TEST_F(GpuFaults, StreamerStagingGrowthFailureLeavesItUsable) {
  gpu::stream s;
  const problem p;
  const auto geometry = rt::geometry_of(p.g);
  gpu::device_image<float> image(geometry, s);
  image.upload(span<const float>(p.image.data(), p.image.size()), s);
  resproj::tof_params<float> tof;
  tof.bin_width = 4.0f;
  tof.num_bins = 9;
  tof.sigma = 6.0f;
  const resproj::op::tof_sinogram<float> op(tof);
  const auto host_lors = rt::view_of(p.lors);
  std::vector<float> out(p.n() * 9), ref;
  auto tof_forward = [&](gpu::lor_streamer<float> &st) {
    st.forward(op, image.cview(), host_lors, span<float>(out.data(), out.size()), s);
  };
  {
    gpu::lor_streamer<float> st(256);
    tof_forward(st);
    ref = out;
  }
  const int device = gpu::current_device();
  for (const auto &f : {family_code{"cudaHostAlloc", oom, true},
                        family_code{"cudaMallocAsync", oom, true}}) {
    long calls = 0;
    {
      gpu::lor_streamer<float> st(256);
      calls = rf::count_calls(f.family, [&] { tof_forward(st); });
    }
    ASSERT_GT(calls, 0) << f.family;
    for (long n = 1; n <= calls; ++n) {
      SCOPED_TRACE(std::string(f.family) + " call " + std::to_string(n));
      const snapshot base = take_snapshot(device);
      {
        gpu::lor_streamer<float> st(256);
        const rf::attempt a =
            rf::run_with_fault(f.family, n, int(f.code), [&] { tof_forward(st); });
        EXPECT_EQ(a.kind, rf::attempt::gpu_error) << a.what;
        EXPECT_TRUE(a.out_of_memory) << a.what;
        std::fill(out.begin(), out.end(), -1.0f);
        tof_forward(st); // the same streamer, without faults
        EXPECT_TRUE(close_to(out, ref, 1e-5f));
      }
      EXPECT_EQ(cudaGetLastError(), cudaSuccess);
      expect_same(base, take_snapshot(device));
    }
  }
}

} // namespace
