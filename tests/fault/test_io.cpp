// Fault injection into the file readers and writers of io/: every call of
// open, read, pread, write, pwrite and rename that a pipeline makes on its
// files is failed in turn (first counted in a clean run). Each failure must
// give a resproj::io_error naming the file; a whole-file writer must leave
// the old file (or none) and no temporary beside it; a reader must leave
// the caller's destination as documented; no descriptor may stay open; and
// the next run without faults must give the right result. Short transfers
// and EINTR are not failures: the pipeline must retry and succeed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "fault_control.h"
#include "fault_test_util.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/positional_file.hpp"
#include "resproj/io/raw.hpp"
#include "resproj/io/replace_file.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/scanner/listmode.hpp"

namespace fs = std::filesystem;
namespace io = resproj::io;
namespace rf = resproj_fault;
using resproj::span;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;
using rf::some_events;

namespace {

std::string file_name(const std::string &path) {
  return fs::path(path).filename().string();
}

std::string errno_name(int action) {
  if (action == FAULT_SHORT)
    return "short transfer";
  if (action == FAULT_EOF)
    return "end of file";
  return std::strerror(action);
}

/// Fails every call of `family` that `write` makes on `path` with `action`
/// in turn, with and without an old file at `path`. `fails`: the action is
/// an error the writer must report (else, a short write or EINTR, it must
/// succeed). Returns the calls a clean run makes.
long sweep_writer(const temp_dir &dir, const std::string &path,
                  const std::function<void()> &write, const char *family, int action,
                  bool fails) {
  const std::string name = file_name(path);
  const std::string old_contents = "old contents";
  fs::remove(path);
  write();
  const std::string fresh = read_bytes(path);
  long total = 0;
  for (const bool existed : {false, true}) {
    auto prepare = [&] {
      fs::remove(path);
      if (existed)
        write_bytes(path, old_contents);
    };
    prepare();
    const long calls = rf::count_calls(family, write);
    total = std::max(total, calls);
    for (long n = 1; n <= calls; ++n) {
      SCOPED_TRACE(std::string(family) + " call " + std::to_string(n) + " of " +
                   std::to_string(calls) + ": " + errno_name(action) +
                   (existed ? ", old file present" : ", no old file"));
      prepare();
      const std::size_t fds = rf::open_fds();
      const rf::attempt a = rf::run_with_fault(family, n, action, write);
      EXPECT_EQ(a.injected, 1);
      if (fails) {
        EXPECT_EQ(a.kind, rf::attempt::io_error)
            << rf::kind_name(a.kind) << ": " << a.what;
        EXPECT_NE(a.what.find(name), std::string::npos) << a.what;
        if (existed)
          EXPECT_EQ(read_bytes(path), old_contents);
        else
          EXPECT_FALSE(fs::exists(path));
        const std::set<std::string> expected =
            existed ? std::set<std::string>{name} : std::set<std::string>{};
        EXPECT_EQ(rf::entries(dir.dir()), expected) << "a temporary file stayed behind";
      } else {
        EXPECT_EQ(a.kind, rf::attempt::succeeded) << a.what;
        EXPECT_EQ(read_bytes(path), fresh);
        EXPECT_EQ(rf::entries(dir.dir()), std::set<std::string>{name});
      }
      EXPECT_EQ(rf::open_fds(), fds) << "a file descriptor was left open";
    }
    prepare();
    write();
    EXPECT_EQ(read_bytes(path), fresh) << "the writer does not work after the faults";
  }
  return total;
}

/// Every fault a whole-file writer must survive: failing opens, writes
/// (through streams: "write"; positional: "pwrite") and the final rename;
/// short and interrupted writes succeed.
void check_whole_file_writer(const temp_dir &dir, const std::string &path,
                             const std::function<void()> &write, const char *writes) {
  EXPECT_GT(sweep_writer(dir, path, write, writes, ENOSPC, true), 0)
      << "no " << writes << " call seen: is the interposer active?";
  sweep_writer(dir, path, write, writes, EIO, true);
  sweep_writer(dir, path, write, writes, EFBIG, true);
  sweep_writer(dir, path, write, writes, FAULT_SHORT, false);
  sweep_writer(dir, path, write, writes, EINTR, false);
  EXPECT_GT(sweep_writer(dir, path, write, "open", EACCES, true), 0);
  sweep_writer(dir, path, write, "open", EMFILE, true);
  EXPECT_EQ(sweep_writer(dir, path, write, "rename", EIO, true), 1);
  sweep_writer(dir, path, write, "rename", EXDEV, true);
}

/// What a failed read may do to the caller's destination.
enum class dst_rule {
  untouched,       ///< never modified
  partial_said,    ///< may be partly written, and then the message says so
  partial_allowed, ///< may be partly written (documented as unspecified)
};

/// Fails every call of `family` that `read(dst)` makes with `action` in
/// turn. `dst` starts as `sentinel`; only its first `writable` elements may
/// ever change; a clean read gives `expected`. `fails` as for writers.
/// Returns the calls a clean run makes.
template <class T>
long sweep_reader(const std::string &path,
                  const std::function<void(std::vector<T> &)> &read,
                  const std::vector<T> &sentinel, std::size_t writable,
                  const std::vector<T> &expected, const char *family, int action,
                  bool fails, dst_rule rule) {
  std::vector<T> dst = sentinel;
  const long calls = rf::count_calls(family, [&] { read(dst); });
  EXPECT_EQ(dst, expected) << "clean read";
  for (long n = 1; n <= calls; ++n) {
    SCOPED_TRACE(std::string(family) + " call " + std::to_string(n) + " of " +
                 std::to_string(calls) + ": " + errno_name(action));
    dst = sentinel;
    const std::size_t fds = rf::open_fds();
    const rf::attempt a = rf::run_with_fault(family, n, action, [&] { read(dst); });
    EXPECT_EQ(a.injected, 1);
    if (fails) {
      EXPECT_EQ(a.kind, rf::attempt::io_error) << rf::kind_name(a.kind) << ": " << a.what;
      EXPECT_NE(a.what.find(file_name(path)), std::string::npos) << a.what;
      EXPECT_TRUE(std::equal(dst.begin() + std::ptrdiff_t(writable), dst.end(),
                             sentinel.begin() + std::ptrdiff_t(writable)))
          << "elements outside the read were modified";
      if (dst != sentinel) {
        EXPECT_NE(rule, dst_rule::untouched) << "destination modified: " << a.what;
        if (rule == dst_rule::partial_said) {
          EXPECT_NE(a.what.find("partly written"), std::string::npos) << a.what;
        }
      }
    } else {
      EXPECT_EQ(a.kind, rf::attempt::succeeded) << a.what;
      EXPECT_EQ(dst, expected);
    }
    EXPECT_EQ(rf::open_fds(), fds) << "a file descriptor was left open";
  }
  dst = sentinel;
  read(dst);
  EXPECT_EQ(dst, expected) << "the reader does not work after the faults";
  return calls;
}

/// Every fault a reader must survive on the calls of `reads` ("read" for
/// streams, "pread" for positional reads) and on "open".
template <class T>
void check_reader(const std::string &path,
                  const std::function<void(std::vector<T> &)> &read,
                  const std::vector<T> &sentinel, std::size_t writable,
                  const std::vector<T> &expected, const char *reads, dst_rule rule) {
  EXPECT_GT(
      sweep_reader(path, read, sentinel, writable, expected, reads, EIO, true, rule), 0)
      << "no " << reads << " call seen: is the interposer active?";
  sweep_reader(path, read, sentinel, writable, expected, reads, FAULT_EOF, true, rule);
  sweep_reader(path, read, sentinel, writable, expected, reads, FAULT_SHORT, false, rule);
  sweep_reader(path, read, sentinel, writable, expected, reads, EINTR, false, rule);
  EXPECT_GT(
      sweep_reader(path, read, sentinel, writable, expected, "open", EACCES, true, rule),
      0);
}

std::vector<float> ramp(std::size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = scale * float(i) + 0.25f;
  return v;
}

bool same_events(const std::vector<resproj::scanner::listmode_event> &x,
                 const std::vector<resproj::scanner::listmode_event> &y) {
  return x.size() == y.size() &&
         std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
}

class FileFaults : public ::testing::Test {
protected:
  temp_dir dir;
  rf::scope_guard scope{dir.dir()};
};

// ------------------------------------------------------------- writers --

TEST_F(FileFaults, NpyWriterLeavesTheOldFileOrTheNewOne) {
  const std::string path = dir.file("image.npy");
  const std::vector<float> data = ramp(3 * 4 * 5);
  check_whole_file_writer(
      dir, path,
      [&] {
        io::write_npy(path, span<const float>(data.data(), data.size()), {3, 4, 5});
      },
      "write");
}

TEST_F(FileFaults, NiftiWriterLeavesTheOldFileOrTheNewOne) {
  const std::string path = dir.file("image.nii");
  const resproj::image_geometry g({4, 5, 6}, {2.0, 2.0, 3.0}, {-3.0, -4.0, -7.5});
  const std::vector<float> data = ramp(4 * 5 * 6);
  check_whole_file_writer(
      dir, path,
      [&] { io::write_nifti(path, span<const float>(data.data(), data.size()), g); },
      "write");
}

TEST_F(FileFaults, RawWriterLeavesTheOldFileOrTheNewOne) {
  const std::string path = dir.file("values.raw");
  const std::vector<float> data = ramp(20000); // several stream writes
  check_whole_file_writer(
      dir, path,
      [&] { io::write_raw(path, span<const float>(data.data(), data.size())); }, "write");
}

TEST_F(FileFaults, ListmodeWriterLeavesTheOldFileOrTheNewOne) {
  const std::string path = dir.file("events.lm");
  const auto events = some_events(1000);
  check_whole_file_writer(
      dir, path,
      [&] {
        io::write_listmode_file(path, span<const resproj::scanner::listmode_event>(
                                          events.data(), events.size()));
      },
      "write");
}

// The way the device writers replace a file: positional writes of a header
// and a payload into the temporary, renamed at the end.
TEST_F(FileFaults, ReplaceFileViaPositionalWritesLeavesTheOldFileOrTheNewOne) {
  const std::string path = dir.file("payload.bin");
  const std::vector<unsigned char> payload(3 * 4096 + 17, 0x5a);
  io::parallel_io_options options;
  options.threads = 2;
  options.task_bytes = 4096;
  check_whole_file_writer(
      dir, path,
      [&] {
        io::replace_file_via(path, [&](const std::string &tmp) {
          {
            const io::positional_file f = io::positional_file::open_write(tmp, true);
            f.pwrite_exact(tmp, "HEAD", 4, 0);
          }
          io::write_range(
              tmp, 4, payload.size(),
              [&](unsigned, std::uint64_t pos, void *buf, std::size_t n) {
                std::memcpy(buf, payload.data() + (pos - 4), n);
              },
              options);
        });
      },
      "pwrite");
}

// Appending works in place: a failed append may leave part of the new
// events, but never touches the events already in the file.
TEST_F(FileFaults, FailedAppendKeepsTheEventsAlreadyThere) {
  const std::string path = dir.file("events.lm");
  const auto old_events = some_events(50);
  const auto more = some_events(3000);
  const span<const resproj::scanner::listmode_event> old_span(old_events.data(),
                                                              old_events.size());
  const span<const resproj::scanner::listmode_event> more_span(more.data(), more.size());
  io::write_listmode_file(path, old_span);
  const long calls =
      rf::count_calls("write", [&] { io::append_listmode_events(path, more_span); });
  ASSERT_GT(calls, 0);
  for (long n = 1; n <= calls; ++n) {
    SCOPED_TRACE("write call " + std::to_string(n));
    io::write_listmode_file(path, old_span);
    const std::size_t fds = rf::open_fds();
    const rf::attempt a = rf::run_with_fault(
        "write", n, ENOSPC, [&] { io::append_listmode_events(path, more_span); });
    EXPECT_EQ(a.kind, rf::attempt::io_error) << a.what;
    EXPECT_NE(a.what.find("events.lm"), std::string::npos) << a.what;
    EXPECT_EQ(rf::open_fds(), fds);
    const std::string bytes = read_bytes(path);
    ASSERT_GE(bytes.size(), old_events.size() * 10);
    EXPECT_EQ(std::memcmp(bytes.data(), old_events.data(), old_events.size() * 10), 0);
  }
  io::write_listmode_file(path, old_span);
  EXPECT_EQ(io::append_listmode_events(path, more_span), old_events.size());
  EXPECT_EQ(io::count_listmode_events(path), old_events.size() + more.size());
}

// The parallel writer works in place: a failed write reports the file and
// the offset, leaves no descriptor open, and leaves the bytes outside its
// range alone.
TEST_F(FileFaults, ParallelWriterKeepsTheBytesOutsideItsRange) {
  const std::string path = dir.file("range.bin");
  const std::string outside(8192, 'o');
  const std::size_t offset = 1000, bytes = 5000;
  io::parallel_io_options options;
  options.threads = 3;
  options.task_bytes = 512;
  auto write = [&] {
    io::write_range(
        path, offset, bytes,
        [](unsigned, std::uint64_t, void *buf, std::size_t n) {
          std::memset(buf, 'n', n);
        },
        options);
  };
  write_bytes(path, outside);
  const long calls = rf::count_calls("pwrite", write);
  ASSERT_GE(calls, 10);
  for (long n = 1; n <= calls; ++n) {
    SCOPED_TRACE("pwrite call " + std::to_string(n));
    write_bytes(path, outside);
    const std::size_t fds = rf::open_fds();
    const rf::attempt a = rf::run_with_fault("pwrite", n, ENOSPC, write);
    EXPECT_EQ(a.kind, rf::attempt::io_error) << a.what;
    EXPECT_NE(a.what.find("range.bin"), std::string::npos) << a.what;
    EXPECT_NE(a.what.find("offset"), std::string::npos) << a.what;
    EXPECT_EQ(rf::open_fds(), fds);
    const std::string now = read_bytes(path);
    ASSERT_EQ(now.size(), outside.size());
    EXPECT_EQ(now.substr(0, offset), outside.substr(0, offset));
    EXPECT_EQ(now.substr(offset + bytes), outside.substr(offset + bytes));
  }
  write_bytes(path, outside);
  write();
  EXPECT_EQ(read_bytes(path), outside.substr(0, offset) + std::string(bytes, 'n') +
                                  outside.substr(offset + bytes));
}

// ------------------------------------------------------------- readers --

TEST_F(FileFaults, NpyReaderFailsCleanly) {
  const std::string path = dir.file("image.npy");
  const std::vector<float> data = ramp(40000, 0.5f); // larger than a stream buffer
  io::write_npy(path, span<const float>(data.data(), data.size()), {40000});
  const std::vector<float> sentinel(data.size(), -7.25f);
  check_reader<float>(
      path,
      [&](std::vector<float> &d) { io::read_npy(path, span<float>(d.data(), d.size())); },
      sentinel, sentinel.size(), data, "read", dst_rule::partial_said);
  // Into a new vector: no caller destination, the same errors.
  check_reader<float>(
      path, [&](std::vector<float> &d) { d = io::read_npy_vector<float>(path); }, {}, 0,
      data, "read", dst_rule::untouched);
}

TEST_F(FileFaults, NiftiReaderLeavesTheDestinationUntouched) {
  const std::string path = dir.file("image.nii");
  const resproj::image_geometry g({10, 20, 30}, {2.0, 2.0, 3.0}, {-3.0, -4.0, -7.5});
  const std::vector<double> data = [] {
    std::vector<double> v(10 * 20 * 30);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = 0.5 * double(i) - 3.0;
    return v;
  }();
  io::write_nifti(path, span<const double>(data.data(), data.size()), g);
  const std::vector<double> sentinel(data.size(), -7.25);
  check_reader<double>(
      path,
      [&](std::vector<double> &d) {
        io::read_nifti(path, span<double>(d.data(), d.size()));
      },
      sentinel, sentinel.size(), data, "pread", dst_rule::untouched);
  // The geometry output is not modified either.
  resproj::image_geometry out({1, 1, 1}, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0});
  std::vector<double> dst(data.size());
  const rf::attempt a = rf::run_with_fault("pread", 2, EIO, [&] {
    io::read_nifti(path, span<double>(dst.data(), dst.size()), &out);
  });
  EXPECT_EQ(a.kind, rf::attempt::io_error);
  EXPECT_EQ(out.shape()[0], 1);
}

