// Tests of the GPU memory layer: errors, devices, streams, events, memory
// pool, device_buffer, pinned_buffer. Every test skips cleanly without a
// CUDA device. Must also pass when built with --default-stream per-thread.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/stream.cuh"

#include "gpu_test_util.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Runs `f`, expects resproj::invalid_argument naming `argument`; returns
/// the message ("" when nothing or something else was thrown).
template <class F>
std::string expect_invalid_argument(F &&f, const std::string &argument) {
  try {
    f();
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected invalid_argument(" << argument << "), got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected invalid_argument(" << argument << "), nothing thrown";
  return "";
}

struct sample {
  std::int32_t id;
  float weight;
  double value;
};
bool operator==(const sample &a, const sample &b) {
  return a.id == b.id && a.weight == b.weight && a.value == b.value;
}

template <class T> T make_value(std::size_t i);
template <> float make_value<float>(std::size_t i) { return 0.5f * float(i) - 3.0f; }
template <> double make_value<double>(std::size_t i) { return 1e-3 * double(i) + 0.25; }
template <> sample make_value<sample>(std::size_t i) {
  return sample{std::int32_t(i), float(i) * 0.25f, -double(i)};
}

template <class T> std::vector<T> make_values(std::size_t n, std::size_t shift = 0) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = make_value<T>(i + shift);
  return v;
}

template <class T> std::vector<T> download(const gpu::device_buffer<T> &d) {
  std::vector<T> out(d.size());
  d.copy_to_host(out.data(), out.size());
  d.stream().synchronize();
  return out;
}

/// Number of nodes of each type in `graph`.
struct node_counts {
  std::size_t total = 0, kernel = 0, memset = 0, memcpy = 0, alloc = 0, free = 0;
};
node_counts count_nodes(cudaGraph_t graph) {
  node_counts c;
  std::size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0)
    EXPECT_EQ(cudaGraphGetNodes(graph, nodes.data(), &n), cudaSuccess);
  c.total = n;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    EXPECT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    c.kernel += type == cudaGraphNodeTypeKernel;
    c.memset += type == cudaGraphNodeTypeMemset;
    c.memcpy += type == cudaGraphNodeTypeMemcpy;
    c.alloc += type == cudaGraphNodeTypeMemAlloc;
    c.free += type == cudaGraphNodeTypeMemFree;
  }
  return c;
}

} // namespace

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

