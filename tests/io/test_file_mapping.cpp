// io::plan_mapped_range / io::file_mapping: the host side of the page-cache
// DMA read path of gpu::device_file_io. The chunks of a plan tile the range
// exactly (checked against a real mapping of a file, reassembled with
// memcpy the way the device path copies), registrations are whole pages
// inside the mapping, and bad arguments are rejected.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/expect.hpp"
#include "common/files.hpp"
#include "resproj/io/file_mapping.hpp"
#include "resproj/io/positional_file.hpp"

namespace {

namespace io = resproj::io;
using resproj_test::expect_invalid;

std::string pattern(std::size_t n, unsigned seed) {
  std::string v(n, '\0');
  std::uint32_t x = seed * 2654435761u + 7u;
  for (auto &b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<char>(x >> 24);
  }
  return v;
}

/// Checks the invariants of a plan for [offset, offset + bytes).
void check_plan(const io::mapped_range_plan &p, std::uint64_t offset,
                std::uint64_t bytes) {
  ASSERT_EQ(p.map_offset % p.page, 0u);
  ASSERT_EQ(p.map_offset + p.lead, offset);
  ASSERT_LT(p.lead, p.page);
  ASSERT_EQ(p.map_length, p.lead + bytes);
  ASSERT_EQ(p.chunk_bytes % p.page, 0u);
  const std::size_t mapped_pages_end = (p.map_length + p.page - 1) / p.page * p.page;
  std::uint64_t next_dst = 0;
  for (std::uint64_t t = 0; t < p.chunks; ++t) {
    const io::mapped_chunk c = p.chunk(t);
    EXPECT_EQ(c.map_begin % p.page, 0u) << t;
    EXPECT_EQ(c.register_bytes % p.page, 0u) << t;
    EXPECT_GT(c.register_bytes, 0u) << t;
    EXPECT_LE(c.map_begin + c.register_bytes, mapped_pages_end) << t;
    EXPECT_GE(c.copy_from, c.map_begin) << t;
    EXPECT_LE(c.copy_from + c.copy_bytes, c.map_begin + c.register_bytes) << t;
    EXPECT_GT(c.copy_bytes, 0u) << t;
    EXPECT_EQ(c.dst_offset, next_dst) << t; // contiguous, in order
    EXPECT_EQ(c.copy_from, c.dst_offset + p.lead) << t;
    next_dst += c.copy_bytes;
  }
  EXPECT_EQ(next_dst, bytes);
}

TEST(FileMapping, PlansTileTheRangeForOffsetsAndChunkSizes) {
  for (std::size_t page : {std::size_t(4096), std::size_t(65536)})
    for (std::uint64_t offset : {0ull, 1ull, 4095ull, 4096ull, 12345ull, 65537ull})
      for (std::uint64_t bytes : {1ull, 4095ull, 4096ull, 100000ull, 1000003ull})
        for (std::size_t chunk : {std::size_t(1), std::size_t(4096), std::size_t(10000),
                                  std::size_t(1) << 20}) {
          const auto p = io::plan_mapped_range(offset, bytes, page, chunk);
          EXPECT_GE(p.chunk_bytes, chunk);
          EXPECT_LT(p.chunk_bytes, chunk + page);
          check_plan(p, offset, bytes);
          if (HasFatalFailure() || HasFailure()) {
            ADD_FAILURE() << "page " << page << " offset " << offset << " bytes " << bytes
                          << " chunk " << chunk;
            return;
          }
        }
  const auto empty = io::plan_mapped_range(5000, 0, 4096, 1 << 20);
  EXPECT_EQ(empty.chunks, 0u);
}

TEST(FileMapping, ChunksOfARealMappingReassembleTheFileRange) {
  resproj_test::temp_dir dir;
  const std::string path = dir.file("data.bin");
  const std::string data = pattern(1000003, 1);
  resproj_test::write_bytes(path, data);
  const std::size_t page = io::host_page_size();
  std::uint64_t size = 0;
  const auto file = io::positional_file::open_read(path, size);
  ASSERT_EQ(size, data.size());
  for (std::uint64_t offset : {0ull, 1ull, 4096ull, 12345ull, 999000ull})
    for (std::size_t chunk : {page, std::size_t(70000), std::size_t(1) << 20}) {
      const std::uint64_t bytes = data.size() - offset - (offset == 1 ? 77 : 0);
      const auto plan = io::plan_mapped_range(offset, bytes, page, chunk);
      std::string problem;
      const io::file_mapping map = io::file_mapping::map(file.fd(), plan, problem);
      ASSERT_FALSE(map.empty()) << problem;
      EXPECT_TRUE(problem.empty());
      EXPECT_EQ(map.size(), plan.map_length);
      std::string out(std::size_t(bytes), '\0');
      std::string per_chunk(std::size_t(bytes), '\0');
      for (std::uint64_t t = 0; t < plan.chunks; ++t) {
        const auto c = plan.chunk(t);
        std::memcpy(&out[std::size_t(c.dst_offset)], map.data() + c.copy_from,
                    c.copy_bytes);
        // The same chunk through its own mapping (as the device path does).
        const io::file_mapping cm =
            io::file_mapping::map_chunk(file.fd(), plan, c, problem);
        ASSERT_FALSE(cm.empty()) << problem;
        ASSERT_EQ(cm.size(), c.register_bytes);
        std::memcpy(&per_chunk[std::size_t(c.dst_offset)],
                    cm.data() + (c.copy_from - c.map_begin), c.copy_bytes);
      }
      ASSERT_EQ(out, data.substr(std::size_t(offset), std::size_t(bytes)))
          << "offset " << offset << " chunk " << chunk;
      ASSERT_EQ(per_chunk, out) << "offset " << offset << " chunk " << chunk;
    }
}

TEST(FileMapping, SeesLaterWritesAndReportsMmapFailure) {
  resproj_test::temp_dir dir;
  const std::string path = dir.file("live.bin");
  resproj_test::write_bytes(path, pattern(50000, 2));
  std::uint64_t size = 0;
  const auto file = io::positional_file::open_read(path, size);
  const auto plan = io::plan_mapped_range(100, 40000, io::host_page_size(), 8192);
  std::string problem;
  io::file_mapping map = io::file_mapping::map(file.fd(), plan, problem);
  ASSERT_FALSE(map.empty()) << problem;
  const std::string fresh = pattern(50000, 3);
  resproj_test::write_bytes(path, fresh); // same inode, rewritten in place
  EXPECT_EQ(std::memcmp(map.data() + plan.lead, fresh.data() + 100, 40000), 0);
  // Moving keeps one owner.
  io::file_mapping moved = std::move(map);
  EXPECT_TRUE(map.empty());
  EXPECT_FALSE(moved.empty());

  std::string why;
  const io::file_mapping bad = io::file_mapping::map(-1, plan, why);
  EXPECT_TRUE(bad.empty());
  EXPECT_NE(why.find("mmap failed"), std::string::npos) << why;
  why.clear();
  EXPECT_TRUE(io::file_mapping::map_chunk(-1, plan, plan.chunk(0), why).empty());
  EXPECT_NE(why.find("mmap failed"), std::string::npos) << why;
  std::string none;
  EXPECT_TRUE(
      io::file_mapping::map(file.fd(), io::plan_mapped_range(0, 0, 4096, 4096), none)
          .empty());
  EXPECT_TRUE(none.empty());
}

TEST(FileMapping, BadArgumentsAreRejected) {
  expect_invalid([] { io::plan_mapped_range(0, 10, 3000, 4096); }, "page");
  expect_invalid([] { io::plan_mapped_range(0, 10, 0, 4096); }, "page");
  expect_invalid([] { io::plan_mapped_range(0, 10, 4096, 0); }, "chunk_bytes");
  const std::uint64_t huge = std::uint64_t(std::numeric_limits<off_t>::max());
  expect_invalid([&] { io::plan_mapped_range(huge, 2, 4096, 4096); }, "offset + bytes");
  EXPECT_GT(io::host_page_size(), 0u);
  EXPECT_EQ(io::host_page_size() & (io::host_page_size() - 1), 0u);
}

} // namespace
