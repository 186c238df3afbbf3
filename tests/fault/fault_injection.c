/* Fault injection by symbol interposition: replacements of C library file
 * calls and CUDA runtime calls that count their calls and fail a chosen one
 * (see fault_control.h). Each replacement finds the real function with
 * dlsym(RTLD_NEXT, ...), so the library must come before the C library and
 * the shared CUDA runtime in the lookup order: link the test executable
 * against it (it then precedes them on the link line), or preload it.
 *
 * Written in C so that it uses neither operator new nor the C++ runtime. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fault_control.h"

#define FAULT_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------ families -- */

enum family {
  F_NONE = 0,
  F_READ,
  F_PREAD,
  F_WRITE,
  F_PWRITE,
  F_FSYNC,
  F_FDATASYNC,
  F_RENAME,
  F_OPEN,
  F_CUDA_MALLOC,
  F_CUDA_MALLOC_ASYNC,
  F_CUDA_HOST_ALLOC,
  F_CUDA_MALLOC_HOST,
  F_CUDA_MEMCPY_ASYNC,
  F_CUDA_STREAM_SYNCHRONIZE,
  F_CUDA_EVENT_SYNCHRONIZE,
  F_CUDA_FREE,
  F_CUDA_FREE_ASYNC,
  F_CUDA_FREE_HOST,
  F_CUDA_EVENT_CREATE,
  F_CUDA_STREAM_CREATE,
  F_NEW,
  F_COUNT
};

static const char *const family_names[F_COUNT] = {
    "",
    "read",
    "pread",
    "write",
    "pwrite",
    "fsync",
    "fdatasync",
    "rename",
    "open",
    "cudaMalloc",
    "cudaMallocAsync",
    "cudaHostAlloc",
    "cudaMallocHost",
    "cudaMemcpyAsync",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaFree",
    "cudaFreeAsync",
    "cudaFreeHost",
    "cudaEventCreateWithFlags",
    "cudaStreamCreateWithFlags",
    "new",
};

static int family_of(const char *name) {
  if (name == NULL)
    return -1;
  for (int f = 1; f < F_COUNT; ++f)
    if (strcmp(name, family_names[f]) == 0)
      return f;
  return -1;
}

/* ------------------------------------------------------------- state -- */

static atomic_long calls[F_COUNT];
static atomic_long injected;
static atomic_long live_device; /* cudaMalloc(Async) minus cudaFree(Async) */
static atomic_long live_pinned; /* cudaHostAlloc, cudaMallocHost minus cudaFreeHost */
static atomic_int armed;        /* family, F_NONE when disarmed */
static atomic_long armed_nth;
static atomic_long armed_times;
static atomic_int armed_action;

/* The scope as given and as resolved (descriptors resolve to real paths). */
static char scope_given[PATH_MAX];
static char scope_real[PATH_MAX];
static atomic_int scope_set;

static int under(const char *path, const char *dir) {
  const size_t n = strlen(dir);
  return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int path_in_scope(const char *path) {
  if (!atomic_load(&scope_set) || path == NULL)
    return 0;
  return under(path, scope_given) || under(path, scope_real);
}

static int fd_in_scope(int fd) {
  if (!atomic_load(&scope_set) || fd < 0)
    return 0;
  char link[64];
  char target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0)
    return 0;
  target[n] = '\0';
  return under(target, scope_real) || under(target, scope_given);
}

/* Counts a call of `f`; returns the action to take (0: make the call). */
static int decide(int f) {
  const long k = atomic_fetch_add(&calls[f], 1) + 1;
  if (atomic_load(&armed) != f)
    return 0;
  const long nth = atomic_load(&armed_nth), times = atomic_load(&armed_times);
  if (k < nth || (times >= 0 && k >= nth + times))
    return 0;
  atomic_fetch_add(&injected, 1);
  return atomic_load(&armed_action);
}

static void reset_counters(void) {
  for (int f = 0; f < F_COUNT; ++f)
    atomic_store(&calls[f], 0);
  atomic_store(&injected, 0);
}

/* ------------------------------------------------------- control API -- */

FAULT_EXPORT void fault_scope(const char *directory) {
  atomic_store(&scope_set, 0);
  if (directory == NULL || directory[0] == '\0')
    return;
  snprintf(scope_given, sizeof scope_given, "%s", directory);
  if (realpath(directory, scope_real) == NULL)
    snprintf(scope_real, sizeof scope_real, "%s", directory);
  atomic_store(&scope_set, 1);
}

