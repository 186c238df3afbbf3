/// @file
/// @brief Helpers of the fault tests: running a pipeline with one call
/// failed, counting open descriptors and the entries of a directory.
#pragma once

#include <gtest/gtest.h>

#include <dirent.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "fault_control.h"
#include "resproj/core/errors.hpp"
#include "resproj/scanner/listmode.hpp"

namespace resproj_fault {

/// Open file descriptors of this process (entries of /proc/self/fd; the
/// descriptor that lists them counts every time, so counts compare).
inline std::size_t open_fds() {
  std::size_t n = 0;
  if (DIR *d = ::opendir("/proc/self/fd")) {
    while (const dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        ++n;
    ::closedir(d);
  }
  return n;
}

/// Names in `dir` (files, temporaries included).
inline std::set<std::string> entries(const std::string &dir) {
  std::set<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (const dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.insert(e->d_name);
    ::closedir(d);
  }
  return names;
}

/// What a run with a fault did.
struct attempt {
  enum kind_t { succeeded, io_error, gpu_error, bad_alloc, other } kind = succeeded;
  std::string what;           ///< the exception's message
  long injected = 0;          ///< faults the interposer injected
  bool out_of_memory = false; ///< gpu_error was gpu_out_of_memory
  bool fatal = false;         ///< gpu_error was gpu_fatal_error
  int code = 0;               ///< gpu_error::code()
};

inline const char *kind_name(attempt::kind_t k) {
  switch (k) {
  case attempt::succeeded:
    return "no exception";
  case attempt::io_error:
    return "resproj::io_error";
  case attempt::gpu_error:
    return "resproj::gpu_error";
  case attempt::bad_alloc:
    return "std::bad_alloc";
  default:
    return "another exception";
  }
}

/// Calls of `family` in one run of `run` without faults.
template <class Run> long count_calls(const char *family, Run &&run) {
  fault_disarm();
  run();
  const long n = fault_calls(family);
  fault_disarm();
  return n;
}

/// Runs `run` with call `nth` of `family` failed with `action`. The
/// exception is caught without allocating while the fault is armed (an
/// armed allocation failure must hit the pipeline, not this code).
template <class Run>
attempt run_with_fault(const char *family, long nth, int action, Run &&run) {
  std::exception_ptr error;
  if (fault_arm(family, nth, action, 1) != 0)
    ADD_FAILURE() << "unknown family " << family;
  try {
    run();
  } catch (...) {
    error = std::current_exception();
  }
  attempt a;
  a.injected = fault_injected();
  fault_disarm();
  if (!error)
    return a;
  try {
    std::rethrow_exception(error);
  } catch (const resproj::io_error &e) {
    a.kind = attempt::io_error;
    a.what = e.what();
  } catch (const resproj::gpu_error &e) {
    a.kind = attempt::gpu_error;
    a.what = e.what();
    a.code = e.code();
    a.out_of_memory = dynamic_cast<const resproj::gpu_out_of_memory *>(&e) != nullptr;
    a.fatal = dynamic_cast<const resproj::gpu_fatal_error *>(&e) != nullptr;
  } catch (const std::bad_alloc &e) {
    a.kind = attempt::bad_alloc;
    a.what = e.what();
  } catch (const std::exception &e) {
    a.kind = attempt::other;
    a.what = e.what();
  } catch (...) {
    a.kind = attempt::other;
    a.what = "(not a std::exception)";
  }
  return a;
}

/// Counts only file calls under `dir` while alive; disarms at the end.
class scope_guard {
public:
  explicit scope_guard(const std::string &dir) { fault_scope(dir.c_str()); }
  ~scope_guard() {
    fault_disarm();
    fault_scope(nullptr);
  }
  scope_guard(const scope_guard &) = delete;
  scope_guard &operator=(const scope_guard &) = delete;
};

/// `n` valid list-mode events of 40 detectors and 5 TOF bins.
inline std::vector<resproj::scanner::listmode_event> some_events(std::size_t n) {
  std::vector<resproj::scanner::listmode_event> e(n);
  for (std::size_t i = 0; i < n; ++i)
    e[i] = resproj::scanner::listmode_event::make(
        std::uint32_t(i % 40), std::uint32_t((i * 7 + 3) % 40), std::int16_t(i % 5));
  return e;
}

} // namespace resproj_fault
