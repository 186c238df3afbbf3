// io::read_range / io::write_range: parallel pread / pwrite of a byte range
// (host core). Identical bytes for any thread count and task
// size, offsets, 0- and 1-byte ranges, EOF and path errors, error collection.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "common/files.hpp"
#include "io/special_files.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/positional_file.hpp"

namespace {

namespace io = resproj::io;

/// A fresh directory under /tmp, removed with its files at the end.
using TempDir = resproj_test::temp_dir;

std::vector<unsigned char> pattern(std::size_t n, unsigned seed = 1) {
  std::vector<unsigned char> v(n);
  std::uint32_t x = seed * 2654435761u + 12345u;
  for (auto &b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

/// Reads [offset, offset+bytes) with the given options, checking that chunks
/// do not overlap, stay within the range and use valid worker indices.
std::vector<unsigned char> read_with(const std::string &path, std::uint64_t offset,
                                     std::uint64_t bytes,
                                     const io::parallel_io_options &opt) {
  std::vector<unsigned char> out(bytes, 0);
  std::vector<std::atomic<int>> seen(bytes);
  const unsigned workers = io::effective_io_threads(opt, bytes);
  io::read_range(
      path, offset, bytes,
      [&](unsigned w, std::uint64_t pos, const void *data, std::size_t n) {
        EXPECT_LT(w, workers);
        EXPECT_GE(pos, offset);
        EXPECT_LE(pos + n, offset + bytes);
        std::memcpy(out.data() + (pos - offset), data, n);
        for (std::size_t i = 0; i < n; ++i)
          seen[pos - offset + i].fetch_add(1);
      },
      opt);
  for (std::uint64_t i = 0; i < bytes; ++i)
    if (seen[i].load() != 1) {
      ADD_FAILURE() << "byte " << i << " delivered " << seen[i].load() << " times";
      break;
    }
  return out;
}

TEST(ParallelRead, IdenticalBytesForThreadCountsAndTaskSizes) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const std::size_t size = 1000003; // prime: no task size divides it
  const auto data = pattern(size);
  resproj_test::write_bytes(path, data);
  for (unsigned threads : {1u, 2u, 3u, 8u})
    for (std::size_t task : {std::size_t(1) << 12, std::size_t(65536), std::size_t(77777),
                             std::size_t(4) << 20}) {
      io::parallel_io_options opt;
      opt.threads = threads;
      opt.task_bytes = task;
      EXPECT_EQ(read_with(path, 0, size, opt), data) << threads << " " << task;
    }
}

TEST(ParallelRead, TaskSizeDividingTheFile) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const auto data = pattern(1 << 20, 2);
  resproj_test::write_bytes(path, data);
  for (unsigned threads : {1u, 3u, 8u}) {
    io::parallel_io_options opt;
    opt.threads = threads;
    opt.task_bytes = 1 << 16;
    EXPECT_EQ(read_with(path, 0, data.size(), opt), data);
  }
}

TEST(ParallelRead, ReadsAtAnOffset) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const auto data = pattern(300001, 3);
  resproj_test::write_bytes(path, data);
  for (unsigned threads : {1u, 2u, 8u})
    for (std::uint64_t off :
         {std::uint64_t(1), std::uint64_t(352), std::uint64_t(123457)}) {
      io::parallel_io_options opt;
      opt.threads = threads;
      opt.task_bytes = 10000;
      const std::uint64_t n = data.size() - off - 17;
      const auto got = read_with(path, off, n, opt);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + off))
          << threads << " " << off;
      // Up to the very end of the file.
      EXPECT_TRUE(std::equal(data.begin() + off, data.end(),
                             read_with(path, off, data.size() - off, opt).begin()));
    }
}

TEST(ParallelRead, ZeroAndOneByteReads) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const auto data = pattern(1000, 4);
  resproj_test::write_bytes(path, data);
  int calls = 0;
  io::read_range(path, 0, 0,
                 [&](unsigned, std::uint64_t, const void *, std::size_t) { ++calls; });
  io::read_range(path, 1000, 0,
                 [&](unsigned, std::uint64_t, const void *, std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  for (std::uint64_t off : {std::uint64_t(0), std::uint64_t(500), std::uint64_t(999)}) {
    io::parallel_io_options opt;
    opt.threads = 8;
    const auto got = read_with(path, off, 1, opt);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], data[off]);
  }
  // An empty file: 0 bytes fine, 1 byte past the end.
  const std::string empty = dir.file("empty.bin");
  resproj_test::write_bytes(empty, std::string());
  EXPECT_NO_THROW(read_with(empty, 0, 0, {}));
  EXPECT_THROW(read_with(empty, 0, 1, {}), resproj::io_error);
}