FAULT_EXPORT int fault_arm(const char *name, long nth, int action, long times) {
  const int f = family_of(name);
  if (f < 0)
    return -1;
  atomic_store(&armed, F_NONE);
  reset_counters();
  atomic_store(&armed_nth, nth);
  atomic_store(&armed_times, times);
  atomic_store(&armed_action, action);
  atomic_store(&armed, f);
  return 0;
}

FAULT_EXPORT void fault_disarm(void) {
  atomic_store(&armed, F_NONE);
  reset_counters();
}

FAULT_EXPORT long fault_calls(const char *name) {
  const int f = family_of(name);
  return f < 0 ? -1 : atomic_load(&calls[f]);
}

FAULT_EXPORT long fault_injected(void) { return atomic_load(&injected); }

FAULT_EXPORT long fault_live(const char *kind) {
  if (kind != NULL && strcmp(kind, "device") == 0)
    return atomic_load(&live_device);
  if (kind != NULL && strcmp(kind, "pinned") == 0)
    return atomic_load(&live_pinned);
  return -1;
}

FAULT_EXPORT int fault_hit(const char *name) {
  const int f = family_of(name);
  return f < 0 ? 0 : decide(f);
}

/* ------------------------------------------------- the real functions -- */

/* The next definition of `name` after this library (found once). */
static void *next_symbol(void *_Atomic *slot, const char *name) {
  void *p = atomic_load_explicit(slot, memory_order_acquire);
  if (p == NULL) {
    p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
      fprintf(stderr, "fault_injection: no definition of %s after this library\n", name);
      abort();
    }
    atomic_store_explicit(slot, p, memory_order_release);
  }
  return p;
}

#define REAL(type, name)                                                                 \
  static void *_Atomic real_##name##_slot;                                               \
  static type real_##name(void) { return (type)next_symbol(&real_##name##_slot, #name); }

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pread64_fn)(int, void *, size_t, off64_t);
typedef ssize_t (*pread_chk_fn)(int, void *, size_t, off_t, size_t);
typedef ssize_t (*pread64_chk_fn)(int, void *, size_t, off64_t, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef int (*sync_fn)(int);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*openat2_fn)(int, const char *, int);
typedef int (*creat_fn)(const char *, mode_t);
typedef FILE *(*fopen_fn)(const char *, const char *);

REAL(read_fn, read)
REAL(read_chk_fn, __read_chk)
REAL(pread_fn, pread)
REAL(pread64_fn, pread64)
REAL(pread_chk_fn, __pread_chk)
REAL(pread64_chk_fn, __pread64_chk)
REAL(write_fn, write)
REAL(writev_fn, writev)
REAL(pwrite_fn, pwrite)
REAL(pwrite64_fn, pwrite64)
REAL(sync_fn, fsync)
REAL(sync_fn, fdatasync)
REAL(rename_fn, rename)
REAL(renameat_fn, renameat)
REAL(open_fn, open)
REAL(open_fn, open64)
REAL(open2_fn, __open_2)
REAL(open2_fn, __open64_2)
REAL(openat_fn, openat)
REAL(openat_fn, openat64)
REAL(openat2_fn, __openat_2)
REAL(openat2_fn, __openat64_2)
REAL(creat_fn, creat)
REAL(fopen_fn, fopen)
REAL(fopen_fn, fopen64)

/* ----------------------------------------------------- reads, writes -- */

/* The action for a transfer of `*n` bytes on `fd` in family `f`: returns 1
 * with `*result` set when the call must not be made, else 0 (with `*n`
 * possibly halved for a short transfer). */
static int transfer_fault(int f, int fd, size_t *n, ssize_t *result) {
  if (!fd_in_scope(fd))
    return 0;
  const int action = decide(f);
  if (action > 0) {
    errno = action;
    *result = -1;
    return 1;
  }
  if (action == FAULT_EOF && (f == F_READ || f == F_PREAD)) {
    *result = 0;
    return 1;
  }
  if (action == FAULT_SHORT && *n > 1)
    *n /= 2;
  return 0;
}

FAULT_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  ssize_t r;
  if (transfer_fault(F_READ, fd, &n, &r))
    return r;
  return real_read()(fd, buf, n);
}

