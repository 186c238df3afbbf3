// demo: non-TOF forward and back projection with resproj, on the CPU and,
// when built by nvcc and a GPU is present, on the GPU with the image and
// LORs resident (allocate and upload once, project, download once).
//
// Builds the reference box phantom (215 x 215 x 71 voxels of 2.78 mm) and
// the LORs of one OSEM subset of the reference scanner "dmi" (views 0, 34,
// ..., 238 of its span-1 sinogram, 4,302,720 LORs), forward projects the
// phantom, back projects a sinogram of ones and checks that the two are
// adjoint: <A x, 1> == <x, A^T 1>.
//
// usage: demo [--planes N]   use only the first N of the 1296 sinogram
//                            planes (default: all). On 2 idle cores all
//                            planes take about 10 s, --planes 106 about 1 s.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <resproj/resproj.hpp>

namespace rp = resproj;
namespace rs = resproj::scanner;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
#if defined(__CUDACC__)
namespace gpu = resproj::gpu;

/// The resident workflow: allocate once, upload once, project (any number
/// of calls, all asynchronous on one stream), download once. Compares the
/// GPU forward projection with the CPU one.
bool run_on_gpu(const rp::image_geometry &geometry, const std::vector<float> &image,
                const std::vector<float> &starts, const std::vector<float> &ends,
                int num_planes, const std::vector<float> &cpu_projection) {
  if (gpu::device_count() == 0) {
    std::printf("GPU: no CUDA device, CPU results only\n");
    return true;
  }
  const std::size_t n = starts.size() / 3;
  gpu::stream s; // non-blocking, owned
  gpu::device_image<float> d_image(geometry, s);
  gpu::device_image<float> d_back(geometry, s);
  auto d_starts =
      gpu::make_device_buffer(rp::span<const float>(starts.data(), starts.size()), s);
  auto d_ends =
      gpu::make_device_buffer(rp::span<const float>(ends.data(), ends.size()), s);
  gpu::device_buffer<float> d_projection(n, s), d_ones(n, s);
  d_image.upload(rp::span<const float>(image.data(), image.size()), s);
  d_ones.fill(1.f, s);
  const rp::lor_view<const float> lors(d_starts.data(), d_ends.data(), n);
  // The LORs are [plane][view][radial]: let neighbouring threads take
  // neighbouring planes (contiguous in z), the fast order for sinograms.
  gpu::launch_options opt;
  opt.rows = std::size_t(num_planes);

  gpu::event t0(true), t1(true), t2(true), t3(true);
  gpu::forward<float>(d_image, lors, d_projection.span(), opt, s); // warm-up
  t0.record(s);
  gpu::forward<float>(d_image, lors, d_projection.span(), opt, s);
  t1.record(s);
  d_back.zero(s); // back projection accumulates
  t2.record(s);
  gpu::back<float>(d_back, lors, d_ones.cspan(), opt, s);
  t3.record(s);
  std::vector<float> projection(n), back_projection(image.size());
  d_projection.copy_to_host(rp::span<float>(projection.data(), n), s);
  d_back.download(rp::span<float>(back_projection.data(), back_projection.size()), s);
  s.synchronize(); // the only synchronisation
  const double ms_forward = gpu::event::elapsed_ms(t0, t1);
  const double ms_back = gpu::event::elapsed_ms(t2, t3);

  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff +=
        double(projection[i] - cpu_projection[i]) * (projection[i] - cpu_projection[i]);
    norm += double(cpu_projection[i]) * cpu_projection[i];
  }
  const double rel = std::sqrt(diff / norm);
  std::printf("GPU forward: %.3f ms (%.3g LORs/s)\n", ms_forward,
              double(n) / (ms_forward * 1e-3));
  std::printf("GPU back:    %.3f ms (%.3g LORs/s)\n", ms_back,
              double(n) / (ms_back * 1e-3));
  std::printf("GPU vs CPU forward: relative difference %.2e (%s)\n", rel,
              rel < 1e-5 ? "ok" : "TOO LARGE");
  return rel < 1e-5;
}
#endif

} // namespace