/// Expects an io_error whose message contains every string of `parts`.
template <class F> void expect_io_error(F &&f, const std::vector<std::string> &parts) {
  try {
    f();
    ADD_FAILURE() << "no io_error thrown";
  } catch (const resproj::io_error &e) {
    const std::string what = e.what();
    for (const auto &p : parts)
      EXPECT_NE(what.find(p), std::string::npos)
          << "\"" << what << "\" lacks \"" << p << "\"";
  }
}

TEST(ParallelRead, RangeBeyondEofNamesFileAndOffset) {
  TempDir dir;
  const std::string path = dir.file("short.bin");
  resproj_test::write_bytes(path, pattern(5000, 5));
  auto noop = [](unsigned, std::uint64_t, const void *, std::size_t) {};
  expect_io_error([&] { io::read_range(path, 0, 5001, noop); }, {path, "5000"});
  expect_io_error([&] { io::read_range(path, 4000, 2000, noop); }, {path, "offset 5000"});
  expect_io_error([&] { io::read_range(path, 6000, 1, noop); }, {path, "6000"});
  io::parallel_io_options opt;
  opt.threads = 4;
  opt.task_bytes = 100;
  int calls = 0;
  expect_io_error(
      [&] {
        io::read_range(
            path, 100, 5000,
            [&](unsigned, std::uint64_t, const void *, std::size_t) { ++calls; }, opt);
      },
      {path});
  EXPECT_EQ(calls, 0) << "range is checked before any read";
}

TEST(ParallelRead, NonexistentPathAndDirectory) {
  TempDir dir;
  auto noop = [](unsigned, std::uint64_t, const void *, std::size_t) {};
  const std::string missing = dir.path() + "/does_not_exist.bin";
  expect_io_error([&] { io::read_range(missing, 0, 10, noop); }, {missing});
  expect_io_error([&] { io::read_range(missing, 0, 0, noop); }, {missing});
  expect_io_error([&] { io::read_range(dir.path(), 0, 10, noop); },
                  {dir.path(), "directory"});
  expect_io_error([&] { io::read_range(dir.path(), 0, 0, noop); }, {dir.path()});
}

TEST(ParallelRead, SinkExceptionIsRethrownAfterWorkersStop) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  resproj_test::write_bytes(path, pattern(1 << 20, 6));
  io::parallel_io_options opt;
  opt.threads = 8;
  opt.task_bytes = 4096;
  std::atomic<int> calls{0};
  std::atomic<bool> thrown{false};
  EXPECT_THROW(io::read_range(
                   path, 0, 1 << 20,
                   [&](unsigned, std::uint64_t pos, const void *, std::size_t) {
                     calls.fetch_add(1);
                     if (pos == 4096 * 10) {
                       thrown = true;
                       throw std::logic_error("sink failed");
                     }
                     // Later chunks wait for the failure (so that scheduling,
                     // e.g. under sanitizers, cannot let every chunk finish
                     // first), then give the reader time to record it.
                     if (pos > 4096 * 10) {
                       const auto until =
                           std::chrono::steady_clock::now() + std::chrono::seconds(5);
                       while (!thrown && std::chrono::steady_clock::now() < until)
                         std::this_thread::yield();
                       std::this_thread::sleep_for(std::chrono::milliseconds(20));
                     }
                   },
                   opt),
               std::logic_error);
  EXPECT_LT(calls.load(), 256) << "workers should stop after the first error";
}

TEST(ParallelRead, BufferProviderRotatingBuffers) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const auto data = pattern(500000, 7);
  resproj_test::write_bytes(path, data);
  io::parallel_io_options opt;
  opt.threads = 3;
  opt.task_bytes = 40000;
  // Two small "bounce" buffers per worker, smaller than a task: each task is
  // read in several chunks.
  std::vector<std::vector<unsigned char>> bufs(2 * 3, std::vector<unsigned char>(7000));
  std::vector<unsigned> turn(3, 0);
  std::atomic<int> provided{0};
  opt.buffer_provider = [&](unsigned w) {
    provided.fetch_add(1);
    auto &b = bufs[2 * w + (turn[w]++ & 1)];
    return resproj::span<unsigned char>(b.data(), b.size());
  };
  std::vector<unsigned char> out(data.size());
  io::read_range(
      path, 0, data.size(),
      [&](unsigned w, std::uint64_t pos, const void *p, std::size_t n) {
        EXPECT_LE(n, 7000u);
        const auto *c = static_cast<const unsigned char *>(p);
        EXPECT_TRUE(c == bufs[2 * w].data() || c == bufs[2 * w + 1].data());
        std::memcpy(out.data() + pos, p, n);
      },
      opt);
  EXPECT_EQ(out, data);
  EXPECT_GE(provided.load(), int(data.size() / 7000));

  opt.buffer_provider = [](unsigned) { return resproj::span<unsigned char>(); };
  EXPECT_THROW(read_with(path, 0, 100, opt), resproj::invalid_argument);
}

