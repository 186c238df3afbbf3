/// @file
/// @brief Helpers shared by the file tests: a per-test temporary directory,
/// whole-file byte access, and checks for io_error / invalid_argument.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "resproj/core/errors.hpp"

namespace resproj_test {

namespace fs = std::filesystem;

/// A fresh directory under the system temporary folder, removed afterwards.
class temp_dir {
public:
  temp_dir() {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string name =
        std::string("resproj_test_") + (info ? info->name() : "x") + "_" +
        std::to_string(rd()) + "_" + std::to_string(counter++) + "_" +
        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    path_ = fs::temp_directory_path() / name;
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  std::string dir() const { return path_.string(); }
  std::string path() const { return path_.string(); }

private:
  fs::path path_;
};

inline void write_bytes(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good());
}

inline std::string read_bytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Runs f, expects io_error whose message contains every one of `parts`.
inline void expect_io_error(const std::function<void()> &f,
                            std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no io_error thrown";
  } catch (const resproj::io_error &e) {
    const std::string what = e.what();
    for (const auto &p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// Writes `bytes` to `path` (replacing it).
inline void write_bytes(const std::string &path,
                        const std::vector<unsigned char> &bytes) {
  write_bytes(path, std::string(bytes.begin(), bytes.end()));
}

/// The bytes of `path` (empty when it cannot be opened).
inline std::vector<unsigned char> read_byte_vector(const std::string &path) {
  const std::string s = read_bytes(path);
  return std::vector<unsigned char>(s.begin(), s.end());
}

} // namespace resproj_test