int main(int argc, char **argv) {
  const auto sinogram = rs::dmi_sinogram(); // 272 views, 415 radial, 1296 planes
  int num_planes = sinogram.num_planes();
  const bool ok = argc == 1 || (argc == 3 && std::strcmp(argv[1], "--planes") == 0);
  if (ok && argc == 3)
    num_planes = std::atoi(argv[2]);
  if (!ok || num_planes < 1 || num_planes > sinogram.num_planes()) {
    std::fprintf(stderr, "usage: %s [--planes N]   (N in 1..1296)\n", argv[0]);
    return 2;
  }

  try {
    // The image: geometry (validated, centred on the origin) and contents,
    // C-ordered: voxel [i0][i1][i2] is at (i0 * n1 + i1) * n2 + i2.
    const auto geometry = rp::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
    const auto n = geometry.shape();
    std::vector<float> image(std::size_t(geometry.num_voxels()), 0.f);
    for (std::int64_t i0 = n[0] / 4; i0 < 3 * n[0] / 4; ++i0)
      for (std::int64_t i1 = n[1] / 4; i1 < 3 * n[1] / 4; ++i1)
        for (std::int64_t i2 = 0; i2 < n[2]; ++i2)
          image[std::size_t((i0 * n[1] + i1) * n[2] + i2)] = 1.f;

    // The LORs: subset 0 of 34 of the dmi sinogram, [plane][view][radial].
    auto start = std::chrono::steady_clock::now();
    const auto scanner = rs::dmi();
    const auto views = rs::subset_views(sinogram, 0, rs::dmi_num_subsets);
    std::vector<float> starts, ends; // xyz triplets, in mm
    rs::sinogram_lors(scanner, sinogram, views, 0, num_planes, starts, ends);
    const rp::lor_view<const float> lors(starts.data(), ends.data(), starts.size() / 3);
    std::printf("%zu LORs (%zu views x %d radial x %d planes) made in %.3f s\n",
                lors.count, views.size(), sinogram.num_radial, num_planes,
                seconds_since(start));

    // Forward projection: one line integral per LOR.
    std::vector<float> projection(lors.count);
    start = std::chrono::steady_clock::now();
    rp::cpu::forward(rp::image_view<const float>(image.data(), geometry), lors,
                     rp::span<float>(projection.data(), projection.size()));
    const double t_forward = seconds_since(start);

    // Back projection of ones. `back` accumulates, so start from zeros.
    const std::vector<float> ones(lors.count, 1.f);
    std::vector<float> back_projection(image.size(), 0.f);
    rp::cpu::options opt; // OpenMP default thread count
    // Each thread adds into its own image copy, summed at the end: faster
    // than atomic adds on few cores, at one extra image per thread.
    opt.accumulation = rp::cpu::back_accumulation::thread_images;
    start = std::chrono::steady_clock::now();
    rp::cpu::back(rp::image_view<float>(back_projection.data(), geometry), lors,
                  rp::span<const float>(ones.data(), ones.size()), opt);
    const double t_back = seconds_since(start);

    std::printf("forward: %.3f s (%.3g LORs/s)\n", t_forward,
                double(lors.count) / t_forward);
    std::printf("back:    %.3f s (%.3g LORs/s)\n", t_back, double(lors.count) / t_back);

    // Sums in double, and the adjointness check <A x, 1> == <x, A^T 1>.
    double sum_forward = 0, sum_back = 0, x_dot_back = 0;
    std::size_t zeros = 0;
    for (const float v : projection) {
      sum_forward += v;
      zeros += v == 0.f;
    }
    for (std::size_t i = 0; i < image.size(); ++i) {
      sum_back += back_projection[i];
      x_dot_back += double(image[i]) * back_projection[i];
    }
    std::printf("sum of forward projection  <A x, 1>   = %.9g (%.1f%% zeros)\n",
                sum_forward, 100.0 * double(zeros) / double(lors.count));
    std::printf("sum of back projection     <1, A^T 1> = %.9g\n", sum_back);
    std::printf("                           <x, A^T 1> = %.9g\n", x_dot_back);
    const double rel = std::abs(sum_forward - x_dot_back) / std::abs(sum_forward);
    std::printf("adjointness: relative difference %.2e (%s)\n", rel,
                rel < 1e-5 ? "ok" : "TOO LARGE");
    bool gpu_ok = true;
#if defined(__CUDACC__)
    gpu_ok = run_on_gpu(geometry, image, starts, ends, num_planes, projection);
#endif
    return rel < 1e-5 && gpu_ok ? 0 : 1;
  } catch (const rp::error &e) {
    std::fprintf(stderr, "%s\n", e.what()); // resproj names the bad argument
    return 2;
  }
}