TEST(GpuErrorClassification, StickyCodes) {
  // Pure classification: runs without a GPU.
  EXPECT_TRUE(gpu::is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(gpu::is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(gpu::is_sticky(cudaErrorAssert));
  EXPECT_TRUE(gpu::is_sticky(cudaErrorMisalignedAddress));
  EXPECT_TRUE(gpu::is_sticky(cudaErrorLaunchTimeout));
  EXPECT_TRUE(gpu::is_sticky(cudaErrorECCUncorrectable));
  EXPECT_FALSE(gpu::is_sticky(cudaSuccess));
  EXPECT_FALSE(gpu::is_sticky(cudaErrorMemoryAllocation));
  EXPECT_FALSE(gpu::is_sticky(cudaErrorInvalidValue));
  EXPECT_FALSE(gpu::is_sticky(cudaErrorNotReady));
  EXPECT_FALSE(gpu::is_sticky(cudaErrorLaunchOutOfResources));
  EXPECT_FALSE(gpu::is_sticky(cudaErrorUnknown));
}

TEST_F(GpuTest, OutOfMemoryIsTranslatedAndCleared) {
  void *p = nullptr;
  bool thrown = false;
  try {
    RESPROJ_CUDA_TRY(cudaMalloc(&p, std::size_t(1) << 62));
  } catch (const rp::gpu_out_of_memory &e) {
    thrown = true;
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "cudaErrorMemoryAllocation")) << what;
    EXPECT_TRUE(contains(what, "cudaMalloc(&p, std::size_t(1) << 62)")) << what;
    EXPECT_TRUE(contains(what, "test_memory.cu:")) << what;
    EXPECT_TRUE(contains(what, "resproj: CUDA error ")) << what;
    EXPECT_EQ(e.code(), int(cudaErrorMemoryAllocation));
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // The context is still usable.
  RESPROJ_CUDA_TRY(cudaMalloc(&p, 1024));
  EXPECT_NE(p, nullptr);
  RESPROJ_CUDA_TRY(cudaFree(p));
}

TEST_F(GpuTest, DeviceBufferOutOfMemory) {
  gpu::stream s;
  EXPECT_THROW(gpu::device_buffer<char>(std::size_t(1) << 52, s), rp::gpu_out_of_memory);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  gpu::device_buffer<float> ok(1000, s);
  ok.fill(1.0f);
  EXPECT_EQ(download(ok), std::vector<float>(1000, 1.0f));
}

TEST_F(GpuTest, InvalidValueIsPlainGpuError) {
  bool thrown = false;
  try {
    RESPROJ_CUDA_TRY(cudaDeviceGetAttribute(nullptr, cudaDevAttrWarpSize, 0));
  } catch (const rp::gpu_error &e) {
    thrown = true;
    EXPECT_EQ(dynamic_cast<const rp::gpu_fatal_error *>(&e), nullptr);
    EXPECT_EQ(dynamic_cast<const rp::gpu_out_of_memory *>(&e), nullptr);
    EXPECT_EQ(e.code(), int(cudaErrorInvalidValue)) << e.what();
    EXPECT_TRUE(contains(e.what(), "cudaErrorInvalidValue")) << e.what();
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // The no-throw form returns the code and clears it.
  EXPECT_EQ(RESPROJ_CUDA_TRY_NOTHROW(cudaSetDevice(gpu::device_count())),
            cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---------------------------------------------------------------------------
// Devices and pointers
// ---------------------------------------------------------------------------

TEST_F(GpuTest, DeviceGuardRestores) {
  const int before = gpu::current_device();
  {
    gpu::device_guard guard(before);
    EXPECT_EQ(gpu::current_device(), before);
  }
  EXPECT_EQ(gpu::current_device(), before);
  EXPECT_THROW(gpu::device_guard(gpu::device_count()), rp::gpu_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(gpu::current_device(), before);
  {
    gpu::device_guard guard(gpu::device_count(), std::nothrow);
    EXPECT_FALSE(guard.ok());
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(gpu::current_device(), before);
  if (gpu::device_count() >= 2) {
    const int other = before == 0 ? 1 : 0;
    {
      gpu::device_guard guard(other);
      EXPECT_EQ(gpu::current_device(), other);
    }
    EXPECT_EQ(gpu::current_device(), before);
  }
}

TEST_F(GpuTest, QueryPointerKinds) {
  const int dev = gpu::current_device();
  gpu::stream s;

  // null
  gpu::pointer_info info = gpu::query_pointer(nullptr);
  EXPECT_FALSE(info.device_accessible);
  EXPECT_EQ(info.device, -1);
  EXPECT_NO_THROW(gpu::require_device_pointer(nullptr, dev, "input"));

  // pageable host memory
  void *host = std::malloc(256);
  ASSERT_NE(host, nullptr);
  info = gpu::query_pointer(host);
  EXPECT_FALSE(info.device_accessible);
  EXPECT_FALSE(info.managed);
  EXPECT_FALSE(info.pinned_host);
  EXPECT_EQ(info.device, -1);
  EXPECT_FALSE(gpu::is_pinned(host));
  std::string what = expect_invalid_argument(
      [&] { gpu::require_device_pointer(host, dev, "input"); }, "input");
  EXPECT_TRUE(contains(what, "host memory, not device memory")) << what;
  std::free(host);

  // pinned host memory
  gpu::pinned_buffer<float> pinned(64);
  info = gpu::query_pointer(pinned.data());
  EXPECT_FALSE(info.device_accessible);
  EXPECT_TRUE(info.pinned_host);
  EXPECT_FALSE(info.managed);
  EXPECT_TRUE(gpu::is_pinned(pinned.data()));
  EXPECT_TRUE(gpu::is_pinned(pinned.data() + 10)); // interior pointer
  what = expect_invalid_argument(
      [&] { gpu::require_device_pointer(pinned.data(), dev, "pinned_input"); },
      "pinned_input");
  EXPECT_TRUE(contains(what, "pinned")) << what;
  EXPECT_TRUE(contains(what, "host memory, not device memory")) << what;

  // device memory
  gpu::device_buffer<float> d(64, s);
  info = gpu::query_pointer(d.data());
  EXPECT_TRUE(info.device_accessible);
  EXPECT_FALSE(info.managed);
  EXPECT_FALSE(info.pinned_host);
  EXPECT_EQ(info.device, dev);
  EXPECT_FALSE(gpu::is_pinned(d.data()));
  EXPECT_NO_THROW(gpu::require_device_pointer(d.data(), dev, "image"));
  EXPECT_NO_THROW(gpu::require_device_pointer(d.data() + 5, dev, "image"));
  what = expect_invalid_argument(
      [&] { gpu::require_device_pointer(d.data(), dev + 1, "image"); }, "image");
  EXPECT_TRUE(contains(what, "on device " + std::to_string(dev) + ", expected device " +
                                 std::to_string(dev + 1)))
      << what;

  // managed memory: accepted for any device
  void *managed = nullptr;
  RESPROJ_CUDA_TRY(cudaMallocManaged(&managed, 4096));
  info = gpu::query_pointer(managed);
  EXPECT_TRUE(info.device_accessible);
  EXPECT_TRUE(info.managed);
  EXPECT_FALSE(gpu::is_pinned(managed));
  EXPECT_NO_THROW(gpu::require_device_pointer(managed, dev, "m"));
  EXPECT_NO_THROW(gpu::require_device_pointer(managed, dev + 1, "m"));
  RESPROJ_CUDA_TRY(cudaFree(managed));

  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------

TEST_F(GpuTest, StreamIsNonBlockingAndKnowsItsDevice) {
  gpu::stream s;
  unsigned flags = 0;
  RESPROJ_CUDA_TRY(cudaStreamGetFlags(s.get(), &flags));
  EXPECT_TRUE(flags & cudaStreamNonBlocking);
  EXPECT_EQ(s.device(), gpu::current_device());
  EXPECT_FALSE(s.is_capturing());
  s.synchronize();
  EXPECT_TRUE(s.query());
  EXPECT_EQ(s.ref().get(), s.get());

  gpu::stream on_device(gpu::current_device());
  EXPECT_EQ(on_device.device(), gpu::current_device());
  EXPECT_THROW(gpu::stream bad(gpu::device_count()), rp::gpu_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, StreamPriorityIsTheDevicesGreatestOrLeast) {
  int least = 0, greatest = 0;
  RESPROJ_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  gpu::stream plain;
  const gpu::stream high(gpu::current_device(), gpu::stream_priority::high);
  const gpu::stream normal(gpu::current_device(), gpu::stream_priority::normal);
  int p_plain = 1, p_high = 1, p_normal = 1;
  RESPROJ_CUDA_TRY(cudaStreamGetPriority(plain.get(), &p_plain));
  RESPROJ_CUDA_TRY(cudaStreamGetPriority(high.get(), &p_high));
  RESPROJ_CUDA_TRY(cudaStreamGetPriority(normal.get(), &p_normal));
  EXPECT_EQ(p_high, greatest);
  EXPECT_EQ(p_normal, least);
  EXPECT_EQ(p_normal, p_plain);
  unsigned flags = 0;
  RESPROJ_CUDA_TRY(cudaStreamGetFlags(high.get(), &flags));
  EXPECT_TRUE(flags & cudaStreamNonBlocking);
  EXPECT_THROW(gpu::stream bad(gpu::device_count(), gpu::stream_priority::high),
               rp::gpu_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, StreamRefConversionsAndLegacyRejection) {
  gpu::stream s;
  const cuda::stream_ref cccl(s.get());
  const gpu::stream_ref from_cccl(cccl);
  EXPECT_EQ(from_cccl.get(), s.get());
  EXPECT_EQ(from_cccl.to_cccl().get(), s.get());
  const gpu::stream_ref from_owner = s;
  EXPECT_EQ(from_owner, from_cccl);

  EXPECT_TRUE(gpu::stream_ref().is_legacy_default());
  EXPECT_TRUE(gpu::stream_ref(cudaStreamLegacy).is_legacy_default());
  EXPECT_FALSE(gpu::stream_ref(cudaStreamPerThread).is_legacy_default());
  EXPECT_FALSE(from_owner.is_legacy_default());
  expect_invalid_argument(
      [] { gpu::detail::require_explicit_stream(gpu::stream_ref(), "stream"); },
      "stream");
  expect_invalid_argument(
      [] { gpu::detail::require_explicit_stream(cudaStreamLegacy, "s"); }, "s");
  EXPECT_NO_THROW(gpu::detail::require_explicit_stream(cudaStreamPerThread, "s"));

  // the per-thread default stream is accepted everywhere
  gpu::device_buffer<int> d(100, cudaStreamPerThread);
  d.fill(5);
  EXPECT_EQ(download(d), std::vector<int>(100, 5));
}

TEST_F(GpuTest, MovedFromStreamIsNotDestroyedTwice) {
  gpu::stream a;
  const cudaStream_t handle = a.get();
  gpu::stream b(std::move(a));
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(a.device(), -1);
  EXPECT_TRUE(a.ref().is_legacy_default()); // compute calls will refuse it
  EXPECT_EQ(b.get(), handle);
  b.synchronize();

  gpu::stream c;
  c = std::move(b); // destroys c's own stream, takes handle
  EXPECT_EQ(c.get(), handle);
  EXPECT_EQ(b.get(), nullptr);
  gpu::device_buffer<float> d(10, c);
  d.fill(2.0f);
  EXPECT_EQ(download(d), std::vector<float>(10, 2.0f));
  expect_invalid_argument([&] { d.fill(1.0f, a); }, "stream");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, EventTimingAndCrossStreamWait) {
  gpu::stream producer, consumer;
  gpu::event start(true), stop(true);
  gpu::device_buffer<float> d(std::size_t(1) << 24, producer);
  start.record(producer);
  d.fill(3.0f);
  stop.record(producer);
  stop.synchronize();
  EXPECT_TRUE(start.query());
  EXPECT_TRUE(stop.query());
  const float ms = gpu::event::elapsed_ms(start, stop);
  EXPECT_GE(ms, 0.0f);

  // consumer waits for producer through an event, without host sync
  gpu::event ready;
  EXPECT_EQ(ready.device(), gpu::current_device());
  d.fill(7.0f);
  ready.record(producer);
  ready.make_wait(consumer);
  gpu::pinned_buffer<float> pinned(d.size());
  d.copy_to_host(pinned.span(), consumer);
  consumer.synchronize();
  for (std::size_t i = 0; i < d.size(); i += 4097)
    ASSERT_EQ(pinned[i], 7.0f) << i;
  EXPECT_EQ(pinned[d.size() - 1], 7.0f);

  // events without timing cannot be timed: gpu_error, no stale error
  gpu::event a, b;
  a.record(producer);
  b.record(producer);
  producer.synchronize();
  EXPECT_THROW(gpu::event::elapsed_ms(a, b), rp::gpu_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // move
  const cudaEvent_t handle = a.get();
  gpu::event moved(std::move(a));
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(moved.get(), handle);
  expect_invalid_argument([&] { moved.record(gpu::stream_ref()); }, "stream");
}

// ---------------------------------------------------------------------------
// Memory pool
// ---------------------------------------------------------------------------

TEST_F(GpuTest, MemoryPoolConfiguration) {
  const int dev = gpu::current_device();
  gpu::stream s;
  { gpu::device_buffer<float> warm(16, s); } // first allocation configures the pool
  s.synchronize();
  cudaMemPool_t pool = nullptr;
  RESPROJ_CUDA_TRY(cudaDeviceGetMemPool(&pool, dev));
  std::uint64_t threshold = 0;
  RESPROJ_CUDA_TRY(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, UINT64_MAX);
  int internal = 1;
  RESPROJ_CUDA_TRY(cudaMemPoolGetAttribute(
      pool, cudaMemPoolReuseAllowInternalDependencies, &internal));
  EXPECT_EQ(internal, 0);

  gpu::configure_memory_pool(dev, std::uint64_t(1) << 20);
  RESPROJ_CUDA_TRY(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, std::uint64_t(1) << 20);
  gpu::configure_memory_pool(dev); // back to "keep everything"
  RESPROJ_CUDA_TRY(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, UINT64_MAX);

  EXPECT_GE(gpu::pool_reserved_bytes(dev), gpu::pool_used_bytes(dev));
  expect_invalid_argument([] { gpu::configure_memory_pool(-1); }, "device");
  EXPECT_THROW(gpu::pool_used_bytes(gpu::device_count()), rp::gpu_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

namespace {
/// Keeps its block busy for about `cycles` clock cycles, then writes `*out`.
__global__ void busy_kernel(long long cycles, float *out) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *out = 1.f;
}
} // namespace

TEST_F(GpuTest, AllocationDoesNotWaitForAnotherStreamsWork) {
  // Memory freed on a stream that is still busy is not handed to an
  // allocation on another stream (which would then wait for that work).
  gpu::stream busy, other;
  { gpu::device_buffer<float> warm(16, busy); } // configures the pool
  busy.synchronize();
  {
    gpu::device_buffer<float> x(std::size_t(1) << 20, busy);
    busy_kernel<<<1, 1, 0, busy.get()>>>(2000000000LL, x.data()); // about a second
    RESPROJ_CUDA_TRY(cudaGetLastError());
  } // x freed in busy's order, after the kernel
  {
    gpu::device_buffer<float> y(std::size_t(1) << 20, other);
    y.zero(other);
  }
  other.synchronize();
  EXPECT_FALSE(busy.query()) << "the allocation waited for the other stream's kernel";
  busy.synchronize();
}

TEST_F(GpuTest, PoolUsageReturnsToBaseline) {
  const int dev = gpu::current_device();
  gpu::stream s;
  s.synchronize();
  const std::uint64_t baseline = gpu::pool_used_bytes(dev);
  const std::size_t n = std::size_t(1) << 24; // 64 MiB of float
  {
    gpu::device_buffer<float> a(n, s);
    gpu::device_buffer<float> b(n, s);
    a.zero();
    b.fill(1.0f);
    s.synchronize();
    EXPECT_GE(gpu::pool_used_bytes(dev), baseline + 2 * n * sizeof(float));
    gpu::device_buffer<float> c(std::move(a));
    b = std::move(c); // frees b's old allocation
  }
  s.synchronize();
  EXPECT_EQ(gpu::pool_used_bytes(dev), baseline);
  // release threshold: the memory stays reserved for reuse
  EXPECT_GE(gpu::pool_reserved_bytes(dev), 2 * n * sizeof(float));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, PoolPeakCoversTheLargestMomentSinceReset) {
  const int dev = gpu::current_device();
  gpu::stream s;
  s.synchronize();
  gpu::reset_pool_peak(dev);
  const std::uint64_t baseline = gpu::pool_used_bytes(dev);
  EXPECT_EQ(gpu::pool_peak_used_bytes(dev), baseline);
  const std::size_t n = std::size_t(1) << 24; // 64 MiB of float
  {
    gpu::device_buffer<float> a(n, s), b(n, s);
    s.synchronize();
  }
  s.synchronize();
  EXPECT_EQ(gpu::pool_used_bytes(dev), baseline);
  EXPECT_GE(gpu::pool_peak_used_bytes(dev), baseline + 2 * n * sizeof(float));
  gpu::reset_pool_peak(dev);
  EXPECT_LT(gpu::pool_peak_used_bytes(dev), baseline + n * sizeof(float));
  EXPECT_THROW(gpu::pool_peak_used_bytes(gpu::device_count()), rp::gpu_error);
}

// ---------------------------------------------------------------------------
// device_buffer
// ---------------------------------------------------------------------------

template <class T> class DeviceBufferTyped : public GpuTest {};
using element_types = ::testing::Types<float, double, sample>;
TYPED_TEST_SUITE(DeviceBufferTyped, element_types);

TYPED_TEST(DeviceBufferTyped, Roundtrip) {
  using T = TypeParam;
  gpu::stream s;
  const std::size_t n = 100003;
  const std::vector<T> host = make_values<T>(n);

  gpu::device_buffer<T> d(n, s);
  EXPECT_EQ(d.size(), n);
  EXPECT_EQ(d.size_bytes(), n * sizeof(T));
  EXPECT_FALSE(d.empty());
  EXPECT_NE(d.data(), nullptr);
  EXPECT_EQ(d.device(), gpu::current_device());
  EXPECT_EQ(d.stream(), s.ref());
  EXPECT_EQ(d.span().data(), d.data());
  EXPECT_EQ(d.cspan().size(), n);
  EXPECT_EQ(d.view().data(), d.data());
  EXPECT_EQ(d.cview().size(), n);

  // pageable, pointer form, own stream
  d.copy_from_host(host.data(), n);
  EXPECT_EQ(download(d), host);

  // pinned, span form, explicit stream
  gpu::pinned_buffer<T> pinned_in(n), pinned_out(n);
  const std::vector<T> other = make_values<T>(n, 17);
  std::copy(other.begin(), other.end(), pinned_in.begin());
  d.copy_from_host(pinned_in.cspan(), s);
  d.copy_to_host(pinned_out.span(), s);
  s.synchronize();
  EXPECT_TRUE(std::equal(pinned_out.begin(), pinned_out.end(), other.begin()));

  // ranges: write host[500, 510) to [3, 13), read back [0, 20)
  d.copy_from_host(rp::span<const T>(host.data() + 500, 10), 10, 3, s);
  std::vector<T> part(20);
  d.copy_to_host(rp::span<T>(part.data(), part.size()), 20, 0, s);
  s.synchronize();
  for (std::size_t i = 0; i < 20; ++i) {
    const T expected = (i >= 3 && i < 13) ? host[500 + i - 3] : other[i];
    EXPECT_EQ(part[i], expected) << i;
  }
  d.copy_from_host(host.data() + 1, 2, n - 2, s); // last two elements
  std::vector<T> tail(2);
  d.copy_to_host(tail.data(), 2, n - 2, s);
  s.synchronize();
  EXPECT_EQ(tail[0], host[1]);
  EXPECT_EQ(tail[1], host[2]);

  // make_device_buffer from const and non-const spans
  gpu::device_buffer<T> made =
      gpu::make_device_buffer(rp::span<const T>(host.data(), n), s);
  EXPECT_EQ(made.size(), n);
  EXPECT_EQ(download(made), host);
  std::vector<T> mutable_host = host;
  gpu::device_buffer<T> made2 =
      gpu::make_device_buffer(rp::span<T>(mutable_host.data(), mutable_host.size()), s);
  EXPECT_EQ(download(made2), host);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, ZeroSizeBuffer) {
  gpu::stream s;
  const int dev = gpu::current_device();
  s.synchronize();
  const std::uint64_t baseline = gpu::pool_used_bytes(dev);
  {
    gpu::device_buffer<float> d(0, s);
    EXPECT_EQ(d.data(), nullptr);
    EXPECT_EQ(d.size(), 0u);
    EXPECT_TRUE(d.empty());
    EXPECT_EQ(d.device(), dev);
    EXPECT_EQ(d.stream(), s.ref());
    d.fill(1.0f);
    d.zero();
    d.copy_to_host(rp::span<float>());
    d.copy_from_host(rp::span<const float>());
    d.copy_from_host(nullptr, 0);
    EXPECT_EQ(gpu::pool_used_bytes(dev), baseline);
    gpu::device_buffer<float> made = gpu::make_device_buffer(rp::span<const float>(), s);
    EXPECT_TRUE(made.empty());
  }
  gpu::device_buffer<double> empty; // default: no device, no stream
  EXPECT_EQ(empty.device(), -1);
  EXPECT_TRUE(empty.stream().is_legacy_default());
  empty.zero();    // no-op
  empty.fill(1.0); // no-op
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, MoveSemantics) {
  const int dev = gpu::current_device();
  gpu::stream s;
  s.synchronize();
  const std::uint64_t baseline = gpu::pool_used_bytes(dev);
  {
    gpu::device_buffer<int> a(1000, s);
    a.fill(11);
    int *const p = a.data();
    gpu::device_buffer<int> b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.device(), -1);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.size(), 1000u);
    EXPECT_EQ(b.stream(), s.ref());
    a.fill(3); // empty: no-op

    gpu::device_buffer<int> c(10, s);
    c = std::move(b); // c's 10 ints freed first
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(c.size(), 1000u);
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(download(c), std::vector<int>(1000, 11));

    // moving an empty buffer into a full one frees the full one
    c = gpu::device_buffer<int>();
    EXPECT_EQ(c.data(), nullptr);
  }
  s.synchronize();
  EXPECT_EQ(gpu::pool_used_bytes(dev), baseline); // all freed exactly once
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, FillValues) {
  gpu::stream s, other;
  const std::size_t n = 3000001; // more than one grid-stride sweep
  gpu::device_buffer<float> f(n, s);
  f.fill(2.5f); // kernel path
  EXPECT_EQ(download(f), std::vector<float>(n, 2.5f));
  f.fill(0.0f); // memset path
  EXPECT_EQ(download(f), std::vector<float>(n, 0.0f));
  f.fill(-0.0f); // not all-zero bytes: kernel path
  {
    const std::vector<float> got = download(f);
    EXPECT_TRUE(std::signbit(got[0]));
    EXPECT_TRUE(std::signbit(got[n - 1]));
  }
  f.fill(1.0f);
  f.zero();
  EXPECT_EQ(download(f), std::vector<float>(n, 0.0f));

  gpu::device_buffer<int> i(1001, s);
  i.fill(-1); // all bytes 0xFF: memset path
  EXPECT_EQ(download(i), std::vector<int>(1001, -1));
  i.fill(0x01010101); // equal non-zero bytes: memset path
  EXPECT_EQ(download(i), std::vector<int>(1001, 0x01010101));
  i.fill(42, other); // explicit stream
  other.synchronize();
  EXPECT_EQ(download(i), std::vector<int>(1001, 42));

  gpu::device_buffer<double> d(777, s);
  d.fill(-1.25);
  EXPECT_EQ(download(d), std::vector<double>(777, -1.25));

  gpu::device_buffer<sample> st(513, s);
  const sample v{7, 0.5f, 3.25};
  st.fill(v);
  EXPECT_EQ(download(st), std::vector<sample>(513, v));
  st.zero();
  EXPECT_EQ(download(st), std::vector<sample>(513, sample{0, 0.0f, 0.0}));

  gpu::device_buffer<unsigned char> bytes(99, s);
  bytes.fill(0xAB);
  EXPECT_EQ(download(bytes), std::vector<unsigned char>(99, 0xAB));

  expect_invalid_argument([&] { f.fill(1.0f, gpu::stream_ref()); }, "stream");
  expect_invalid_argument([&] { f.zero(cudaStreamLegacy); }, "stream");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, BadCopiesThrowBeforeTouchingAnything) {
  gpu::stream s;
  gpu::device_buffer<float> d(100, s);
  d.fill(7.0f);
  s.synchronize();
  std::vector<float> small(50, -1.0f);
  const std::vector<float> untouched = small;

  std::string what = expect_invalid_argument(
      [&] { d.copy_to_host(rp::span<float>(small.data(), small.size()), s); }, "dst");
  EXPECT_TRUE(contains(what, "too small")) << what;
  expect_invalid_argument(
      [&] { d.copy_to_host(rp::span<float>(small.data(), small.size())); }, "dst");
  expect_invalid_argument(
      [&] { d.copy_to_host(rp::span<float>(small.data(), small.size()), 60, 0, s); },
      "dst");
  expect_invalid_argument([&] { d.copy_to_host(small.data(), 101); }, "count");
  expect_invalid_argument([&] { d.copy_to_host(small.data(), 10, 95, s); }, "count");
  expect_invalid_argument([&] { d.copy_to_host(small.data(), 1, 101, s); }, "offset");
  expect_invalid_argument([&] { d.copy_to_host(nullptr, 10, 0, s); }, "dst");
  expect_invalid_argument([&] { d.copy_to_host(small.data(), 10, 0, gpu::stream_ref()); },
                          "stream");
  s.synchronize();
  EXPECT_EQ(small, untouched); // destination untouched

  what = expect_invalid_argument(
      [&] { d.copy_from_host(rp::span<const float>(small.data(), small.size()), s); },
      "src");
  EXPECT_TRUE(contains(what, "too small")) << what;
  expect_invalid_argument(
      [&] { d.copy_from_host(rp::span<const float>(small.data(), small.size())); },
      "src");
  expect_invalid_argument(
      [&] {
        d.copy_from_host(rp::span<const float>(small.data(), small.size()), 60, 0, s);
      },
      "src");
  expect_invalid_argument(
      [&] {
        d.copy_from_host(rp::span<const float>(small.data(), small.size()), 50, 60, s);
      },
      "count");
  expect_invalid_argument([&] { d.copy_from_host(small.data(), 101); }, "count");
  expect_invalid_argument([&] { d.copy_from_host(small.data(), 0, 101); }, "offset");
  expect_invalid_argument([&] { d.copy_from_host(nullptr, 1); }, "src");
  expect_invalid_argument([&] { d.copy_from_host(small.data(), 1, 0, cudaStreamLegacy); },
                          "stream");
  EXPECT_EQ(download(d), std::vector<float>(100, 7.0f)); // device untouched

  expect_invalid_argument([&] { gpu::device_buffer<float>(10, gpu::stream_ref()); },
                          "stream");
  expect_invalid_argument([&] { gpu::device_buffer<float>(10, cudaStreamLegacy); },
                          "stream");
  expect_invalid_argument([&] { gpu::device_buffer<double>(SIZE_MAX / 4, s); }, "count");
  expect_invalid_argument(
      [&] { gpu::make_device_buffer(rp::span<const float>(nullptr, 3), s); }, "host");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, StreamOfAnotherDeviceIsRejected) {
  if (gpu::device_count() < 2)
    GTEST_SKIP() << "needs two devices";
  gpu::stream on1(1);
  gpu::device_guard guard(0);
  expect_invalid_argument([&] { gpu::device_buffer<float>(10, on1); }, "stream");
}

TEST_F(GpuTest, BuffersOnTwoDevices) {
  if (gpu::device_count() < 2)
    GTEST_SKIP() << "needs two devices";
  gpu::device_guard on0(0);
  gpu::stream s0;
  gpu::stream s1(1);
  EXPECT_EQ(s1.device(), 1);
  EXPECT_EQ(gpu::current_device(), 0);
  s1.synchronize();
  std::unique_ptr<gpu::device_buffer<float>> b;
  {
    gpu::device_guard on1(1);
    b = std::make_unique<gpu::device_buffer<float>>(std::size_t(1) << 20, s1);
  }
  const std::uint64_t used1 = gpu::pool_used_bytes(1);
  cudaMemPool_t pool1 = nullptr;
  RESPROJ_CUDA_TRY(cudaDeviceGetMemPool(&pool1, 1));
  std::uint64_t threshold = 0;
  RESPROJ_CUDA_TRY(
      cudaMemPoolGetAttribute(pool1, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, UINT64_MAX);
  EXPECT_EQ(b->device(), 1);
  EXPECT_EQ(gpu::current_device(), 0);
  b->fill(3.0f); // device 0 current: switches to device 1 for the launch
  EXPECT_EQ(gpu::current_device(), 0);
  EXPECT_EQ(download(*b), std::vector<float>(b->size(), 3.0f));
  EXPECT_EQ(gpu::query_pointer(b->data()).device, 1);
  expect_invalid_argument([&] { gpu::require_device_pointer(b->data(), 0, "x"); }, "x");

  // cross-device ordering with an event of device 0 waited on by device 1
  gpu::device_buffer<float> a(16, s0);
  gpu::event done;
  a.fill(1.0f);
  done.record(s0);
  done.make_wait(s1);
  b->zero();
  b.reset(); // frees on device 1 while device 0 is current
  EXPECT_EQ(gpu::current_device(), 0);
  s1.synchronize();
  EXPECT_EQ(gpu::pool_used_bytes(1), used1 - (std::uint64_t(4) << 20));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---------------------------------------------------------------------------
// Graph capture
// ---------------------------------------------------------------------------

// A buffer allocated before the capture and destroyed during it: nothing is
// recorded into the graph, the capture stays valid, the allocation is parked
// and freed (on its stream) by flush_deferred_frees after the capture.
TEST_F(GpuTest, DestroyDuringCaptureParksTheFree) {
  const int dev = gpu::current_device();
  gpu::stream s;
  gpu::device_buffer<float> out(1024, s);
  out.zero();
  const std::size_t parked_before = gpu::deferred_free_count();
  const std::size_t n = std::size_t(1) << 20;
  auto victim = std::make_unique<gpu::device_buffer<float>>(n, s);
  victim->fill(1.0f);
  s.synchronize();
  const std::uint64_t used_with_victim = gpu::pool_used_bytes(dev);

  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_TRUE(s.is_capturing());
  out.fill(4.0f); // captured kernel node
  victim.reset(); // destroyed while capturing
  EXPECT_EQ(gpu::deferred_free_count(), parked_before + 1);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_FALSE(s.is_capturing());

  const node_counts nodes = count_nodes(graph);
  EXPECT_EQ(nodes.total, 1u);
  EXPECT_EQ(nodes.kernel, 1u);
  EXPECT_EQ(nodes.free, 0u);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
  s.synchronize();
  EXPECT_EQ(download(out), std::vector<float>(1024, 4.0f));

  EXPECT_EQ(gpu::pool_used_bytes(dev), used_with_victim); // still parked
  expect_invalid_argument([] { gpu::flush_deferred_frees(gpu::stream_ref()); }, "stream");
  gpu::flush_deferred_frees(s);
  EXPECT_EQ(gpu::deferred_free_count(), parked_before);
  s.synchronize();
  const std::uint64_t freed = used_with_victim - gpu::pool_used_bytes(dev);
  EXPECT_GE(freed, n * sizeof(float));
  EXPECT_LT(freed, n * sizeof(float) + (std::uint64_t(2) << 20));

  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A temporary allocated and destroyed inside the capture: allocation and free
// become graph nodes, and the graph can be launched repeatedly.
TEST_F(GpuTest, TemporaryInsideCaptureBecomesGraphAllocAndFree) {
  gpu::stream s;
  gpu::device_buffer<float> out(4096, s);
  out.zero();
  s.synchronize();
  const std::size_t parked_before = gpu::deferred_free_count();

  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  {
    gpu::device_buffer<float> tmp(out.size(), s);
    tmp.fill(2.5f);
    RESPROJ_CUDA_TRY(cudaMemcpyAsync(out.data(), tmp.data(), out.size_bytes(),
                                     cudaMemcpyDeviceToDevice, s.get()));
  }
  EXPECT_EQ(gpu::deferred_free_count(), parked_before);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  const node_counts nodes = count_nodes(graph);
  EXPECT_EQ(nodes.alloc, 1u);
  EXPECT_EQ(nodes.free, 1u);
  EXPECT_EQ(nodes.kernel, 1u);
  EXPECT_EQ(nodes.memcpy, 1u);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int launch = 0; launch < 3; ++launch) {
    out.zero();
    ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess) << launch;
    EXPECT_EQ(download(out), std::vector<float>(4096, 2.5f)) << launch;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A buffer allocated inside a capture but destroyed after it: the graph's
// allocation is freed (outside the graph) on the buffer's stream, which CUDA
// allows once the graph has been launched; the relaunch then succeeds (it
// would fail with an unfreed allocation).
TEST_F(GpuTest, GraphAllocationOutlivingItsCapture) {
  gpu::stream s;
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  auto kept = std::make_unique<gpu::device_buffer<float>>(1024, s);
  kept->fill(6.0f);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(count_nodes(graph).alloc, 1u);
  EXPECT_EQ(count_nodes(graph).free, 0u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
  EXPECT_EQ(download(*kept), std::vector<float>(1024, 6.0f));
  float *const address = kept->data();
  kept.reset(); // not capturing any more: stream-ordered free on s
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess); // allocation was freed
  RESPROJ_CUDA_TRY(cudaFreeAsync(address, s.get()));      // free the relaunch's
  s.synchronize();
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Creating and destroying a buffer of a stream that is NOT capturing, while
// another stream of this thread is capturing in global mode, allocates and
// frees normally and does not disturb the capture (CUDA refuses these pool
// calls in global mode unless made in relaxed mode). So does creating and
// destroying a pinned buffer, and querying the pool.
TEST_F(GpuTest, UnrelatedFreesDuringGlobalCapture) {
  const int dev = gpu::current_device();
  gpu::stream captured, idle;
  gpu::device_buffer<float> out(256, captured);
  out.zero();
  auto other = std::make_unique<gpu::device_buffer<float>>(std::size_t(1) << 20, idle);
  auto pinned = std::make_unique<gpu::pinned_buffer<float>>(1024);
  idle.synchronize();
  captured.synchronize();
  const std::uint64_t used_before = gpu::pool_used_bytes(dev);
  const std::size_t parked_before = gpu::deferred_free_count();

  ASSERT_EQ(cudaStreamBeginCapture(captured.get(), cudaStreamCaptureModeGlobal),
            cudaSuccess);
  out.fill(9.0f);
  other.reset();  // idle stream: ordinary stream-ordered free
  pinned.reset(); // cudaFreeHost under relaxed capture mode
  {
    gpu::pinned_buffer<double> scratch(64);
    scratch[0] = 1.0;
  }
  { gpu::device_buffer<int> on_idle(1000, idle); } // allocate + free on idle
  EXPECT_GT(gpu::pool_reserved_bytes(dev), 0u);    // pool queries are fine too
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(captured.get(), &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(gpu::deferred_free_count(), parked_before);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, captured.get()), cudaSuccess);
  EXPECT_EQ(download(out), std::vector<float>(256, 9.0f));
  idle.synchronize();
  EXPECT_LT(gpu::pool_used_bytes(dev), used_before);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// A capture invalidated by an illegal call: destroying buffers then leaves no
// stale error; the parked free is drained by the next allocation on the
// stream, and a gpu::stream drains on destruction.
TEST_F(GpuTest, DestroyDuringInvalidatedCapture) {
  const int dev = gpu::current_device();
  const std::size_t parked_before = gpu::deferred_free_count();
  std::uint64_t used_before = 0;
  {
    gpu::stream s;
    s.synchronize();
    used_before = gpu::pool_used_bytes(dev);
    auto victim = std::make_unique<gpu::device_buffer<int>>(1 << 16, s);
    auto victim2 = std::make_unique<gpu::device_buffer<int>>(1 << 16, s);
    s.synchronize();

    ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
    // Synchronising a capturing stream is illegal and invalidates the capture.
    EXPECT_NE(cudaStreamSynchronize(s.get()), cudaSuccess);
    (void)cudaGetLastError();
    victim.reset();
    EXPECT_EQ(gpu::deferred_free_count(), parked_before + 1);
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    (void)cudaGetLastError();

    // next allocation on s drains the parked free
    gpu::device_buffer<int> next(16, s);
    EXPECT_EQ(gpu::deferred_free_count(), parked_before);
    next = gpu::device_buffer<int>(); // (a free on s would drain too)

    // park another one, then let the stream's destructor drain it
    ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
    victim2.reset();
    EXPECT_EQ(gpu::deferred_free_count(), parked_before + 1);
    ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
    if (graph != nullptr)
      EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(gpu::deferred_free_count(), parked_before + 1);
    // `s` is destroyed at the end of this scope and drains victim2
  }
  EXPECT_EQ(gpu::deferred_free_count(), parked_before);
  RESPROJ_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_EQ(gpu::pool_used_bytes(dev), used_before);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---------------------------------------------------------------------------
// pinned_buffer
// ---------------------------------------------------------------------------

TEST_F(GpuTest, PinnedBufferRoundtripAndMoves) {
  gpu::stream s;
  gpu::pinned_buffer<double> h(1000);
  EXPECT_EQ(h.size(), 1000u);
  EXPECT_EQ(h.size_bytes(), 8000u);
  EXPECT_TRUE(gpu::is_pinned(h.data()));
  std::iota(h.begin(), h.end(), 0.5);
  gpu::device_buffer<double> d = gpu::make_device_buffer(h.cspan(), s);
  gpu::pinned_buffer<double> back(1000);
  d.copy_to_host(back.span());
  s.synchronize();
  EXPECT_TRUE(std::equal(back.begin(), back.end(), h.begin()));
  EXPECT_EQ(back[999], 999.5);

  double *const p = h.data();
  gpu::pinned_buffer<double> moved(std::move(h));
  EXPECT_EQ(h.data(), nullptr);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(moved.data(), p);
  back = std::move(moved); // frees back's memory first
  EXPECT_EQ(back.data(), p);
  EXPECT_EQ(moved.data(), nullptr);

  gpu::pinned_buffer<float> none(0);
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_FALSE(gpu::is_pinned(none.data()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}
