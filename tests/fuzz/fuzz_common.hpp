// Shared helpers of the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp).
//
// The readers take file paths, so each harness writes its input to one
// temporary file per process ($TMPDIR or /tmp, named after the harness and
// the pid), reused across iterations and removed at exit.
//
// `attempt(f)` runs one call and classifies its outcome: returned normally,
// threw resproj::io_error, or threw resproj::invalid_argument (the expected
// ways to reject bad input). Any other exception is a bug: it is reported
// with its type and message and the process aborts, so that libFuzzer
// saves the input. FUZZ_CHECK aborts likewise when an invariant of the API
// contract does not hold (it does not depend on NDEBUG).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>
#include <vector>

#include <unistd.h>

#include "resproj/core/errors.hpp"

namespace fuzz {

#define FUZZ_CHECK(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__,       \
                   #cond);                                                               \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

enum class outcome { ok, io_error, invalid_argument };

inline const char *outcome_name(outcome o) {
  switch (o) {
  case outcome::ok:
    return "ok";
  case outcome::io_error:
    return "io_error";
  case outcome::invalid_argument:
    return "invalid_argument";
  }
  return "?";
}

/// true when RESPROJ_FUZZ_VERBOSE is set (to anything but "" or "0"): every
/// `attempt` then prints its outcome and message, to see what a seed file
/// exercises (`RESPROJ_FUZZ_VERBOSE=1 fuzz_npy file.npy`).
inline bool verbose() {
  static const bool v = [] {
    const char *e = std::getenv("RESPROJ_FUZZ_VERBOSE");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return v;
}

/// Runs `f()`; returns how it ended. Aborts on any exception other than
/// resproj::io_error and resproj::invalid_argument.
template <class F> outcome attempt(const char *what, F &&f) {
  try {
    f();
    if (verbose())
      std::fprintf(stderr, "  %s: ok\n", what);
    return outcome::ok;
  } catch (const resproj::io_error &e) {
    if (verbose())
      std::fprintf(stderr, "  %s: io_error: %s\n", what, e.what());
    return outcome::io_error;
  } catch (const resproj::invalid_argument &e) {
    if (verbose())
      std::fprintf(stderr, "  %s: invalid_argument: %s\n", what, e.what());
    return outcome::invalid_argument;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: unexpected exception %s: %s\n", what, typeid(e).name(),
                 e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "%s: unexpected exception of a non-std type\n", what);
    std::abort();
  }
}

namespace detail {
inline std::string &temp_path_storage() {
  static std::string path;
  return path;
}
inline void remove_temp_file() {
  const std::string &p = temp_path_storage();
  if (!p.empty())
    std::remove(p.c_str());
}
} // namespace detail

/// The per-process temporary file of harness `name`.
inline const std::string &temp_path(const char *name) {
  std::string &p = detail::temp_path_storage();
  if (p.empty()) {
    const char *dir = std::getenv("TMPDIR");
    if (dir == nullptr || *dir == '\0')
      dir = "/tmp";
    p = std::string(dir) + "/resproj_fuzz_" + name + "_" + std::to_string(::getpid());
    std::atexit(detail::remove_temp_file);
  }
  return p;
}

/// Writes `data[0, size)` to the temporary file of harness `name` (replacing
/// its contents) and returns its path. Aborts if the file cannot be written.
inline const std::string &input_file(const char *name, const std::uint8_t *data,
                                     std::size_t size) {
  const std::string &path = temp_path(name);
  std::FILE *f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot create %s", path.c_str());
  const std::size_t put = size == 0 ? 0 : std::fwrite(data, 1, size, f);
  const int closed = std::fclose(f);
  FUZZ_CHECK(put == size && closed == 0, "cannot write %s", path.c_str());
  return path;
}

/// Byte pattern that fills destinations before a call, to check that a
/// rejected call leaves them untouched.
inline constexpr unsigned char sentinel = 0xA5;

template <class T> std::vector<T> sentinel_vector(std::size_t n) {
  std::vector<T> v(n);
  if (n != 0)
    std::memset(static_cast<void *>(v.data()), sentinel, n * sizeof(T));
  return v;
}

/// true if every byte of `p[0, bytes)` is the sentinel.
inline bool untouched(const void *p, std::size_t bytes) {
  const auto *b = static_cast<const unsigned char *>(p);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != sentinel)
      return false;
  return true;
}

} // namespace fuzz
