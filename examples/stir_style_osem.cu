// stir_style_osem: a host toolkit (like STIR) that keeps its own sinogram
// and computes its own LORs, while the image stays on the GPU. The toolkit
// computes the LORs of each subset once, in the order it keeps its data,
// [plane][view of the subset][radial], into pinned host arrays (its LOR
// cache, as STIR caches its projection matrix), and says so where it
// describes them:
//
//     lor_view(starts, ends, n).with_layout(lor_layout::sinogram(views, radial))
//
// One gpu::lor_streamer call per subset then streams them for the forward
// projection, and again for the back projection of the EM ratio computed
// on the host (OpenMP, recon::em_ratio): chunks of whole planes
// (--chunk-planes), so every chunk runs with lanes along planes; pinned
// arrays are copied without staging, the copy of one chunk overlapping the
// projection of another. The image update per subset runs on the GPU
// (recon::gpu_em_update).
//
// Speed comes from the plain calls: a sinogram layout (lanes along planes,
// 3x faster back projection than memory order), one call per subset rather
// than per view (no GPU left idle by small calls, one host wait per
// projection), pinned host arrays and LORs computed once.
//
// Non-TOF sinogram OSEM on the dmi scanner restricted to its first planes
// (default 106: direct planes and ring difference +-1), subsets by view;
// the data are simulated by the same streamed projector (attenuation of
// the phantom's mu-map, 30% flat background, Poisson noise).
//
// usage: stir_style_osem [--planes N] [--iterations K] [--subsets S]
//                        [--chunk-planes P]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <resproj/gpu/lor_streamer.cuh>
#include <resproj/gpu/pinned_buffer.cuh>
#include <resproj/io/nifti.hpp>
#include <resproj/resproj.hpp>

#include <resproj/recon/cpu_osem.hpp>
#include <resproj/recon/gpu_em.cuh>

#include "common/phantom.hpp"

namespace ex = resproj_examples;
namespace recon = resproj::recon;
namespace gpu = resproj::gpu;
namespace rp = resproj;
namespace rs = resproj::scanner;

namespace {

/// The toolkit's LORs and data of one subset, [plane][view][radial].
struct subset {
  std::vector<int> views;
  std::size_t per_plane = 0; ///< views x radial bins
  std::size_t count = 0;
  gpu::pinned_buffer<float> starts, ends; ///< pinned: copied without staging
  std::vector<float> y, m;                ///< counts, multiplicative corrections

  /// The subset's LORs, with their order declared once.
  rp::lor_view<const float> lors(std::size_t num_radial) const {
    return rp::lor_view<const float>(starts.data(), ends.data(), count)
        .with_layout(rp::lor_layout::sinogram(views.size(), num_radial));
  }
};

using seconds = std::chrono::duration<double>;
double since(std::chrono::steady_clock::time_point t) {
  return seconds(std::chrono::steady_clock::now() - t).count();
}

} // namespace

