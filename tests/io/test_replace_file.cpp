// Tests of io/replace_file.hpp: a file replaced through a temporary name
// beside it is either wholly new or untouched, and no temporary file stays
// behind, whatever the writer does.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "common/files.hpp"
#include "io/special_files.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/replace_file.hpp"

namespace io = resproj::io;
using resproj_test::expect_io_error;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

TEST(ReplaceFile, WriterSeesAnEmptyTemporaryBesideTheTarget) {
  temp_dir dir;
  const std::string path = dir.file("a.bin");
  write_bytes(path, "old contents");
  std::string seen;
  io::replace_file_via(path, [&](const std::string &tmp) {
    seen = tmp;
    EXPECT_EQ(read_bytes(tmp), "");
    EXPECT_NE(tmp, path);
    write_bytes(tmp, "new");
    EXPECT_EQ(read_bytes(path), "old contents"); // not replaced yet
  });
  EXPECT_EQ(std::filesystem::path(seen).parent_path(),
            std::filesystem::path(path).parent_path());
  EXPECT_EQ(read_bytes(path), "new");
  EXPECT_EQ(resproj_test::dir_entries(dir.dir()), std::set<std::string>{"a.bin"});
}

TEST(ReplaceFile, FailedWriterLeavesTheOldFileAndNoTemporary) {
  temp_dir dir;
  const std::string path = dir.file("a.bin");
  write_bytes(path, "old contents");
  EXPECT_THROW(io::replace_file_via(path,
                                    [&](const std::string &tmp) {
                                      write_bytes(tmp, "half writ");
                                      throw resproj::io_error("disk full");
                                    }),
               resproj::io_error);
  EXPECT_EQ(read_bytes(path), "old contents");
  EXPECT_EQ(resproj_test::dir_entries(dir.dir()), std::set<std::string>{"a.bin"});
  // A new file is not created either.
  const std::string fresh = dir.file("b.bin");
  EXPECT_THROW(
      io::replace_file_via(
          fresh, [](const std::string &) { throw std::runtime_error("writer failed"); }),
      std::runtime_error);
  EXPECT_EQ(resproj_test::dir_entries(dir.dir()), std::set<std::string>{"a.bin"});
}

TEST(ReplaceFile, RejectsDirectoriesAndEmptyPathsBeforeWriting) {
  temp_dir dir;
  bool called = false;
  expect_io_error(
      [&] {
        io::replace_file_via(dir.dir(), [&](const std::string &) { called = true; });
      },
      {"directory"});
  expect_io_error(
      [&] { io::replace_file_via("", [&](const std::string &) { called = true; }); },
      {"empty path"});
  EXPECT_FALSE(called);
  EXPECT_TRUE(resproj_test::dir_entries(dir.dir()).empty());
}
