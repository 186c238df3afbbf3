// A plain C++ (g++) translation unit using the GPU backend through the
// compiled target: the path for toolkits such as STIR that cannot include
// .cuh headers. Only <cuda_runtime_api.h> (plain C) is used for memory. The
// header-only results the compiled calls must equal come from
// compiled_reference.cu (nvcc), linked into this test.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "resproj/core/operations.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/gpu/compiled.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace rp = resproj;
namespace gc = resproj::gpu::compiled;

// Header-only gpu::forward of the same calls (compiled_reference.cu).
void reference_forward(const rp::op::non_tof &op,
                       rp::gpu::device_image_view<const float> image,
                       const rp::scanner::sinogram_source<float> &lors,
                       rp::span<float> out, cudaStream_t stream);
void reference_forward(const rp::op::tof_listmode<float> &op,
                       rp::gpu::device_image_view<const float> image,
                       const rp::detector_pairs<float> &lors, rp::span<float> out,
                       cudaStream_t stream);

namespace {

const rp::op::non_tof non_tof{};

TEST(GpuCompiled, HostCompilerCanProject) {
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
    gc::device_image<float> d_img(g, stream);
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
    gc::forward(non_tof, d_img.view(),
                rp::lor_view<const float>(d_lors, d_lors + starts.size(), n),
                rp::span<float>(d_out, n), stream);
    cudaMemcpyAsync(gpu_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost,
                    stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaFree(d_lors);
    cudaFree(d_out);

    // Host LORs through the streaming projector.
    gc::lor_streamer<float> streamer(2);
    streamer.forward(non_tof, d_img.view(),
                     rp::lor_view<const float>(starts.data(), ends.data(), n),
                     rp::span<float>(host_out.data(), n), stream);
  }
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);

  rp::cpu::forward(non_tof, rp::image_view<const float>(image.data(), g),
                   rp::lor_view<const float>(starts.data(), ends.data(), n),
                   rp::span<float>(cpu_out.data(), n));
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(gpu_out[i], cpu_out[i], 1e-5f * std::abs(cpu_out[i])) << i;
    EXPECT_NEAR(host_out[i], cpu_out[i], 1e-5f * std::abs(cpu_out[i])) << i;
  }
}

TEST(GpuCompiled, RejectsHostMemory) {
  if (gc::device_count() == 0)
    GTEST_SKIP() << "no CUDA device available";
  const auto g = rp::image_geometry::centred({4, 4, 4}, {1.0, 1.0, 1.0});
  std::vector<float> host_image(64), out(1);
  const float a[3] = {-9, 0, 0}, b[3] = {9, 0, 0};
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_THROW(
      gc::forward(
          non_tof, rp::gpu::device_image_view<const float>(host_image.data(), g, 0),
          rp::lor_view<const float>(a, b, 1), rp::span<float>(out.data(), 1), stream),
      rp::invalid_argument);
  cudaStreamDestroy(stream);
}

