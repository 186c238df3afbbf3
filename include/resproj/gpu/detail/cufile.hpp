/// @file
/// @brief GPUDirect Storage (cuFile) loaded at run time: `dlopen` of
/// `libcufile.so.0`, the handful of entry points the device file reader
/// uses, and the choice between GDS and the pinned-bounce path.
///
/// There is no build-time dependency on cuFile: the few types and functions
/// are declared here with the layout of NVIDIA's `cufile.h` (when that header
/// is available, `static_assert`s check that the layouts agree). Plain C++17
/// and POSIX (`dlfcn.h`); the CUDA runtime is not needed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<cufile.h>)
#include <cufile.h>
#define RESPROJ_HAVE_CUFILE_H 1
#endif
#endif

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Which path the device file reader / writer may take.
enum class gds_mode {
  /// GPUDirect Storage when it is really there (the nvidia-fs kernel driver
  /// is loaded, libcufile loads, the driver opens and the file and buffer
  /// register), otherwise the pinned-bounce path, silently.
  automatic,
  /// Always the pinned-bounce path (parallel `pread`/`pwrite`); cuFile is
  /// never loaded.
  bounce,
  /// GPUDirect Storage (also cuFile's compatibility mode when nvidia-fs is
  /// missing); io_error naming the failing step when it cannot be used.
  require,
};

/// The path a read or write took.
enum class io_method {
  none,   ///< nothing was transferred (0 bytes)
  bounce, ///< parallel pread/pwrite through pinned bounce buffers
  gds,    ///< GPUDirect Storage (cuFile)
  mapped, ///< page-cache DMA from a registered read-only file mapping
};

/// Name of a method: "none", "bounce", "gds" or "mapped".
constexpr const char *io_method_name(io_method m) noexcept {
  return m == io_method::gds      ? "gds"
         : m == io_method::bounce ? "bounce"
         : m == io_method::mapped ? "mapped"
                                  : "none";
}

namespace detail {

/// Whether to try cuFile for one transfer: never with `bounce`, always with
/// `require`, and with `automatic` only when the nvidia-fs kernel driver is
/// loaded (`nvfs_loaded`). Without nvidia-fs cuFile only offers its
/// compatibility mode (its own POSIX reads and copies, slower than the
/// bounce path, and it writes a log file), so `automatic` does not use it.
constexpr bool should_try_gds(gds_mode mode, bool nvfs_loaded) noexcept {
  return mode == gds_mode::require || (mode == gds_mode::automatic && nvfs_loaded);
}

/// `true` if the nvidia-fs kernel driver (GPUDirect Storage) is loaded.
inline bool nvidia_fs_loaded() noexcept {
  struct stat st {};
  return ::stat("/proc/driver/nvidia-fs", &st) == 0 ||
         ::stat("/dev/nvidia-fs0", &st) == 0;
}

namespace cufile {

/// `CUfileError_t`: operation status (0 = success) and CUDA driver status.
struct error_t {
  int err;
  int cu_err;
};
/// `CUfileDescr_t` with `type = CU_FILE_HANDLE_TYPE_OPAQUE_FD` (1).
struct descr_t {
  int type;
  union {
    int fd;
    void *handle;
  } handle;
  const void *fs_ops;
};
using handle_t = void *;
constexpr int handle_type_opaque_fd = 1;

#ifdef RESPROJ_HAVE_CUFILE_H
static_assert(sizeof(error_t) == sizeof(CUfileError_t), "CUfileError_t layout");
static_assert(sizeof(descr_t) == sizeof(CUfileDescr_t), "CUfileDescr_t layout");
static_assert(sizeof(handle_t) == sizeof(CUfileHandle_t), "CUfileHandle_t layout");
static_assert(int(CU_FILE_HANDLE_TYPE_OPAQUE_FD) == handle_type_opaque_fd);
#endif

/// The entry points, resolved once per process. The library stays loaded
/// for the life of the process and the driver, once opened, stays open
/// (cuFile closes it at exit; closing it from a static destructor is not safe).
struct api {
  error_t (*driver_open)() = nullptr;
  error_t (*driver_close)() = nullptr;
  error_t (*handle_register)(handle_t *, descr_t *) = nullptr;
  void (*handle_deregister)(handle_t) = nullptr;
  error_t (*buf_register)(const void *, std::size_t, int) = nullptr;
  error_t (*buf_deregister)(const void *) = nullptr;
  ssize_t (*read)(handle_t, void *, std::size_t, off_t, off_t) = nullptr;
  ssize_t (*write)(handle_t, const void *, std::size_t, off_t, off_t) = nullptr;
  /// Empty when usable; otherwise why not (library missing, symbol missing,
  /// driver did not open).
  std::string problem;