TEST(ParallelRead, OptionsAndDefaultThreads) {
  io::parallel_io_options opt;
  opt.task_bytes = 0;
  EXPECT_THROW(io::effective_io_threads(opt, 10), resproj::invalid_argument);
  opt.task_bytes = 10;
  opt.threads = 8;
  EXPECT_EQ(io::effective_io_threads(opt, 25), 3u); // 3 tasks
  EXPECT_EQ(io::effective_io_threads(opt, 1000), 8u);

  const char *old = std::getenv("RESPROJ_IO_THREADS");
  const std::string saved = old ? old : "";
  ::setenv("RESPROJ_IO_THREADS", "5", 1);
  EXPECT_EQ(io::default_io_threads(), 5u);
  ::setenv("RESPROJ_IO_THREADS", "junk", 1);
  const unsigned fallback = io::default_io_threads();
  EXPECT_GE(fallback, 1u);
  EXPECT_LE(fallback, 8u);
  ::setenv("RESPROJ_IO_THREADS", "0", 1);
  EXPECT_EQ(io::default_io_threads(), fallback);
  if (old)
    ::setenv("RESPROJ_IO_THREADS", saved.c_str(), 1);
  else
    ::unsetenv("RESPROJ_IO_THREADS");
}

TEST(ParallelRead, ThreadCountTextAndTaskCount) {
  EXPECT_EQ(io::parse_io_threads("1"), 1u);
  EXPECT_EQ(io::parse_io_threads("16"), 16u);
  EXPECT_EQ(io::parse_io_threads("1024"), 1024u);
  for (const char *bad :
       {"", "0", "1025", "99999999999999999999", "-3", "+3", " 4", "4 ", "4x", "0x10"})
    EXPECT_EQ(io::parse_io_threads(bad), 0u) << bad;
  EXPECT_EQ(io::parse_io_threads(nullptr), 0u);

  EXPECT_EQ(io::io_task_count(0, 7), 0u);
  EXPECT_EQ(io::io_task_count(1, 7), 1u);
  EXPECT_EQ(io::io_task_count(7, 7), 1u);
  EXPECT_EQ(io::io_task_count(8, 7), 2u);
  EXPECT_EQ(io::io_task_count(~std::uint64_t(0), std::uint64_t(1) << 32), std::uint64_t(1)
                                                                              << 32);
  EXPECT_THROW(io::io_task_count(5, 0), resproj::invalid_argument);
}

TEST(ParallelRead, OverflowingRangeIsInvalidArgument) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  resproj_test::write_bytes(path, pattern(10));
  EXPECT_THROW(io::read_range(path, ~std::uint64_t(0) - 5, 10,
                              [](unsigned, std::uint64_t, const void *, std::size_t) {}),
               resproj::invalid_argument);
}

TEST(ParallelWrite, RoundTripForThreadCounts) {
  TempDir dir;
  const auto data = pattern(777777, 8);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    const std::string path = dir.file("out" + std::to_string(threads) + ".bin");
    io::parallel_io_options opt;
    opt.threads = threads;
    opt.task_bytes = 65536;
    io::write_range(
        path, 0, data.size(),
        [&](unsigned, std::uint64_t pos, void *buf, std::size_t n) {
          std::memcpy(buf, data.data() + pos, n);
        },
        opt, true);
    EXPECT_EQ(resproj_test::read_byte_vector(path), data) << threads;
  }
}

TEST(ParallelWrite, AtAnOffsetKeepsOtherBytes) {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  auto data = pattern(10000, 9);
  resproj_test::write_bytes(path, data);
  const auto patch = pattern(3000, 10);
  io::parallel_io_options opt;
  opt.threads = 3;
  opt.task_bytes = 512;
  io::write_range(
      path, 2500, patch.size(),
      [&](unsigned, std::uint64_t pos, void *buf, std::size_t n) {
        std::memcpy(buf, patch.data() + (pos - 2500), n);
      },
      opt);
  std::copy(patch.begin(), patch.end(), data.begin() + 2500);
  EXPECT_EQ(resproj_test::read_byte_vector(path), data);
  // Zero bytes: the file is opened (and created) but not changed.
  io::write_range(path, 0, 0, [](unsigned, std::uint64_t, void *, std::size_t) {});
  EXPECT_EQ(resproj_test::read_byte_vector(path), data);
  // A directory cannot be written.
  EXPECT_THROW(io::write_range(dir.path(), 0, 1,
                               [](unsigned, std::uint64_t, void *, std::size_t) {}),
               resproj::io_error);
}