/// A device copy of a host vector (plain runtime API), freed on scope exit.
template <class T> struct device_copy {
  T *data = nullptr;
  std::size_t size = 0;
  device_copy(const std::vector<T> &host, cudaStream_t stream) : size(host.size()) {
    if (cudaMalloc(reinterpret_cast<void **>(&data), size * sizeof(T) + 1) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
    cudaMemcpyAsync(data, host.data(), size * sizeof(T), cudaMemcpyHostToDevice, stream);
  }
  device_copy(std::size_t n, cudaStream_t stream)
      : device_copy(std::vector<T>(n), stream) {}
  ~device_copy() { cudaFree(data); }
  device_copy(const device_copy &) = delete;
  device_copy &operator=(const device_copy &) = delete;
  std::vector<T> host(cudaStream_t stream) const {
    std::vector<T> h(size);
    cudaMemcpyAsync(h.data(), data, size * sizeof(T), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    return h;
  }
};

/// ||a - b|| / ||b||. GPU and CPU may round a sample into a neighbouring
/// voxel now and then, hence the 1e-4 tolerances below (a wrong LOR source
/// or type gives errors of order 1).
double rel_diff(const std::vector<float> &a, const std::vector<float> &b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += double(a[i] - b[i]) * double(a[i] - b[i]);
    n += double(b[i]) * double(b[i]);
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

TEST(GpuCompiled, DetectorPairsAndSinogramSources) {
  if (gc::device_count() == 0)
    GTEST_SKIP() << "no CUDA device available";
  namespace rs = rp::scanner;
  const auto scanner = rs::small_test_scanner();
  const auto layout = rs::span1_sinogram(scanner, 3);
  const std::vector<float> detectors = scanner.detector_centres();
  const std::vector<std::int32_t> planes = layout.plane_table();
  const std::vector<int> views_int = rs::subset_views(layout, 1, 3);
  const std::vector<std::int32_t> views(views_int.begin(), views_int.end());
  const auto g = rp::image_geometry::centred({24, 24, 10}, {3.0, 3.0, 2.0});
  std::vector<float> image(std::size_t(g.num_voxels()));
  for (std::size_t i = 0; i < image.size(); ++i)
    image[i] = 0.3f + float((i * 29) % 83) / 83.f;
  const rp::image_view<const float> host_img(image.data(), g);
  const std::size_t nd = detectors.size() / 3;
  // Pseudo-random detector pairs and TOF bins.
  const std::size_t n = 4000;
  std::vector<std::int32_t> pairs(2 * n);
  std::vector<std::int16_t> bins(n);
  for (std::size_t i = 0; i < n; ++i) {
    pairs[2 * i] = std::int32_t((i * 7919) % nd);
    pairs[2 * i + 1] = std::int32_t((i * 104729 + 13) % nd);
    if (pairs[2 * i + 1] == pairs[2 * i])
      pairs[2 * i + 1] = std::int32_t((std::size_t(pairs[2 * i]) + 1) % nd);
    bins[i] = std::int16_t(i % 7);
  }
  rp::tof_params<float> tof;
  tof.bin_width = 10.f;
  tof.num_bins = 7;
  tof.sigma = 8.f;

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  {
    gc::device_image<float> d_img(g, stream);
    d_img.upload(rp::span<const float>(image.data(), image.size()), stream);
    device_copy<float> d_det(detectors, stream);
    device_copy<std::int32_t> d_pairs(pairs, stream), d_planes(planes, stream),
        d_views(views, stream);
    device_copy<std::int16_t> d_bins(bins, stream);
    const rp::detector_pairs<float> host_src(detectors.data(), nd, pairs.data(), n);
    const rp::detector_pairs<float> dev_src(d_det.data, nd, d_pairs.data, n);
    const auto host_sino = rs::make_sinogram_source<float>(
        detectors.data(), nd, layout.geometry(planes.data()), views.data(),
        int(views.size()), 0, layout.num_planes());
    const auto dev_sino = rs::make_sinogram_source<float>(
        d_det.data, nd, layout.geometry(d_planes.data), d_views.data, int(views.size()),
        0, layout.num_planes());
    const std::size_t ns = host_sino.count;
    const std::size_t nb = std::size_t(tof.num_bins);

    // Non-TOF forward: detector pairs and sinogram source vs the CPU.
    std::vector<float> cpu(n), cpu_s(ns);
    rp::cpu::forward(non_tof, host_img, host_src, rp::span<float>(cpu.data(), n));
    rp::cpu::forward(non_tof, host_img, host_sino, rp::span<float>(cpu_s.data(), ns));
    device_copy<float> out(n * nb, stream), out_s(ns * nb, stream);
    gc::forward(non_tof, d_img.view(), dev_src, rp::span<float>(out.data, n), stream);
    auto got = out.host(stream);
    got.resize(n);
    EXPECT_LT(rel_diff(got, cpu), 1e-4);
    gc::forward(non_tof, d_img, dev_sino, rp::span<float>(out_s.data, ns), stream);
    got = out_s.host(stream);
    got.resize(ns);
    EXPECT_LT(rel_diff(got, cpu_s), 1e-4);
    // ... and equals the header-only projector's result (same kernel).
    ASSERT_EQ(cudaMemsetAsync(out_s.data, 0xff, ns * sizeof(float), stream), cudaSuccess);
    reference_forward(non_tof, d_img, dev_sino, rp::span<float>(out_s.data, ns), stream);
    auto reference = out_s.host(stream);
    reference.resize(ns);
    EXPECT_EQ(got, reference);

    // Non-TOF back of the pairs (adjoint check against the CPU back projection).
    std::vector<float> cpu_bp(image.size(), 0.f), gpu_bp(image.size());
    rp::cpu::back(non_tof, rp::image_view<float>(cpu_bp.data(), g), host_src,
                  rp::span<const float>(cpu.data(), n));
    device_copy<float> d_vals(cpu, stream);
    d_img.zero(stream);
    gc::back(non_tof, d_img.view(), dev_src, rp::span<const float>(d_vals.data, n),
             stream);
    d_img.download(rp::span<float>(gpu_bp.data(), gpu_bp.size()), stream);
    cudaStreamSynchronize(stream);
    EXPECT_LT(rel_diff(gpu_bp, cpu_bp), 1e-4);
    d_img.upload(rp::span<const float>(image.data(), image.size()), stream);

    // TOF sinogram of the sinogram source, TOF list-mode of the pairs.
    std::vector<float> cpu_ts(ns * nb), cpu_lm(n);
    const rp::op::tof_sinogram sinogram{tof};
    const rp::op::tof_listmode host_listmode{
        tof, rp::span<const std::int16_t>(bins.data(), n)};
    const rp::op::tof_listmode dev_listmode{tof,
                                            rp::span<const std::int16_t>(d_bins.data, n)};
    rp::cpu::forward(sinogram, host_img, host_sino,
                     rp::span<float>(cpu_ts.data(), ns * nb));
    rp::cpu::forward(host_listmode, host_img, host_src,
                     rp::span<float>(cpu_lm.data(), n));
    gc::forward(sinogram, d_img.view(), dev_sino, rp::span<float>(out_s.data, ns * nb),
                stream);
    EXPECT_LT(rel_diff(out_s.host(stream), cpu_ts), 1e-4);
    gc::forward(dev_listmode, d_img.view(), dev_src, rp::span<float>(out.data, n),
                stream);
    got = out.host(stream);
    got.resize(n);
    EXPECT_LT(rel_diff(got, cpu_lm), 1e-4);
    // ... and equals the header-only projector's result (same kernel).
    ASSERT_EQ(cudaMemsetAsync(out.data, 0xff, n * sizeof(float), stream), cudaSuccess);
    reference_forward(dev_listmode, d_img, dev_src, rp::span<float>(out.data, n), stream);
    reference = out.host(stream);
    reference.resize(n);
    EXPECT_EQ(got, reference);

    // Host-streamed detector pairs and packed records.
    gc::lor_streamer<float> streamer(1500);
    std::vector<float> streamed(n, -1.f);
    const rp::detector_pairs<float> streamed_src(d_det.data, nd, pairs.data(), n);
    streamer.forward(host_listmode, d_img.view(), streamed_src,
                     rp::span<float>(streamed.data(), n), stream);
    EXPECT_LT(rel_diff(streamed, cpu_lm), 1e-4);
    const auto events = rs::pack_events(rp::span<const std::int32_t>(pairs.data(), 2 * n),
                                        rp::span<const std::int16_t>(bins.data(), n));
    std::fill(streamed.begin(), streamed.end(), -1.f);
    streamer.forward(non_tof, d_img.view(),
                     rs::listmode_records<float>(d_det.data, nd, events.data(), n),
                     rp::span<float>(streamed.data(), n), stream);
    EXPECT_LT(rel_diff(streamed, cpu), 1e-4);

    // Validation on the device.
    device_copy<rs::listmode_event> d_events(events, stream);
    const auto r =
        gc::validate_events(rp::span<const rs::listmode_event>(d_events.data, n),
                            std::int64_t(nd) - 1, 7, stream);
    const auto expected = rs::validate_events(events, std::int64_t(nd) - 1, 7);
    EXPECT_EQ(r.num_invalid, expected.num_invalid);
    EXPECT_EQ(r.first_invalid, expected.first_invalid);
    EXPECT_GT(expected.num_invalid, 0u); // the last detector is out of range
  }
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

} // namespace
