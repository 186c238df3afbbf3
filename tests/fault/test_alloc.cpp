// Allocation failure in the middle of a pipeline: every operator new that a
// call makes (counted in a clean run) throws std::bad_alloc in turn
// (fault_new.cpp). The exception must reach the caller as std::bad_alloc
// (or the call must recover and give the right result), with the caller's
// destination, image and target file unchanged, no temporary file and no
// descriptor left behind; LeakSanitizer (sanitize preset) checks that no
// host memory leaks. The next call without faults must work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
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
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/raw.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/scanner/listmode.hpp"

namespace fs = std::filesystem;
namespace io = resproj::io;
namespace rf = resproj_fault;
using rf::some_events;
namespace rt = resproj_test;
using resproj::span;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

namespace {

/// Fails every allocation of `run` in turn (after `prepare`). After each:
/// `run` threw std::bad_alloc (or recovered and returned normally) and
/// `check(failed)` holds; no descriptor is left open. A clean run ends it.
/// `exact`: every run makes the same allocations (with worker threads that
/// take tasks as they come, a late allocation may not happen every time).
/// Returns the allocations of a clean run.
long sweep_new(const std::function<void()> &prepare, const std::function<void()> &run,
               const std::function<void(bool failed)> &check, bool exact = true) {
  prepare();
  const long calls = rf::count_calls("new", run);
  for (long n = 1; n <= calls; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(calls));
    prepare();
    const std::size_t fds = rf::open_fds();
    const rf::attempt a = rf::run_with_fault("new", n, ENOMEM, run);
    if (exact || a.kind != rf::attempt::succeeded) {
      EXPECT_EQ(a.injected, 1);
    }
    EXPECT_TRUE(a.kind == rf::attempt::bad_alloc || a.kind == rf::attempt::succeeded)
        << rf::kind_name(a.kind) << ": " << a.what;
    check(a.kind != rf::attempt::succeeded);
    EXPECT_EQ(rf::open_fds(), fds) << "a file descriptor was left open";
  }
  prepare();
  run();
  check(false);
  return calls;
}

class AllocationFaults : public ::testing::Test {
protected:
  temp_dir dir;
  rf::scope_guard scope{dir.dir()};
};

TEST_F(AllocationFaults, InterposedOperatorNewCounts) {
  const long calls = rf::count_calls("new", [] { std::vector<int> v(10); });
  EXPECT_EQ(calls, 1);
  const rf::attempt a =
      rf::run_with_fault("new", 1, ENOMEM, [] { std::vector<int> v(10); });
  EXPECT_EQ(a.kind, rf::attempt::bad_alloc);
}

TEST_F(AllocationFaults, ListmodeDataLoader) {
  const std::string path = dir.file("events.lm");
  const auto events = some_events(3000);
  io::write_listmode_file(
      path, span<const resproj::scanner::listmode_event>(events.data(), events.size()));
  resproj::recon::listmode_data lm;
  const long calls = sweep_new(
      [&] { lm = {}; }, [&] { lm = resproj::recon::read_listmode_data(path, 40, 5); },
      [&](bool failed) {
        if (failed) {
          EXPECT_EQ(lm.count(), 0u); // the caller's object kept
        } else {
          ASSERT_EQ(lm.count(), events.size());
          EXPECT_EQ(lm.bins[7], events[7].tof_bin());
        }
      });
  EXPECT_GT(calls, 3);
}

TEST_F(AllocationFaults, ReadersLeaveTheDestinationUntouched) {
  const std::string npy = dir.file("a.npy"), nii = dir.file("a.nii"),
                    raw = dir.file("a.raw");
  const resproj::image_geometry g({6, 7, 8}, {2.0, 2.0, 3.0}, {0.0, 1.0, 2.0});
  std::vector<float> data(6 * 7 * 8);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = 0.5f * float(i) + 1.0f;
  const span<const float> cdata(data.data(), data.size());
  io::write_npy(npy, cdata, {6, 7, 8});
  io::write_nifti(nii, cdata, g);
  io::write_raw(raw, cdata);
  const std::vector<float> sentinel(data.size(), -7.25f);
  std::vector<float> dst = sentinel;
  auto check = [&](bool failed) {
    if (failed) {
      EXPECT_EQ(dst, sentinel);
    } else {
      EXPECT_EQ(dst, data);
    }
  };
  auto reset = [&] { std::copy(sentinel.begin(), sentinel.end(), dst.begin()); };
  const span<float> d(dst.data(), dst.size());
  EXPECT_GT(sweep_new(
                reset, [&] { io::read_npy(npy, d); }, check),
            0);
  EXPECT_GT(sweep_new(
                reset, [&] { io::read_nifti(nii, d); }, check),
            0);
  EXPECT_GT(sweep_new(
                reset, [&] { io::read_raw(raw, d); }, check),
            0);
}