  bool usable() const noexcept { return problem.empty(); }

  /// The process-wide instance; loads the library and opens the driver on
  /// first use (thread-safe). Never throws except std::bad_alloc.
  static const api &get() {
    static api instance = load();
    return instance;
  }

private:
  static api load() {
    api a;
    void *lib = ::dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char *e = ::dlerror();
      a.problem = std::string("libcufile.so.0 could not be loaded") + (e ? ": " : "") +
                  (e ? e : "");
      return a;
    }
    auto sym = [&](const char *name, auto &fn) {
      void *p = ::dlsym(lib, name);
      if (p == nullptr && a.problem.empty())
        a.problem = std::string("libcufile.so.0 lacks ") + name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    sym("cuFileDriverOpen", a.driver_open);
    if (::dlsym(lib, "cuFileDriverClose_v2") != nullptr)
      sym("cuFileDriverClose_v2", a.driver_close);
    else
      sym("cuFileDriverClose", a.driver_close);
    sym("cuFileHandleRegister", a.handle_register);
    sym("cuFileHandleDeregister", a.handle_deregister);
    sym("cuFileBufRegister", a.buf_register);
    sym("cuFileBufDeregister", a.buf_deregister);
    sym("cuFileRead", a.read);
    sym("cuFileWrite", a.write);
    if (!a.problem.empty())
      return a; // library stays loaded; nothing of it is used
    const error_t st = a.driver_open();
    if (st.err != 0) {
      a.problem = "cuFileDriverOpen failed (status " + std::to_string(st.err) +
                  ", CUDA driver status " + std::to_string(st.cu_err) + ")";
      return a;
    }
    return a; // the driver stays open until the process exits
  }
};

/// RAII registration of an open file descriptor with cuFile.
class file_handle {
public:
  /// @return false (and `problem` set) if registration fails.
  bool open(const api &a, int fd, std::string &problem) {
    descr_t d{};
    d.type = handle_type_opaque_fd;
    d.handle.fd = fd;
    d.fs_ops = nullptr;
    const error_t st = a.handle_register(&handle_, &d);
    if (st.err != 0) {
      problem = "cuFileHandleRegister failed (status " + std::to_string(st.err) + ")";
      handle_ = nullptr;
      return false;
    }
    api_ = &a;
    return true;
  }
  ~file_handle() {
    if (api_ != nullptr)
      api_->handle_deregister(handle_);
  }
  file_handle() = default;
  file_handle(const file_handle &) = delete;
  file_handle &operator=(const file_handle &) = delete;
  handle_t get() const noexcept { return handle_; }

private:
  const api *api_ = nullptr;
  handle_t handle_ = nullptr;
};

/// RAII registration of a device buffer with cuFile.
class buffer_registration {
public:
  bool open(const api &a, const void *p, std::size_t n, std::string &problem) {
    const error_t st = a.buf_register(p, n, 0);
    if (st.err != 0) {
      problem = "cuFileBufRegister failed (status " + std::to_string(st.err) + ")";
      return false;
    }
    api_ = &a;
    p_ = p;
    return true;
  }
  ~buffer_registration() {
    if (api_ != nullptr)
      (void)api_->buf_deregister(p_);
  }
  buffer_registration() = default;
  buffer_registration(const buffer_registration &) = delete;
  buffer_registration &operator=(const buffer_registration &) = delete;

private:
  const api *api_ = nullptr;
  const void *p_ = nullptr;
};

} // namespace cufile
} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