TEST(IoWorkerPool, RunsEveryIndexOnceAndWorkerZeroOnTheCaller) {
  io::io_worker_pool pool;
  EXPECT_EQ(pool.threads(), 0u);
  // Growing, shrinking and repeated sizes: each index exactly once per run.
  for (unsigned n : {1u, 4u, 2u, 7u, 7u, 3u, 1u, 5u}) {
    std::vector<std::atomic<int>> hits(n);
    std::thread::id zero_thread;
    std::mutex m;
    std::set<std::thread::id> ids;
    auto fn = [&](unsigned w) {
      ASSERT_LT(w, n);
      hits[w].fetch_add(1);
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
      if (w == 0)
        zero_thread = std::this_thread::get_id();
    };
    pool.run(n, fn);
    for (unsigned w = 0; w < n; ++w)
      EXPECT_EQ(hits[w].load(), 1) << "n " << n << " worker " << w;
    EXPECT_EQ(zero_thread, std::this_thread::get_id());
    EXPECT_EQ(ids.size(), std::size_t(n)) << "distinct threads for n " << n;
  }
  EXPECT_EQ(pool.threads(), 6u); // the largest n - 1, kept between runs
}

TEST(IoWorkerPool, ThreadsAreReusedAndRunWaitsForAll) {
  io::io_worker_pool pool;
  std::set<std::thread::id> first, second;
  std::mutex m;
  std::atomic<int> finished{0};
  auto record = [&](std::set<std::thread::id> &into) {
    return [&](unsigned w) {
      if (w == 3) // a slow worker: run must still wait for it
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      {
        std::lock_guard<std::mutex> lock(m);
        into.insert(std::this_thread::get_id());
      }
      finished.fetch_add(1);
    };
  };
  auto a = record(first);
  pool.run(4, a);
  EXPECT_EQ(finished.load(), 4);
  auto b = record(second);
  pool.run(4, b);
  EXPECT_EQ(finished.load(), 8);
  EXPECT_EQ(first, second);
}

TEST(IoWorkerPool, ConcurrentCallersAreSerialised) {
  io::io_worker_pool pool;
  std::atomic<int> inside{0};
  std::atomic<int> overlap{0};
  auto caller = [&](unsigned n) {
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      auto fn = [&](unsigned w) {
        if (w == 0 && inside.fetch_add(1) != 0)
          overlap.fetch_add(1);
        hits[w].fetch_add(1);
        if (w == 0)
          inside.fetch_sub(1);
      };
      pool.run(n, fn);
      for (unsigned w = 0; w < n; ++w)
        ASSERT_EQ(hits[w].load(), 1);
    }
  };
  std::thread a(caller, 3u), b(caller, 5u);
  a.join();
  b.join();
  EXPECT_EQ(overlap.load(), 0);
  io::io_worker_pool unused; // destroyed without ever running
}

TEST(IoWorkerPool, ReserveStartsThreadsBeforeTheFirstRun) {
  resproj::thread_pool pool(3);
  EXPECT_EQ(pool.threads(), 3u);
  std::atomic<int> calls{0};
  pool.run(4, [&](unsigned) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 4);
  EXPECT_EQ(pool.threads(), 3u); // no thread added
  pool.reserve(2);
  EXPECT_EQ(pool.threads(), 3u); // never fewer
  pool.reserve(5);
  EXPECT_EQ(pool.threads(), 5u);
}

TEST(IoWorkerPool, ExceptionsAreRethrownAfterEveryWorkerReturned) {
  io::io_worker_pool pool;
  for (unsigned thrower : {0u, 2u}) {
    std::atomic<int> finished{0};
    auto fn = [&](unsigned w) {
      if (w == thrower)
        throw std::runtime_error("worker " + std::to_string(w));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      finished.fetch_add(1);
    };
    try {
      pool.run(4, fn);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error &e) {
      EXPECT_EQ(std::string(e.what()), "worker " + std::to_string(thrower));
    }
    EXPECT_EQ(finished.load(), 3) << "run returned before the other workers";
  }
  // The pool keeps working.
  std::atomic<int> calls{0};
  pool.run(4, [&](unsigned) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 4);
}