TEST_F(FileFaults, RawReaderWritesNothingOutsideItsRange) {
  const std::string path = dir.file("values.raw");
  const std::vector<float> data = ramp(30000);
  io::write_raw(path, span<const float>(data.data(), data.size()));
  const std::size_t count = 20000, offset = 4 * 5000;
  std::vector<float> sentinel(count + 100, -7.25f);
  std::vector<float> expected = sentinel;
  std::copy(data.begin() + 5000, data.begin() + 5000 + count, expected.begin());
  check_reader<float>(
      path,
      [&](std::vector<float> &d) {
        io::read_raw(path, io::dtype::float32, count, span<float>(d.data(), d.size()),
                     offset);
      },
      sentinel, count, expected, "read", dst_rule::partial_said);
}

TEST_F(FileFaults, ListmodeReadersFailCleanly) {
  const std::string path = dir.file("events.lm");
  const auto events = some_events(5000);
  io::write_listmode_file(
      path, span<const resproj::scanner::listmode_event>(events.data(), events.size()));
  std::vector<resproj::scanner::listmode_event> sentinel(4000);
  std::memset(sentinel.data(), 0x7f, sentinel.size() * sizeof(sentinel[0]));
  const std::size_t first = 1000, count = 3000;
  std::vector<resproj::scanner::listmode_event> expected = sentinel;
  std::memcpy(expected.data(), events.data() + first, count * sizeof(events[0]));
  auto read = [&](std::vector<resproj::scanner::listmode_event> &d) {
    io::read_listmode_events(path, first, count,
                             span<resproj::scanner::listmode_event>(d.data(), d.size()));
  };
  // listmode_event has no operator==: compare the bytes through a wrapper.
  auto as_bytes = [](const std::vector<resproj::scanner::listmode_event> &v) {
    const auto *p = reinterpret_cast<const unsigned char *>(v.data());
    return std::vector<unsigned char>(p, p + v.size() * sizeof(v[0]));
  };
  const std::vector<unsigned char> sentinel_bytes = as_bytes(sentinel);
  const std::vector<unsigned char> expected_bytes = as_bytes(expected);
  auto read_bytes_dst = [&](std::vector<unsigned char> &b) {
    std::vector<resproj::scanner::listmode_event> d(b.size() / 10);
    std::memcpy(d.data(), b.data(), b.size());
    try {
      read(d);
    } catch (...) {
      std::memcpy(b.data(), d.data(), b.size());
      throw;
    }
    std::memcpy(b.data(), d.data(), b.size());
  };
  check_reader<unsigned char>(path, read_bytes_dst, sentinel_bytes, count * 10,
                              expected_bytes, "read", dst_rule::partial_said);
  // The whole file into a new vector.
  const long calls = rf::count_calls("read", [&] { io::read_listmode_file(path); });
  ASSERT_GT(calls, 0);
  for (long n = 1; n <= calls; ++n) {
    const std::size_t fds = rf::open_fds();
    const rf::attempt a =
        rf::run_with_fault("read", n, EIO, [&] { io::read_listmode_file(path); });
    EXPECT_EQ(a.kind, rf::attempt::io_error) << a.what;
    EXPECT_EQ(rf::open_fds(), fds);
  }
  EXPECT_TRUE(same_events(io::read_listmode_file(path), events));
}