FAULT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  ssize_t r;
  if (transfer_fault(F_READ, fd, &n, &r))
    return r;
  return real___read_chk()(fd, buf, n, buflen);
}

FAULT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t offset) {
  ssize_t r;
  if (transfer_fault(F_PREAD, fd, &n, &r))
    return r;
  return real_pread()(fd, buf, n, offset);
}

FAULT_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t offset) {
  ssize_t r;
  if (transfer_fault(F_PREAD, fd, &n, &r))
    return r;
  return real_pread64()(fd, buf, n, offset);
}

FAULT_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t offset,
                                 size_t buflen) {
  ssize_t r;
  if (transfer_fault(F_PREAD, fd, &n, &r))
    return r;
  return real___pread_chk()(fd, buf, n, offset, buflen);
}

FAULT_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t offset,
                                   size_t buflen) {
  ssize_t r;
  if (transfer_fault(F_PREAD, fd, &n, &r))
    return r;
  return real___pread64_chk()(fd, buf, n, offset, buflen);
}

FAULT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  ssize_t r;
  if (transfer_fault(F_WRITE, fd, &n, &r))
    return r;
  return real_write()(fd, buf, n);
}

FAULT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int count) {
  size_t total = 0;
  for (int i = 0; i < count; ++i)
    total += iov[i].iov_len;
  size_t n = total;
  ssize_t r;
  if (transfer_fault(F_WRITE, fd, &n, &r))
    return r;
  if (n == total || count > 64)
    return real_writev()(fd, iov, count);
  /* A short write: the first n bytes of the vector. */
  struct iovec part[64];
  int used = 0;
  for (size_t left = n; used < count && left > 0; ++used) {
    part[used] = iov[used];
    if (part[used].iov_len > left)
      part[used].iov_len = left;
    left -= part[used].iov_len;
  }
  return real_writev()(fd, part, used);
}

FAULT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
  ssize_t r;
  if (transfer_fault(F_PWRITE, fd, &n, &r))
    return r;
  return real_pwrite()(fd, buf, n, offset);
}

FAULT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t offset) {
  ssize_t r;
  if (transfer_fault(F_PWRITE, fd, &n, &r))
    return r;
  return real_pwrite64()(fd, buf, n, offset);
}

/* An errno to fail a call with, or 0. */
static int errno_fault(int f, int in_scope) {
  if (!in_scope)
    return 0;
  const int action = decide(f);
  return action > 0 ? action : 0;
}

FAULT_EXPORT int fsync(int fd) {
  const int e = errno_fault(F_FSYNC, fd_in_scope(fd));
  if (e) {
    errno = e;
    return -1;
  }
  return real_fsync()(fd);
}

FAULT_EXPORT int fdatasync(int fd) {
  const int e = errno_fault(F_FDATASYNC, fd_in_scope(fd));
  if (e) {
    errno = e;
    return -1;
  }
  return real_fdatasync()(fd);
}

FAULT_EXPORT int rename(const char *from, const char *to) {
  const int e = errno_fault(F_RENAME, path_in_scope(from) || path_in_scope(to));
  if (e) {
    errno = e;
    return -1;
  }
  return real_rename()(from, to);
}

FAULT_EXPORT int renameat(int from_dir, const char *from, int to_dir, const char *to) {
  const int e = errno_fault(F_RENAME, path_in_scope(from) || path_in_scope(to));
  if (e) {
    errno = e;
    return -1;
  }
  return real_renameat()(from_dir, from, to_dir, to);
}

/* ------------------------------------------------------------- opens -- */

static int open_fault(const char *path) {
  return errno_fault(F_OPEN, path_in_scope(path));
}

static mode_t mode_argument(int flags, va_list ap) {
  if ((flags & O_CREAT) != 0 || (flags & __O_TMPFILE) == __O_TMPFILE)
    return (mode_t)va_arg(ap, int);
  return 0;
}

/* Fails the call (errno set, -1 returned) when an open fault is armed for
   `path`. */
#define RETURN_IF_OPEN_FAULT(path)                                                       \
  do {                                                                                   \
    const int open_errno = open_fault(path);                                             \
    if (open_errno) {                                                                    \
      errno = open_errno;                                                                \
      return -1;                                                                         \
    }                                                                                    \
  } while (0)