TEST(PositionalFile, ReadsWritesAndChecksRanges) {
  TempDir dir;
  const std::string path = dir.file("pos.bin");
  const auto data = pattern(10000, 11);
  {
    const auto f = io::positional_file::open_write(path, true);
    f.pwrite_exact(path, data.data() + 4000, 6000, 4000);
    f.pwrite_exact(path, data.data(), 4000, 0);
  }
  EXPECT_EQ(resproj_test::read_byte_vector(path), data);
  io::positional_file f = io::positional_file::open_read_range(path, 100, 9900);
  std::vector<unsigned char> got(9900);
  f.pread_exact(path, got.data(), got.size(), 100);
  EXPECT_EQ(got, std::vector<unsigned char>(data.begin() + 100, data.end()));
  const io::positional_file moved = std::move(f);
  EXPECT_GE(moved.fd(), 0);
  EXPECT_EQ(f.fd(), -1);
  expect_io_error([&] { (void)io::positional_file::open_read_range(path, 9000, 1001); },
                  {path, "end of file at offset 10000"});
  expect_io_error([&] { moved.pread_exact(path, got.data(), 2, 9999); },
                  {path, "unexpected end of file"});
  expect_io_error([&] { (void)io::positional_file::open_read_range(dir.path(), 0, 0); },
                  {dir.path(), "directory"});
  EXPECT_THROW(io::check_file_range(~std::uint64_t(0), 1), resproj::invalid_argument);
  io::check_file_range(0, 0);
}

TEST(ParallelRead, PersistentPoolGivesIdenticalBytesAndSurvivesErrors) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  const std::size_t size = 700001;
  const auto data = pattern(size, 9);
  resproj_test::write_bytes(path, data);
  io::io_worker_pool pool;
  for (unsigned threads : {1u, 3u, 8u, 2u}) {
    io::parallel_io_options opt;
    opt.threads = threads;
    opt.task_bytes = 65536;
    opt.pool = &pool;
    EXPECT_EQ(read_with(path, 0, size, opt), data) << threads;
    EXPECT_EQ(read_with(path, 1234, size - 1234, opt),
              std::vector<unsigned char>(data.begin() + 1234, data.end()))
        << threads;
  }
  // An error inside a pooled run is reported; the pool keeps working.
  io::parallel_io_options opt;
  opt.threads = 4;
  opt.task_bytes = 4096;
  opt.pool = &pool;
  EXPECT_THROW(io::read_range(
                   path, 0, size,
                   [&](unsigned, std::uint64_t pos, const void *, std::size_t) {
                     if (pos == 4096 * 3)
                       throw std::logic_error("sink failed");
                   },
                   opt),
               std::logic_error);
  EXPECT_EQ(read_with(path, 0, size, opt), data);
  // Writes through the pool.
  const std::string out = dir.file("out.bin");
  io::write_range(
      out, 0, size,
      [&](unsigned, std::uint64_t pos, void *buf, std::size_t n) {
        std::memcpy(buf, data.data() + pos, n);
      },
      opt, true);
  EXPECT_EQ(resproj_test::read_byte_vector(out), data);
}

TEST(ParallelRead, RunParallelTasksCoversEachTaskOnce) {
  io::io_worker_pool pool;
  for (io::io_worker_pool *p : {static_cast<io::io_worker_pool *>(nullptr), &pool})
    for (unsigned workers : {1u, 2u, 5u}) {
      const std::uint64_t tasks = 1000;
      std::vector<std::atomic<int>> hits(tasks);
      auto task = [&](unsigned w, std::uint64_t t, const std::atomic<bool> &) {
        EXPECT_LT(w, workers);
        hits[t].fetch_add(1);
      };
      resproj::run_parallel_tasks(tasks, workers, p, task);
      for (std::uint64_t t = 0; t < tasks; ++t)
        ASSERT_EQ(hits[t].load(), 1) << t << (p ? " pooled" : " per call");
    }
}

TEST(ParallelRead, FifoIsRejectedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.bin");
  resproj_test::make_fifo(fifo);
  resproj_test::expect_prompt_io_error(
      fifo,
      [&] {
        io::read_range(fifo, 0, 0,
                       [](unsigned, std::uint64_t, const void *, std::size_t) {});
      },
      {fifo, "not a regular file"});
  std::uint64_t size = 0;
  resproj_test::expect_prompt_io_error(
      fifo, [&] { (void)io::positional_file::open_read(fifo, size); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo,
      [&] {
        io::write_range(fifo, 0, 4,
                        [](unsigned, std::uint64_t, void *buf, std::size_t n) {
                          std::memset(buf, 1, n);
                        });
      },
      {fifo, "not a regular file"});
  EXPECT_TRUE(resproj_test::is_fifo(fifo));
}

} // namespace