TEST_F(FileFaults, ParallelReaderWithSeveralThreadsFailsCleanly) {
  const std::string path = dir.file("range.bin");
  std::vector<unsigned char> data(64 * 1024 + 123);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(i * 31 + 7);
  write_bytes(path, data);
  const std::size_t offset = 100;
  io::parallel_io_options options;
  options.threads = 4;
  options.task_bytes = 4096;
  const std::vector<unsigned char> sentinel(data.size() - offset, 0xee);
  const std::vector<unsigned char> expected(data.begin() + offset, data.end());
  auto read = [&](std::vector<unsigned char> &d) {
    io::read_range_into(path, offset, span<unsigned char>(d.data(), d.size()), options);
  };
  check_reader<unsigned char>(path, read, sentinel, sentinel.size(), expected, "pread",
                              dst_rule::partial_allowed);
  // The same with persistent worker threads.
  resproj::thread_pool pool;
  options.pool = &pool;
  check_reader<unsigned char>(path, read, sentinel, sentinel.size(), expected, "pread",
                              dst_rule::partial_allowed);
}

TEST_F(FileFaults, ListmodeDataLoaderFailsCleanly) {
  const std::string path = dir.file("events.lm");
  const auto events = some_events(2000);
  io::write_listmode_file(
      path, span<const resproj::scanner::listmode_event>(events.data(), events.size()));
  for (const char *family : {"open", "read"}) {
    const long calls = rf::count_calls(
        family, [&] { (void)resproj::recon::read_listmode_data(path, 40, 5); });
    ASSERT_GT(calls, 0) << family;
    for (long n = 1; n <= calls; ++n) {
      SCOPED_TRACE(std::string(family) + " call " + std::to_string(n));
      const std::size_t fds = rf::open_fds();
      const rf::attempt a = rf::run_with_fault(
          family, n, EIO, [&] { (void)resproj::recon::read_listmode_data(path, 40, 5); });
      EXPECT_EQ(a.kind, rf::attempt::io_error) << a.what;
      EXPECT_NE(a.what.find("events.lm"), std::string::npos) << a.what;
      EXPECT_EQ(rf::open_fds(), fds);
    }
  }
  const auto lm = resproj::recon::read_listmode_data(path, 40, 5);
  ASSERT_EQ(lm.count(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(std::uint32_t(lm.pairs[2 * i]), events[i].detector_a());
    ASSERT_EQ(std::uint32_t(lm.pairs[2 * i + 1]), events[i].detector_b());
    ASSERT_EQ(lm.bins[i], events[i].tof_bin());
  }
}

} // namespace
