/// @file
/// @brief CUDA runtime error translation: `RESPROJ_CUDA_TRY`, sticky-error
/// classification, and the no-throw variant for destructors.
///
/// Every failing runtime call becomes an exception from core/errors.hpp:
/// - `gpu_out_of_memory` for `cudaErrorMemoryAllocation` (context usable);
/// - `gpu_fatal_error` for sticky errors (context dead, process must restart);
/// - `gpu_error` for everything else.
/// Non-sticky errors are cleared from the runtime's last-error slot before the
/// exception leaves, so no stale error is seen by a later
/// `cudaGetLastError()`/`cudaPeekAtLastError()` (sticky errors cannot be
/// cleared).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// `true` for the errors after which the CUDA context is unusable ("sticky"):
/// every later runtime call in the process returns the same error, and the
/// process must be restarted to use the GPU again.
///
/// The list holds the codes that the CUDA 13 runtime headers document as
/// "leaves the process in an inconsistent state ... the process must be
/// terminated and relaunched" (or, for `cudaErrorAssert`, "the device cannot be
/// used again"), plus `cudaErrorECCUncorrectable`: not so documented in the
/// header, but an uncorrectable ECC error means device memory is corrupt, and
/// recovery needs a restart (and usually a GPU reset) in practice.
/// `cudaErrorUnknown` is deliberately *not* sticky: it is not documented as
/// such, and if the context really is dead the next call reports a sticky code.
/// Never throws, makes no runtime call.
inline bool is_sticky(cudaError_t err) noexcept {
  switch (err) {
  case cudaErrorIllegalAddress:      // 700
  case cudaErrorLaunchTimeout:       // 702
  case cudaErrorAssert:              // 710
  case cudaErrorHardwareStackError:  // 714
  case cudaErrorIllegalInstruction:  // 715
  case cudaErrorMisalignedAddress:   // 716
  case cudaErrorInvalidAddressSpace: // 717
  case cudaErrorInvalidPc:           // 718
  case cudaErrorLaunchFailure:       // 719
  case cudaErrorMpsClientTerminated: // 810
  case cudaErrorExternalDevice:      // 911
  case cudaErrorECCUncorrectable:    // 214 (see above)
#if CUDART_VERSION >= 12080
  case cudaErrorContained:        // 226
  case cudaErrorTensorMemoryLeak: // 721
#endif
    return true;
  default:
    return false;
  }
}

namespace detail {

/// Clears a non-sticky error from the runtime's last-error slot and returns
/// `err` unchanged. For destructors and other no-throw paths: the error is
/// swallowed. Sticky errors cannot be cleared and are left alone.
/// Never throws, never blocks.
inline cudaError_t discard_error(cudaError_t err) noexcept {
  if (err != cudaSuccess && !is_sticky(err))
    (void)cudaGetLastError();
  return err;
}

/// Throws the exception for a failed runtime call. The message is
/// "resproj: CUDA error <name> (<description>) in `<call>` at <file>:<line>".
/// A non-sticky error is cleared from the last-error slot first.
/// @param err   the failing return code (not `cudaSuccess`)
/// @param call  the source text of the call
/// @param file  `__FILE__` of the call site
/// @param line  `__LINE__` of the call site
/// @throws gpu_out_of_memory for `cudaErrorMemoryAllocation`,
///         gpu_fatal_error when `is_sticky(err)`, gpu_error otherwise.
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char *call,
                                          const char *file, int line) {
  std::string message = "resproj: CUDA error ";
  message += cudaGetErrorName(err);
  message += " (";
  message += cudaGetErrorString(err);
  message += ") in `";
  message += call;
  message += "` at ";
  message += file;
  message += ':';
  message += std::to_string(line);
  if (is_sticky(err))
    throw gpu_fatal_error(message, static_cast<int>(err));
  (void)cudaGetLastError(); // leave no stale (non-sticky) error behind
  if (err == cudaErrorMemoryAllocation)
    throw gpu_out_of_memory(message, static_cast<int>(err));
  throw gpu_error(message, static_cast<int>(err));
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END

/// Evaluates a `cudaError_t` expression once; on failure throws through
/// `resproj::gpu::detail::throw_cuda_error` with the expression's source text,
/// file and line. Variadic so that template arguments with commas pass through.
#define RESPROJ_CUDA_TRY(...)                                                            \
  do {                                                                                   \
    const ::cudaError_t resproj_cuda_try_status_ = (__VA_ARGS__);                        \
    if (resproj_cuda_try_status_ != ::cudaSuccess)                                       \
      ::resproj::gpu::detail::throw_cuda_error(resproj_cuda_try_status_, #__VA_ARGS__,   \
                                               __FILE__, __LINE__);                      \
  } while (0)

/// Evaluates a `cudaError_t` expression and swallows a failure (clearing a
/// non-sticky error from the last-error slot). The whole macro is an
/// expression whose value is the call's `cudaError_t`. For destructors and
/// other paths that must not throw.
#define RESPROJ_CUDA_TRY_NOTHROW(...)                                                    \
  (::resproj::gpu::detail::discard_error((__VA_ARGS__)))
