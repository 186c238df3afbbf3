/// @file
/// @brief The GPUDirect Storage path of the device file transfers
/// (`detail::gds_transfer`): the whole range through cuFile, loaded at run
/// time (gpu/detail/cufile.hpp), used when available and allowed
/// (`file_io_options::gds`). It synchronises the caller's stream first.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/detail/cufile.hpp"
#include "resproj/gpu/file_io_options.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Owning plain file descriptor for the GDS path.
struct posix_fd {
  int fd = -1;
  posix_fd() = default;
  posix_fd(const posix_fd &) = delete;
  posix_fd &operator=(const posix_fd &) = delete;
  ~posix_fd() {
    if (fd >= 0)
      ::close(fd);
  }
  /// Opens with O_DIRECT first (what GDS wants), else without.
  bool open(const std::string &path, int flags) {
    fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0)
      fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    return fd >= 0;
  }
};

/// cuFile transfer of all of `[offset, offset + bytes)` of `path` to
/// (`writing`: from) the device memory `dev`, after synchronising `stream`
/// (cuFile is not stream-ordered). A written file is created (mode 0644) if
/// missing and emptied first when `truncate`.
/// @param mode    `gds_mode::automatic` or `gds_mode::require`
/// @param result  filled when the transfer ran; `gds_problem` set when not
/// @return false (with `result.gds_problem`) when GDS cannot be used and
///         `mode` allows the fallback (nothing was transferred).
/// @throws io_error naming the file (and the offset) when GDS is required
///         but cannot be used, or a cuFile call fails (with
///         `gds_mode::automatic`, a failed first call falls back instead).
inline bool gds_transfer(const std::string &path, std::uint64_t offset,
                         unsigned char *dev, std::uint64_t bytes, stream_ref stream,
                         bool writing, bool truncate, gds_mode mode,
                         file_io_result &result) {
  namespace cf = cufile;
  std::string problem;
  const cf::api &a = cf::api::get();
  posix_fd fd;
  cf::file_handle handle;
  cf::buffer_registration registration;
  if (!a.usable())
    problem = a.problem;
  else if (!fd.open(path,
                    writing ? (O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0)) : O_RDONLY))
    problem = std::string("cannot open: ") + std::strerror(errno);
  else if (handle.open(a, fd.fd, problem))
    (void)registration.open(a, dev, std::size_t(bytes), problem);
  if (!problem.empty()) {
    if (mode == gds_mode::require)
      throw io_error("resproj: " + path + ": GPUDirect Storage required but " + problem);
    result.gds_problem = problem;
    return false;
  }
  stream.synchronize(); // cuFile is not stream-ordered
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t want = std::size_t(std::min<std::uint64_t>(bytes - done, 1u << 30));
    const ssize_t got =
        writing ? a.write(handle.get(), dev, want, off_t(offset + done), off_t(done))
                : a.read(handle.get(), dev, want, off_t(offset + done), off_t(done));
    if (got < 0 && done == 0 && mode == gds_mode::automatic) {
      result.gds_problem = std::string(writing ? "cuFileWrite" : "cuFileRead") +
                           " failed (" + std::to_string(got) + ")";
      return false; // nothing transferred: the bounce path takes over
    }
    if (got <= 0)
      throw io_error(
          "resproj: " + path + ": GPUDirect Storage " +
          (writing ? "cuFileWrite" : "cuFileRead") +
          (got == 0 ? " made no progress" : " failed (" + std::to_string(got) + ")") +
          " at offset " + std::to_string(offset + done));
    done += std::uint64_t(got);
  }
  result.method = io_method::gds;
  result.bytes = bytes;
  result.threads = 1;
  return true;
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
