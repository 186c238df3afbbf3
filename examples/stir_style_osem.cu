// stir_style_osem: a host toolkit (like STIR) that keeps its own sinogram
// and computes its own LORs, view by view, while the image stays on the
// GPU. Each view's LORs are streamed through gpu::lor_streamer (pinned
// staging, copies of one chunk overlapping the projection of another) for
// the forward projection and again for the back projection of the host's
// EM ratio; the image update per subset runs on the GPU (Thrust).
//
// Non-TOF sinogram OSEM on the dmi scanner restricted to its first planes
// (default 106: direct planes and ring difference +-1), subsets by view;
// the data are simulated by the same streamed projector (attenuation of
// the phantom's mu-map, 30% flat background, Poisson noise).
//
// usage: stir_style_osem [--planes N] [--iterations K] [--subsets S]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <resproj/gpu/lor_streamer.cuh>
#include <resproj/io/nifti.hpp>
#include <resproj/resproj.hpp>

#include "common/osem_gpu.cuh"
#include "common/phantom.hpp"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;

int main(int argc, char **argv) {
  int planes = 106, iterations = 2, subsets = 34;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--planes"))
      planes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--iterations"))
      iterations = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--subsets"))
      subsets = std::atoi(argv[i + 1]);
  }
  if (gpu::device_count() == 0) {
    std::printf("stir_style_osem: no CUDA device\n");
    return 0;
  }
  try {
    const auto scanner = rs::dmi();
    const auto layout = rs::dmi_sinogram();
    if (planes < 1 || planes > layout.num_planes())
      planes = layout.num_planes();
    const auto geometry =
        resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
    const auto phantom = ex::nema_phantom::make();
    const std::size_t per_view = std::size_t(planes) * std::size_t(layout.num_radial);
    const int num_views = layout.num_views;

    // The toolkit's own LOR computation: one view, the chosen planes.
    std::vector<float> starts, ends;
    auto lors_of_view = [&](int view) {
      rs::sinogram_lors(scanner, layout, std::vector<int>{view}, 0, planes, starts, ends);
      return resproj::lor_view<const float>(starts.data(), ends.data(), per_view);
    };

    gpu::stream s;
    gpu::lor_streamer<float> streamer(per_view);
    gpu::device_image<float> x(geometry, s), g(geometry, s);
    std::vector<gpu::device_image<float>> sens;

    // Simulated data, per view: y ~ Poisson(m A x_true + a), m = exp(-A mu).
    const auto t0 = std::chrono::steady_clock::now();
    const auto x_true = ex::activity_image<float>(phantom, geometry);
    const auto mu = ex::mu_image<float>(phantom, geometry);
    const std::size_t nviews = static_cast<std::size_t>(num_views);
    std::vector<std::vector<float>> y(nviews), m(nviews);
    std::vector<float> q(per_view);
    double trues = 0;
    for (int v = 0; v < num_views; ++v) {
      const auto lors = lors_of_view(v);
      auto &mv = m[std::size_t(v)];
      auto &yv = y[std::size_t(v)];
      mv.resize(per_view);
      yv.resize(per_view);
      x.upload(resproj::span<const float>(mu.data(), mu.size()), s);
      streamer.forward(x.cview(), lors, resproj::span<float>(mv.data(), per_view), s);
      x.upload(resproj::span<const float>(x_true.data(), x_true.size()), s);
      streamer.forward(x.cview(), lors, resproj::span<float>(yv.data(), per_view), s);
      for (std::size_t i = 0; i < per_view; ++i) {
        mv[i] = std::exp(-mv[i]);
        yv[i] *= mv[i]; // trues
        trues += yv[i];
      }
    }
    const float a = float(0.3 / 0.7 * trues / (double(per_view) * num_views));
    std::mt19937_64 rng(11);
    for (auto &yv : y)
      for (float &v : yv) {
        std::poisson_distribution<long long> p{double(v + a)};
        v = float(p(rng));
      }
    std::printf(
        "simulated %d views x %zu LORs in %.1f s\n", num_views, per_view,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

    // Sensitivity per subset: back projection of m over the subset's views.
    for (int k = 0; k < subsets; ++k) {
      sens.emplace_back(geometry, s);
      sens.back().buffer().zero(s);
      for (int v = k; v < num_views; v += subsets)
        streamer.back(sens.back().view(), lors_of_view(v),
                      resproj::span<const float>(m[std::size_t(v)].data(), per_view), s);
    }

    // OSEM: LORs computed on the host per view, projected against the
    // resident image, ratio on the host, update on the GPU.
    const auto start = ex::start_image(geometry, 1.f);
    x.upload(resproj::span<const float>(start.data(), start.size()), s);
    std::vector<float> r(per_view);
    const auto t1 = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it)
      for (int k = 0; k < subsets; ++k) {
        g.buffer().zero(s);
        for (int v = k; v < num_views; v += subsets) {
          const auto lors = lors_of_view(v);
          streamer.forward(x.cview(), lors, resproj::span<float>(q.data(), per_view), s);
          const auto &mv = m[std::size_t(v)], &yv = y[std::size_t(v)];
          for (std::size_t i = 0; i < per_view; ++i)
            r[i] = ex::em_ratio{}(q[i], mv[i], a, yv[i]);
          streamer.back(g.view(), lors, resproj::span<const float>(r.data(), per_view),
                        s);
        }
        auto in = thrust::make_zip_iterator(
            thrust::make_tuple(x.data(), g.data(), sens[std::size_t(k)].data()));
        thrust::transform(thrust::cuda::par_nosync.on(s.get()), in, in + x.size(),
                          x.data(), ex::detail::update_op{});
      }
    s.synchronize();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    std::vector<float> h(x.size());
    x.download(resproj::span<float>(h.data(), h.size()), s);
    s.synchronize();
    std::printf("OSEM %d x %d subsets: %.2f s (%.3g LORs/s forward + back, LORs from the "
                "host)\n",
                iterations, subsets, secs,
                double(iterations) * per_view * num_views / secs);
    resproj::io::write_nifti("stir_style_osem.nii",
                             resproj::span<const float>(h.data(), h.size()), geometry);
    const auto qm = ex::measure_quality(phantom, geometry, h);
    for (std::size_t k = 0; k < qm.contrast_recovery.size(); ++k)
      std::printf("  hot sphere %4.1f mm: contrast recovery %5.1f %%\n",
                  qm.sphere_diameter[k], 100 * qm.contrast_recovery[k]);
    std::printf("  background variability %.1f %%; wrote stir_style_osem.nii\n",
                100 * qm.background_variability);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "stir_style_osem: %s\n", e.what());
    return 1;
  }
  return 0;
}