FAULT_EXPORT int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  RETURN_IF_OPEN_FAULT(path);
  return real_open()(path, flags, mode);
}

FAULT_EXPORT int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  RETURN_IF_OPEN_FAULT(path);
  return real_open64()(path, flags, mode);
}

FAULT_EXPORT int __open_2(const char *path, int flags) {
  RETURN_IF_OPEN_FAULT(path);
  return real___open_2()(path, flags);
}

FAULT_EXPORT int __open64_2(const char *path, int flags) {
  RETURN_IF_OPEN_FAULT(path);
  return real___open64_2()(path, flags);
}

FAULT_EXPORT int openat(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  RETURN_IF_OPEN_FAULT(path);
  return real_openat()(dir, path, flags, mode);
}

FAULT_EXPORT int openat64(int dir, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  RETURN_IF_OPEN_FAULT(path);
  return real_openat64()(dir, path, flags, mode);
}

FAULT_EXPORT int __openat_2(int dir, const char *path, int flags) {
  RETURN_IF_OPEN_FAULT(path);
  return real___openat_2()(dir, path, flags);
}

FAULT_EXPORT int __openat64_2(int dir, const char *path, int flags) {
  RETURN_IF_OPEN_FAULT(path);
  return real___openat64_2()(dir, path, flags);
}

FAULT_EXPORT int creat(const char *path, mode_t mode) {
  RETURN_IF_OPEN_FAULT(path);
  return real_creat()(path, mode);
}

FAULT_EXPORT FILE *fopen(const char *path, const char *mode) {
  const int e = open_fault(path);
  if (e) {
    errno = e;
    return NULL;
  }
  return real_fopen()(path, mode);
}

FAULT_EXPORT FILE *fopen64(const char *path, const char *mode) {
  const int e = open_fault(path);
  if (e) {
    errno = e;
    return NULL;
  }
  return real_fopen64()(path, mode);
}

/* ------------------------------------------------------ CUDA runtime -- */

/* The CUDA runtime's types, as the ABI sees them: cudaError_t is an int-sized
 * enum, streams and events are pointers, cudaMemcpyKind an int-sized enum.
 * No CUDA header is needed, and nothing here links the runtime: the real
 * functions are looked up only when a test calls them. */
typedef int cuda_error;
#define CUDA_SUCCESS 0

typedef cuda_error (*cuda_malloc_fn)(void **, size_t);
typedef cuda_error (*cuda_malloc_async_fn)(void **, size_t, void *);
typedef cuda_error (*cuda_host_alloc_fn)(void **, size_t, unsigned int);
typedef cuda_error (*cuda_memcpy_async_fn)(void *, const void *, size_t, int, void *);
typedef cuda_error (*cuda_sync_fn)(void *);

typedef cuda_error (*cuda_free_fn)(void *);
typedef cuda_error (*cuda_create_fn)(void **, unsigned int);
typedef cuda_error (*cuda_free_async_fn)(void *, void *);

REAL(cuda_malloc_fn, cudaMalloc)
REAL(cuda_malloc_async_fn, cudaMallocAsync)
REAL(cuda_malloc_async_fn, cudaMallocAsync_ptsz)
REAL(cuda_host_alloc_fn, cudaHostAlloc)
REAL(cuda_malloc_fn, cudaMallocHost)
REAL(cuda_memcpy_async_fn, cudaMemcpyAsync)
REAL(cuda_memcpy_async_fn, cudaMemcpyAsync_ptsz)
REAL(cuda_sync_fn, cudaStreamSynchronize)
REAL(cuda_sync_fn, cudaStreamSynchronize_ptsz)
REAL(cuda_sync_fn, cudaEventSynchronize)
REAL(cuda_free_fn, cudaFree)
REAL(cuda_free_async_fn, cudaFreeAsync)
REAL(cuda_free_async_fn, cudaFreeAsync_ptsz)
REAL(cuda_free_fn, cudaFreeHost)
REAL(cuda_create_fn, cudaEventCreateWithFlags)
REAL(cuda_create_fn, cudaStreamCreateWithFlags)

/* A CUDA error code to return instead of making the call, or 0. */
static cuda_error cuda_fault(int f) {
  const int action = decide(f);
  return action > 0 ? action : CUDA_SUCCESS;
}

