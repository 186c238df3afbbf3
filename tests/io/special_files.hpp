/// @file
/// @brief Helpers for the file tests on awkward targets: FIFOs (a call that
/// blocks on one is reported as a failure and then released), a file-size
/// limit that makes a write fail part-way, and directory listings.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resproj/core/errors.hpp"

namespace resproj_test {

/// Creates a FIFO (named pipe) at `path`.
inline void make_fifo(const std::string &path) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path << ": " << std::strerror(errno);
}

/// `true` if `path` is (still) a FIFO.
inline bool is_fifo(const std::string &path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

/// Runs `f` on another thread and expects it to throw io_error whose message
/// holds every one of `parts` within a few seconds. A call still blocked on
/// the FIFO `fifo` after that is a failure; the test then opens the FIFO's
/// ends (non-blocking) until the call returns, so that it can finish.
inline void expect_prompt_io_error(const std::string &fifo, std::function<void()> f,
                                   std::initializer_list<std::string> parts) {
  auto result = std::async(std::launch::async, [f]() -> std::string {
    try {
      f();
      return "no exception";
    } catch (const resproj::io_error &e) {
      return std::string("io_error: ") + e.what();
    } catch (const std::exception &e) {
      return std::string("other exception: ") + e.what();
    }
  });
  std::vector<int> fds;
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "still blocked on the FIFO " << fifo << " after 5 s";
    while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      for (int flags : {O_RDONLY | O_NONBLOCK, O_WRONLY | O_NONBLOCK}) {
        const int fd = ::open(fifo.c_str(), flags | O_CLOEXEC);
        if (fd >= 0)
          fds.push_back(fd);
      }
    }
  }
  const std::string what = result.get();
  for (int fd : fds)
    ::close(fd);
  EXPECT_EQ(what.rfind("io_error: ", 0), 0u) << what;
  for (const auto &p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
}

/// While alive, writes that would make a file larger than `bytes` fail with
/// EFBIG (RLIMIT_FSIZE, with SIGXFSZ ignored); restores both afterwards.
class file_size_limit {
public:
  explicit file_size_limit(rlim_t bytes) {
    ok_ = ::getrlimit(RLIMIT_FSIZE, &old_) == 0;
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old_;
    r.rlim_cur = bytes;
    ok_ = ok_ && ::setrlimit(RLIMIT_FSIZE, &r) == 0;
    EXPECT_TRUE(ok_) << "cannot set RLIMIT_FSIZE: " << std::strerror(errno);
  }
  ~file_size_limit() {
    if (ok_)
      ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  file_size_limit(const file_size_limit &) = delete;
  file_size_limit &operator=(const file_size_limit &) = delete;

private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool ok_ = false;
};

/// Names of the entries of the directory `dir`.
inline std::set<std::string> dir_entries(const std::string &dir) {
  std::set<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

/// Permission bits of `path` (following links).
inline unsigned file_mode(const std::string &path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return unsigned(st.st_mode & 07777);
}

} // namespace resproj_test
