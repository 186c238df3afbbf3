/* Control of the fault injection library (tests/fault/fault_injection.c).
 *
 * The library replaces, by symbol interposition, functions of the C library
 * (read, pread, write, pwrite, fsync, rename, open, ...) and of the shared
 * CUDA runtime (cudaMalloc, cudaMemcpyAsync, cudaStreamSynchronize, ...). A
 * test executable linked against it (before the C library and the CUDA
 * runtime on the link line) gets the replacements without LD_PRELOAD. Each
 * replacement counts its calls and, when armed, fails a chosen call instead
 * of making it.
 *
 * Function families (the names the functions below take):
 *   "read"     read                      "pread"   pread, pread64
 *   "write"    write, writev             "pwrite"  pwrite, pwrite64
 *   "fsync"    fsync                     "fdatasync"  fdatasync
 *   "rename"   rename, renameat          "open"    open, open64, openat,
 *                                                  openat64, creat, fopen,
 *                                                  fopen64
 *   "cudaMalloc", "cudaMallocAsync", "cudaHostAlloc", "cudaMallocHost",
 *   "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaEventSynchronize",
 *   "cudaFree", "cudaFreeAsync", "cudaFreeHost", "cudaEventCreateWithFlags",
 *   "cudaStreamCreateWithFlags" (with the per-thread default stream variants
 *   of cudaMallocAsync, cudaFreeAsync, cudaMemcpyAsync and
 *   cudaStreamSynchronize)
 *   "new"      counted and failed by the test's replacement of the global
 *              operator new (fault_new.cpp), through fault_hit("new")
 *
 * Scope: file calls are counted (and failed) only when they concern a file
 * under the directory given to fault_scope (the descriptor's path, or the
 * path argument), so that the test framework's own output and reads of
 * /dev/urandom do not count. CUDA calls and allocations are always counted.
 *
 * All functions are thread-safe (atomic counters); arming is meant to be
 * done while no pipeline runs. */
#ifndef RESPROJ_TESTS_FAULT_CONTROL_H
#define RESPROJ_TESTS_FAULT_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Actions of fault_arm: a positive value is the errno (file calls) or the
 * cudaError_t (CUDA calls) the failed call reports. */
#define FAULT_SHORT (-1) /* transfer half the bytes (a short read or write) */
#define FAULT_EOF (-2)   /* read: report end of file (return 0) */

/* Counts only calls on files under `directory` (NULL: no file call counts). */
void fault_scope(const char *directory);

/* Fails calls `nth` .. `nth + times - 1` (1-based, counted from now) of the
 * family `name` with `action`; `times` < 0 fails every call from `nth` on.
 * Resets every counter. Returns 0, or -1 for an unknown family. */
int fault_arm(const char *name, long nth, int action, long times);

/* Stops failing calls and resets every counter (the scope stays). */
void fault_disarm(void);

/* Calls of the family `name` since the last fault_arm / fault_disarm
 * (-1 for an unknown family). */
long fault_calls(const char *name);

/* Calls failed since the last fault_arm. */
long fault_injected(void);

/* Allocations made through the replaced CUDA calls and not yet released:
 * "device" (cudaMalloc, cudaMallocAsync less cudaFree, cudaFreeAsync) or
 * "pinned" (cudaHostAlloc, cudaMallocHost less cudaFreeHost); -1 for
 * another kind. Never reset: compare before and after. A stream-ordered
 * free counts when it is queued. */
long fault_live(const char *kind);

/* For replacements living outside the library (operator new): counts one
 * call of `name` and returns the action to take (0: make the call). */
int fault_hit(const char *name);

#ifdef __cplusplus
}
#endif

#endif
