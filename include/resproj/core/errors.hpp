/// @file
/// @brief Exception hierarchy. Every message names what was wrong.
#pragma once

#include <stdexcept>
#include <string>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Base of every exception thrown by resproj.
class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A caller-supplied argument was rejected before anything was written.
/// The message has the form "resproj: <argument>: <problem>".
class invalid_argument : public error {
public:
  invalid_argument(const std::string &argument, const std::string &problem)
      : error("resproj: " + argument + ": " + problem), argument_(argument) {}
  /// Name of the offending argument (e.g. "geometry.voxel_size[1]").
  const std::string &argument() const noexcept { return argument_; }

private:
  std::string argument_;
};

/// Reading or writing a file failed (missing, truncated, wrong format).
class io_error : public error {
public:
  using error::error;
};

/// A GPU runtime call failed. Defined here so host-only code can catch it;
/// thrown only by `resproj::gpu`. See gpu/error.cuh for the subtypes.
class gpu_error : public error {
public:
  gpu_error(const std::string &what, int code) : error(what), code_(code) {}
  /// The runtime's error code (a `cudaError_t` value).
  int code() const noexcept { return code_; }

private:
  int code_;
};

/// The device ran out of memory. The context is still usable.
class gpu_out_of_memory : public gpu_error {
public:
  using gpu_error::gpu_error;
};

/// A sticky error: the CUDA context is corrupted and the process must
/// restart before the GPU can be used again.
class gpu_fatal_error : public gpu_error {
public:
  using gpu_error::gpu_error;
};

namespace detail {
/// Throws `invalid_argument(argument, problem)`.
[[noreturn]] inline void throw_invalid(const std::string &argument,
                                       const std::string &problem) {
  throw invalid_argument(argument, problem);
}
} // namespace detail

RESPROJ_NAMESPACE_END
