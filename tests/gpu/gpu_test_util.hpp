/// @file
/// @brief Shared helpers for GPU tests: skip cleanly when no CUDA device is
/// present. Include from `.cu` test files (needs the CUDA runtime headers).
///
///   TEST(X, Y) { RESPROJ_REQUIRE_GPU(); ... }     // plain test
///   class MyFixture : public GpuTest { ... };    // fixture whose SetUp skips
///   TEST_F(GpuTest, Z) { ... }                    // or use it directly
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "resproj/core/span.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/stream.cuh"

namespace resproj {
namespace test {

/// Why no device is usable: the runtime's error name and text, or
/// "cudaGetDeviceCount returned 0". Empty when a device is present. Leaves
/// no stale error.
inline std::string gpu_unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  }
  if (count == 0)
    return "cudaGetDeviceCount returned 0";
  return std::string();
}

/// Fixture base: skips the test (GTEST_SKIP) when no CUDA device is present.
/// Derived fixtures that override SetUp must call `GpuTest::SetUp()` first
/// and return if `IsSkipped()`.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (::resproj::gpu::device_count() == 0)
      GTEST_SKIP() << "no CUDA device available (" << gpu_unavailable_reason() << ")";
  }
};

/// Copies a device buffer to a new host vector (synchronises `s`).
template <class T>
std::vector<T> download(const ::resproj::gpu::device_buffer<T> &b,
                        ::resproj::gpu::stream_ref s) {
  std::vector<T> h(b.size());
  if (!h.empty())
    b.copy_to_host(::resproj::span<T>(h.data(), h.size()), s);
  s.synchronize();
  return h;
}

/// Copies a device image to a new host vector (synchronises `s`).
template <class T>
std::vector<T> download(const ::resproj::gpu::device_image<T> &img,
                        ::resproj::gpu::stream_ref s) {
  std::vector<T> h(img.size());
  img.download(::resproj::span<T>(h.data(), h.size()), s);
  s.synchronize();
  return h;
}

} // namespace test
} // namespace resproj

using resproj::test::download;
using resproj::test::GpuTest;

/// Skips the current test (GTEST_SKIP, returns from the test function) when
/// no CUDA device is present, with the reason in the skip message.
#define RESPROJ_REQUIRE_GPU()                                                            \
  do {                                                                                   \
    if (::resproj::gpu::device_count() == 0)                                             \
      GTEST_SKIP() << "no CUDA device available ("                                       \
                   << ::resproj::test::gpu_unavailable_reason() << ")";                  \
  } while (0)