TEST_F(AllocationFaults, WritersLeaveTheOldFileAndNoTemporary) {
  const std::string path = dir.file("out.npy");
  const std::vector<double> data(500, 2.5);
  const span<const double> cdata(data.data(), data.size());
  auto prepare = [&] { write_bytes(path, "old contents"); };
  auto check = [&](bool failed) {
    if (failed)
      EXPECT_EQ(read_bytes(path), "old contents");
    else
      EXPECT_EQ(io::read_npy_vector<double>(path), data);
    EXPECT_EQ(rf::entries(dir.dir()), std::set<std::string>{"out.npy"});
  };
  EXPECT_GT(sweep_new(
                prepare, [&] { io::write_npy(path, cdata, {500}); }, check),
            0);
  const std::string nii = dir.file("out.nii");
  const resproj::image_geometry g({5, 10, 10}, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0});
  auto prepare_nii = [&] {
    fs::remove(path);
    write_bytes(nii, "old contents");
  };
  auto check_nii = [&](bool failed) {
    if (failed) {
      EXPECT_EQ(read_bytes(nii), "old contents");
    } else {
      std::vector<double> back(500);
      io::read_nifti(nii, span<double>(back.data(), back.size()));
      EXPECT_EQ(back, data);
    }
    EXPECT_EQ(rf::entries(dir.dir()), std::set<std::string>{"out.nii"});
  };
  EXPECT_GT(sweep_new(
                prepare_nii, [&] { io::write_nifti(nii, cdata, g); }, check_nii),
            0);
}

TEST_F(AllocationFaults, ParallelReaderWithThreads) {
  const std::string path = dir.file("range.bin");
  std::vector<unsigned char> data(40000);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(i * 13 + 1);
  write_bytes(path, data);
  io::parallel_io_options options;
  options.threads = 3;
  options.task_bytes = 4096;
  std::vector<unsigned char> dst(data.size());
  auto check = [&](bool failed) {
    if (!failed) {
      EXPECT_EQ(dst, data);
    }
  };
  auto run = [&] {
    io::read_range_into(path, 0, span<unsigned char>(dst.data(), dst.size()), options);
  };
  EXPECT_GT(sweep_new([&] { std::fill(dst.begin(), dst.end(), 0); }, run, check, false),
            0);
  // Persistent threads started by the call (a new pool each time): a
  // failure while the pool grows leaves a pool that stops cleanly.
  auto run_in_pool = [&] {
    resproj::thread_pool pool;
    io::parallel_io_options with_pool = options;
    with_pool.pool = &pool;
    io::read_range_into(path, 0, span<unsigned char>(dst.data(), dst.size()), with_pool);
  };
  EXPECT_GT(
      sweep_new([&] { std::fill(dst.begin(), dst.end(), 0); }, run_in_pool, check, false),
      0);
}

// The back projection with one image per thread allocates the extra images
// before it touches the caller's image: a failure leaves it as it was.
TEST_F(AllocationFaults, BackProjectionWithThreadImagesKeepsTheImage) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP: the back projection runs on one thread, "
                  "without thread images";
#endif
  using T = float;
  const rt::grid g = rt::grid::centred({12, 11, 10}, {2.0, 2.0, 2.0});
  const rt::lor_set<T> lors = rt::outside_lors<T>(g, 3000, 5);
  const std::vector<T> values = rt::random_values<T>(lors.size(), 6, 0.5, 1.5);
  const std::vector<T> start =
      rt::random_values<T>(std::size_t(g.num_voxels()), 7, 0.0, 1.0);
  resproj::cpu::options opt;
  opt.accumulation = resproj::cpu::back_accumulation::thread_images;
  opt.num_threads = 2;
  std::vector<T> image = start;
  auto project = [&] {
    resproj::cpu::back(resproj::op::non_tof{}, rt::image_of(image, g), rt::view_of(lors),
                       rt::cspan_of(values), opt);
  };
  project();
  const std::vector<T> reference = image;
  ASSERT_NE(reference, start);
  // Dynamic scheduling sums in another order each time: compare closely.
  auto near_reference = [&] {
    for (std::size_t i = 0; i < image.size(); ++i)
      if (std::fabs(image[i] - reference[i]) > 1e-5f * std::fabs(reference[i]))
        return false;
    return true;
  };
  const long calls = sweep_new([&] { image = start; }, project,
                               [&](bool failed) {
                                 if (failed) {
                                   EXPECT_EQ(image, start) << "the image was modified";
                                 } else {
                                   EXPECT_TRUE(near_reference());
                                 }
                               });
  EXPECT_GT(calls, 0);
}

} // namespace
