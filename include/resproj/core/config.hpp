/// @file
/// @brief Compiler portability macros and the versioned (ABI) namespace.
#pragma once

#include <cstddef>
#include <cstdint>

#define RESPROJ_VERSION_MAJOR 0
#define RESPROJ_VERSION_MINOR 1
#define RESPROJ_VERSION_PATCH 0

/// Functions usable from host and device code. Empty without nvcc, so that
/// every `.hpp` header compiles with a plain C++17 compiler.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define RESPROJ_HD __host__ __device__
#define RESPROJ_DEVICE_COMPILER 1
#else
#define RESPROJ_HD
#define RESPROJ_DEVICE_COMPILER 0
#endif

/// Placed before a __host__ __device__ template that calls a functor
/// supplied by the caller (e.g. the CPU backend's host-only accumulators):
/// nvcc then checks the call only where the template is used in device code.
#if RESPROJ_DEVICE_COMPILER
#define RESPROJ_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RESPROJ_EXEC_CHECK_DISABLE
#endif

/// `true` inside the device pass of nvcc.
#if defined(__CUDA_ARCH__)
#define RESPROJ_IN_DEVICE_CODE 1
#else
#define RESPROJ_IN_DEVICE_CODE 0
#endif

/// Kernel declarations: hidden visibility, so two shared libraries that
/// both include resproj do not resolve each other's kernel stubs.
#if RESPROJ_DEVICE_COMPILER && defined(__GNUC__)
#define RESPROJ_KERNEL __global__ __attribute__((visibility("hidden")))
#elif RESPROJ_DEVICE_COMPILER
#define RESPROJ_KERNEL __global__
#endif

/// All host code lives in an inline ABI namespace, so that two shared
/// libraries built against different resproj versions do not clash.
#define RESPROJ_ABI_NAMESPACE v0_1

#define RESPROJ_NAMESPACE_BEGIN                                                          \
  namespace resproj {                                                                    \
  inline namespace RESPROJ_ABI_NAMESPACE {
#define RESPROJ_NAMESPACE_END                                                            \
  }                                                                                      \
  }