int main(int argc, char **argv) {
  int planes = 106, iterations = 2, subsets = 34, chunk_planes = 27;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--planes"))
      planes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--iterations"))
      iterations = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--subsets"))
      subsets = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--chunk-planes"))
      chunk_planes = std::atoi(argv[i + 1]);
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
    subsets = std::min(std::max(subsets, 1), layout.num_views);
    chunk_planes = std::min(std::max(chunk_planes, 2), planes);
    const auto geometry =
        resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
    const auto phantom = ex::nema_phantom::make();
    const std::size_t nr = std::size_t(layout.num_radial);
    const int num_views = layout.num_views;

    // The toolkit's own LOR computation, once per subset.
    auto t = std::chrono::steady_clock::now();
    std::vector<subset> sub(static_cast<std::size_t>(subsets));
    std::size_t total = 0, largest = 0;
    for (int k = 0; k < subsets; ++k) {
      subset &b = sub[std::size_t(k)];
      b.views = rs::subset_views(layout, k, subsets);
      b.per_plane = b.views.size() * nr;
      b.count = std::size_t(planes) * b.per_plane;
      b.starts = gpu::pinned_buffer<float>(3 * b.count);
      b.ends = gpu::pinned_buffer<float>(3 * b.count);
      rs::sinogram_lors(scanner, layout, b.views, 0, planes,
                        rp::span<float>(b.starts.data(), b.starts.size()),
                        rp::span<float>(b.ends.data(), b.ends.size()));
      total += b.count;
      largest = std::max(largest, b.count);
    }
    std::printf("LORs of %d subsets (%zu LORs) computed once in %.2f s\n", subsets, total,
                since(t));

    // Streamers with chunks of whole planes (one per plane size: subsets
    // hold the same number of views unless S does not divide the views).
    std::map<std::size_t, gpu::lor_streamer<float>> streamers;
    auto streamer = [&](const subset &b) -> gpu::lor_streamer<float> & {
      return streamers.try_emplace(b.per_plane, std::size_t(chunk_planes) * b.per_plane)
          .first->second;
    };

    gpu::stream s;
    gpu::device_image<float> x(geometry, s), g(geometry, s);
    std::vector<gpu::device_image<float>> sens;
    // Pinned results and values: the streamer copies them without staging.
    gpu::pinned_buffer<float> q(largest), r(largest);

    // Simulated data, per subset: y ~ Poisson(m A x_true + a), m = exp(-A mu).
    t = std::chrono::steady_clock::now();
    const auto x_true = ex::activity_image<float>(phantom, geometry);
    const auto mu = ex::mu_image<float>(phantom, geometry);
    x.upload(rp::span<const float>(x_true.data(), x_true.size()), s);
    g.upload(rp::span<const float>(mu.data(), mu.size()), s);
    const rp::op::non_tof non_tof{};
    double trues = 0;
    for (subset &b : sub) {
      const auto lors = b.lors(nr);
      b.m.resize(b.count);
      b.y.resize(b.count);
      streamer(b).forward(non_tof, g.cview(), lors, rp::span<float>(b.m.data(), b.count),
                          s);
      streamer(b).forward(non_tof, x.cview(), lors, rp::span<float>(b.y.data(), b.count),
                          s);
      for (std::size_t i = 0; i < b.count; ++i) {
        b.m[i] = std::exp(-b.m[i]);
        b.y[i] *= b.m[i]; // trues
        trues += b.y[i];
      }
    }
    const float a = float(0.3 / 0.7 * trues / double(total));
    // Noise drawn view by view ([view][plane][radial], the order of STIR's
    // viewgrams).
    std::mt19937_64 rng(11);
    for (int v = 0; v < num_views; ++v) {
      subset &b = sub[std::size_t(v % subsets)];
      const std::size_t j = std::size_t(v / subsets); // view's place in its subset
      for (int p = 0; p < planes; ++p)
        for (std::size_t i = 0; i < nr; ++i) {
          float &c = b.y[std::size_t(p) * b.per_plane + j * nr + i];
          std::poisson_distribution<long long> pd{double(c + a)};
          c = float(pd(rng));
        }
    }
    std::printf("simulated %d views x %d planes x %zu radial bins in %.1f s\n", num_views,
                planes, nr, since(t));

    // Sensitivity per subset: back projection of m over the subset's LORs.
    for (const subset &b : sub) {
      sens.emplace_back(geometry, s);
      sens.back().zero(s);
      streamer(b).back(non_tof, sens.back().view(), b.lors(nr),
                       rp::span<const float>(b.m.data(), b.count), s);
    }

    // OSEM: the subset's host LORs projected against the resident image,
    // ratio on the host, update on the GPU.
    const auto start = recon::start_image(geometry, 1.f);
    x.upload(rp::span<const float>(start.data(), start.size()), s);
    s.synchronize();
    double projection_secs = 0;
    t = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; ++it)
      for (int k = 0; k < subsets; ++k) {
        const subset &b = sub[std::size_t(k)];
        const auto lors = b.lors(nr);
        g.buffer().zero(s);
        const auto p0 = std::chrono::steady_clock::now();
        streamer(b).forward(non_tof, x.cview(), lors, rp::span<float>(q.data(), b.count),
                            s);
        projection_secs += since(p0);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
        for (std::int64_t i = 0; i < std::int64_t(b.count); ++i)
          r[i] = recon::em_ratio{}(q[i], b.m[i], a, b.y[i]);
        const auto p1 = std::chrono::steady_clock::now();
        streamer(b).back(non_tof, g.view(), lors,
                         rp::span<const float>(r.data(), b.count), s);
        projection_secs += since(p1);
        recon::gpu_em_update(x, g, sens[std::size_t(k)], 1.f, s);
      }
    s.synchronize();
    const double secs = since(t);
    std::vector<float> h(x.size());
    x.download(rp::span<float>(h.data(), h.size()), s);
    s.synchronize();
    const double lors_projected = double(iterations) * double(total);
    std::printf("OSEM %d x %d subsets: %.2f s, %.3g LORs/s forward + back with the "
                "host ratio and update (LORs from the host); projection calls alone "
                "%.3g LORs/s\n",
                iterations, subsets, secs, lors_projected / secs,
                lors_projected / projection_secs);
    resproj::io::write_nifti("stir_style_osem.nii",
                             rp::span<const float>(h.data(), h.size()), geometry);
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