/* Counts a successful allocation in `live`; returns `e`. */
static cuda_error allocated(cuda_error e, void **p, atomic_long *live) {
  if (e == CUDA_SUCCESS && p != NULL && *p != NULL)
    atomic_fetch_add(live, 1);
  return e;
}

/* Counts a successful release in `live`; returns `e`. */
static cuda_error released(cuda_error e, void *p, atomic_long *live) {
  if (e == CUDA_SUCCESS && p != NULL)
    atomic_fetch_sub(live, 1);
  return e;
}

FAULT_EXPORT cuda_error cudaMalloc(void **p, size_t n) {
  const cuda_error e = cuda_fault(F_CUDA_MALLOC);
  return e ? e : allocated(real_cudaMalloc()(p, n), p, &live_device);
}

FAULT_EXPORT cuda_error cudaMallocAsync(void **p, size_t n, void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_MALLOC_ASYNC);
  return e ? e : allocated(real_cudaMallocAsync()(p, n, stream), p, &live_device);
}

FAULT_EXPORT cuda_error cudaMallocAsync_ptsz(void **p, size_t n, void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_MALLOC_ASYNC);
  return e ? e : allocated(real_cudaMallocAsync_ptsz()(p, n, stream), p, &live_device);
}

FAULT_EXPORT cuda_error cudaHostAlloc(void **p, size_t n, unsigned int flags) {
  const cuda_error e = cuda_fault(F_CUDA_HOST_ALLOC);
  return e ? e : allocated(real_cudaHostAlloc()(p, n, flags), p, &live_pinned);
}

FAULT_EXPORT cuda_error cudaMallocHost(void **p, size_t n) {
  const cuda_error e = cuda_fault(F_CUDA_MALLOC_HOST);
  return e ? e : allocated(real_cudaMallocHost()(p, n), p, &live_pinned);
}

FAULT_EXPORT cuda_error cudaFree(void *p) {
  const cuda_error e = cuda_fault(F_CUDA_FREE);
  return e ? e : released(real_cudaFree()(p), p, &live_device);
}

FAULT_EXPORT cuda_error cudaFreeAsync(void *p, void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_FREE_ASYNC);
  return e ? e : released(real_cudaFreeAsync()(p, stream), p, &live_device);
}

FAULT_EXPORT cuda_error cudaFreeAsync_ptsz(void *p, void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_FREE_ASYNC);
  return e ? e : released(real_cudaFreeAsync_ptsz()(p, stream), p, &live_device);
}

FAULT_EXPORT cuda_error cudaFreeHost(void *p) {
  const cuda_error e = cuda_fault(F_CUDA_FREE_HOST);
  return e ? e : released(real_cudaFreeHost()(p), p, &live_pinned);
}

FAULT_EXPORT cuda_error cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind,
                                        void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_MEMCPY_ASYNC);
  return e ? e : real_cudaMemcpyAsync()(dst, src, n, kind, stream);
}

FAULT_EXPORT cuda_error cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n,
                                             int kind, void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_MEMCPY_ASYNC);
  return e ? e : real_cudaMemcpyAsync_ptsz()(dst, src, n, kind, stream);
}

FAULT_EXPORT cuda_error cudaStreamSynchronize(void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_STREAM_SYNCHRONIZE);
  return e ? e : real_cudaStreamSynchronize()(stream);
}

FAULT_EXPORT cuda_error cudaStreamSynchronize_ptsz(void *stream) {
  const cuda_error e = cuda_fault(F_CUDA_STREAM_SYNCHRONIZE);
  return e ? e : real_cudaStreamSynchronize_ptsz()(stream);
}

FAULT_EXPORT cuda_error cudaEventSynchronize(void *event) {
  const cuda_error e = cuda_fault(F_CUDA_EVENT_SYNCHRONIZE);
  return e ? e : real_cudaEventSynchronize()(event);
}

FAULT_EXPORT cuda_error cudaEventCreateWithFlags(void **event, unsigned int flags) {
  const cuda_error e = cuda_fault(F_CUDA_EVENT_CREATE);
  return e ? e : real_cudaEventCreateWithFlags()(event, flags);
}

FAULT_EXPORT cuda_error cudaStreamCreateWithFlags(void **stream, unsigned int flags) {
  const cuda_error e = cuda_fault(F_CUDA_STREAM_CREATE);
  return e ? e : real_cudaStreamCreateWithFlags()(stream, flags);
}
