// Tests of io/listmode_file.hpp: header-less files of 10-byte list-mode
// records; round trips, byte layout, ranges, append, and strict errors
// that leave the destination untouched.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "io/special_files.hpp"
#include "resproj/io/listmode_file.hpp"

namespace io = resproj::io;
namespace fs = std::filesystem;
using resproj::span;
using resproj::scanner::listmode_event;

namespace {

using resproj_test::expect_invalid;
using resproj_test::expect_io_error;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

std::vector<listmode_event> make_events(std::size_t n, std::uint32_t seed = 1) {
  std::vector<listmode_event> ev(n);
  for (std::size_t i = 0; i < n; ++i)
    ev[i] = listmode_event::make(std::uint32_t(i * 7919u + seed),
                                 std::uint32_t(0xffffffffu - i * 31u),
                                 std::int16_t(int(i % 60) - 30));
  return ev;
}

bool same(const listmode_event &a, const listmode_event &b) {
  return std::memcmp(a.bytes, b.bytes, 10) == 0;
}

void expect_same(const std::vector<listmode_event> &a,
                 const std::vector<listmode_event> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(same(a[i], b[i])) << "event " << i;
}

std::vector<listmode_event> sentinel(std::size_t n) {
  return std::vector<listmode_event>(n, listmode_event::make(42, 42, 42));
}

span<const listmode_event> cspan(const std::vector<listmode_event> &v) {
  return span<const listmode_event>(v.data(), v.size());
}

} // namespace

TEST(IoListmodeFile, RoundTripAndByteLayout) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(12345)}) {
    const auto ev = make_events(n);
    io::write_listmode_file(path, cspan(ev));
    EXPECT_EQ(io::file_size(path), 10 * n);
    EXPECT_EQ(io::count_listmode_events(path), n);
    expect_same(io::read_listmode_file(path), ev);
  }
  // One event, byte for byte: a = 0x01020304, b = 0xa0b0c0d0, bin = -2.
  const std::vector<listmode_event> one = {
      listmode_event::make(0x01020304u, 0xa0b0c0d0u, std::int16_t(-2))};
  io::write_listmode_file(path, cspan(one));
  EXPECT_EQ(read_bytes(path),
            std::string("\x04\x03\x02\x01\xd0\xc0\xb0\xa0\xfe\xff", 10));
  // And a file written byte for byte reads back as those fields.
  write_bytes(path, std::string("\x0a\0\0\0\x0b\0\0\0\x03\0", 10));
  const auto back = io::read_listmode_file(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].detector_a(), 10u);
  EXPECT_EQ(back[0].detector_b(), 11u);
  EXPECT_EQ(back[0].tof_bin(), 3);
}

TEST(IoListmodeFile, ReadRanges) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  const auto ev = make_events(100);
  io::write_listmode_file(path, cspan(ev));
  auto dst = sentinel(20);
  io::read_listmode_events(path, 37, 10, span<listmode_event>(dst.data(), dst.size()));
  for (std::size_t i = 0; i < 10; ++i)
    EXPECT_TRUE(same(dst[i], ev[37 + i])) << i;
  for (std::size_t i = 10; i < 20; ++i) // beyond count: untouched
    EXPECT_TRUE(same(dst[i], sentinel(1)[0])) << i;
  // The last event, and zero events at the end.
  io::read_listmode_events(path, 99, 1, span<listmode_event>(dst.data(), 1));
  EXPECT_TRUE(same(dst[0], ev[99]));
  io::read_listmode_events(path, 100, 0, span<listmode_event>(nullptr, 0));
  // Ranges in batches cover the file exactly.
  std::vector<listmode_event> all(100);
  for (std::size_t first = 0; first < 100; first += 33) {
    const std::size_t n = first + 33 <= 100 ? 33 : 100 - first;
    io::read_listmode_events(path, first, n, span<listmode_event>(all.data() + first, n));
  }
  expect_same(all, ev);
}

TEST(IoListmodeFile, AppendCreatesAndExtends) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  const auto a = make_events(5, 1), b = make_events(3, 99);
  EXPECT_EQ(io::append_listmode_events(path, cspan(a)), 0u); // creates
  EXPECT_EQ(io::append_listmode_events(path, cspan(b)), 5u);
  EXPECT_EQ(io::append_listmode_events(path, span<const listmode_event>()), 8u);
  auto all = a;
  all.insert(all.end(), b.begin(), b.end());
  expect_same(io::read_listmode_file(path), all);
  // write replaces.
  io::write_listmode_file(path, cspan(b));
  expect_same(io::read_listmode_file(path), b);
}

