// A plain C++ (g++) translation unit using the GPU backend through the
// compiled target: the path for toolkits such as STIR that cannot include
// .cuh headers. Only <cuda_runtime_api.h> (plain C) is used for memory.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <vector>

#include "resproj/cpu/projector.hpp"
#include "resproj/gpu/compiled.hpp"

namespace rp = resproj;
namespace gc = resproj::gpu::compiled;

namespace {

TEST(gpu_compiled, host_compiler_can_project) {
  if (gc::device_count() == 0)
    GTEST_SKIP() << "no CUDA device available";
  const auto g = rp::image_geometry::centred({8, 12, 10}, {2.0, 1.0, 3.0});
  std::vector<float> image(std::size_t(g.num_voxels()));
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = float(i % 7) + 0.5f;
  const std::vector<float> starts = {-50, 0.3f, 0.2f, 0.1f, -50, 1.0f, -3, -4, -40};
  const std::vector<float> ends = {50, -0.3f, 0.4f, -0.2f, 50, -1.0f, 2, 5, 40};
  const std::size_t n = 3;

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<float> gpu_out(n, -1.f), host_out(n, -1.f), cpu_out(n);
  {
    gc::resident_image<float> d_img(g, stream);
    d_img.upload(rp::span<const float>(image.data(), image.size()), stream);

    // Device-resident LORs through the plain runtime API.
    float *d_lors = nullptr, *d_out = nullptr;
    ASSERT_EQ(
        cudaMalloc(reinterpret_cast<void **>(&d_lors), 2 * starts.size() * sizeof(float)),
        cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&d_out), n * sizeof(float)),
              cudaSuccess);
    cudaMemcpyAsync(d_lors, starts.data(), starts.size() * sizeof(float),
                    cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(d_lors + starts.size(), ends.data(), ends.size() * sizeof(float),
                    cudaMemcpyHostToDevice, stream);
    gc::forward(d_img.view(),
                rp::lor_view<const float>(d_lors, d_lors + starts.size(), n),
                rp::span<float>(d_out, n), stream);
    cudaMemcpyAsync(gpu_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost,
                    stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaFree(d_lors);
    cudaFree(d_out);

    // Host LORs through the streaming projector.
    gc::host_lor_projector<float> streamer(2);
    streamer.forward(d_img.view(),
                     rp::lor_view<const float>(starts.data(), ends.data(), n),
                     rp::span<float>(host_out.data(), n), stream);
  }
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);

  rp::cpu::forward<float>(rp::image_view<const float>(image.data(), g),
                          rp::lor_view<const float>(starts.data(), ends.data(), n),
                          rp::span<float>(cpu_out.data(), n));
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(gpu_out[i], cpu_out[i], 1e-5f * std::abs(cpu_out[i])) << i;
    EXPECT_NEAR(host_out[i], cpu_out[i], 1e-5f * std::abs(cpu_out[i])) << i;
  }
}

TEST(gpu_compiled, rejects_host_memory) {
  if (gc::device_count() == 0)
    GTEST_SKIP() << "no CUDA device available";
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  std::vector<float> host_image(64), out(1);
  const float a[3] = {-9, 0, 0}, b[3] = {9, 0, 0};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_THROW(
      gc::forward(rp::gpu::device_image_view<const float>(host_image.data(), g, 0),
                  rp::lor_view<const float>(a, b, 1), rp::span<float>(out.data(), 1),
                  stream),
      rp::invalid_argument);
  cudaStreamDestroy(stream);
}

} // namespace