TEST(IoListmodeFile, SizeNotAMultipleOfTen) {
  temp_dir tmp;
  const std::string path = tmp.file("bad.lm");
  write_bytes(path, std::string(25, '\x01'));
  expect_io_error([&] { (void)io::count_listmode_events(path); },
                  {path, "25 bytes", "multiple of the 10-byte", "offset 20"});
  auto dst = sentinel(2);
  expect_io_error(
      [&] { io::read_listmode_events(path, 0, 2, span<listmode_event>(dst.data(), 2)); },
      {"multiple"});
  expect_same(dst, sentinel(2));
  expect_io_error([&] { (void)io::read_listmode_file(path); }, {"multiple"});
  // Nothing is appended to a damaged file.
  const auto ev = make_events(1);
  expect_io_error([&] { (void)io::append_listmode_events(path, cspan(ev)); },
                  {"multiple"});
  EXPECT_EQ(io::file_size(path), 25u);
  // A 1-byte file too.
  write_bytes(path, "x");
  expect_io_error([&] { (void)io::count_listmode_events(path); }, {"1 bytes"});
}

TEST(IoListmodeFile, RangePastTheEndLeavesDestinationUntouched) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  io::write_listmode_file(path, cspan(make_events(10)));
  auto dst = sentinel(5);
  const span<listmode_event> d(dst.data(), dst.size());
  expect_io_error([&] { io::read_listmode_events(path, 8, 5, d); },
                  {path, "holds 10 events", "[8, 13)", "byte offset 80"});
  expect_io_error([&] { io::read_listmode_events(path, 11, 0, d); }, {"[11, 11)"});
  expect_io_error([&] { io::read_listmode_events(path, ~std::uint64_t(0), 5, d); },
                  {"holds 10 events"});
  expect_same(dst, sentinel(5));
  // Empty file: zero events, any nonzero range fails.
  const std::string empty = tmp.file("empty.lm");
  write_bytes(empty, "");
  EXPECT_EQ(io::count_listmode_events(empty), 0u);
  EXPECT_TRUE(io::read_listmode_file(empty).empty());
  expect_io_error([&] { io::read_listmode_events(empty, 0, 1, d); }, {"holds 0 events"});
  expect_same(dst, sentinel(5));
}

TEST(IoListmodeFile, BadArgumentsMissingPathAndDirectory) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  io::write_listmode_file(path, cspan(make_events(10)));
  auto dst = sentinel(3);
  expect_invalid(
      [&] { io::read_listmode_events(path, 0, 4, span<listmode_event>(dst.data(), 3)); },
      "dst");
  expect_invalid(
      [&] { io::read_listmode_events(path, 0, 4, span<listmode_event>(nullptr, 4)); },
      "dst");
  expect_invalid(
      [&] { io::write_listmode_file(path, span<const listmode_event>(nullptr, 2)); },
      "events");
  EXPECT_EQ(io::count_listmode_events(path), 10u);
  const std::string missing = tmp.file("missing.lm");
  expect_io_error(
      [&] {
        io::read_listmode_events(missing, 0, 3, span<listmode_event>(dst.data(), 3));
      },
      {missing, "does not exist"});
  expect_io_error([&] { (void)io::count_listmode_events(tmp.dir()); }, {"directory"});
  expect_io_error(
      [&] {
        io::read_listmode_events(tmp.dir(), 0, 1, span<listmode_event>(dst.data(), 1));
      },
      {"directory"});
  expect_same(dst, sentinel(3));
  const auto ev = make_events(2);
  expect_io_error([&] { io::write_listmode_file(tmp.dir(), cspan(ev)); }, {"directory"});
  expect_io_error([&] { (void)io::append_listmode_events(tmp.dir(), cspan(ev)); },
                  {"directory"});
  expect_io_error([&] { io::write_listmode_file(tmp.file("no/dir/x.lm"), cspan(ev)); },
                  {"cannot open for writing"});
}

TEST(IoListmodeFile, FifoIsRejectedWithoutBlocking) {
  temp_dir tmp;
  const std::string fifo = tmp.file("pipe.lm");
  resproj_test::make_fifo(fifo);
  const auto ev = make_events(3);
  auto dst = sentinel(3);
  resproj_test::expect_prompt_io_error(
      fifo,
      [&] { io::read_listmode_events(fifo, 0, 3, span<listmode_event>(dst.data(), 3)); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(fifo,
                                       [&] { io::write_listmode_file(fifo, cspan(ev)); },
                                       {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo, [&] { (void)io::append_listmode_events(fifo, cspan(ev)); },
      {fifo, "not a regular file"});
  expect_same(dst, sentinel(3));
  EXPECT_TRUE(resproj_test::is_fifo(fifo));
}

TEST(IoListmodeFile, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  temp_dir tmp;
  const std::string path = tmp.file("events.lm");
  io::write_listmode_file(path, cspan(make_events(10)));
  const std::string before = read_bytes(path);
  const auto many = make_events(1000, 7);
  {
    resproj_test::file_size_limit limit(4096); // the write fails part-way
    expect_io_error([&] { io::write_listmode_file(path, cspan(many)); },
                    {path, "failed"});
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"events.lm"});
  io::write_listmode_file(path, cspan(many));
  expect_same(io::read_listmode_file(path), many);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"events.lm"});
}
