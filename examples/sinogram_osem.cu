// sinogram_osem: non-TOF sinogram OSEM on the dmi scanner, on the GPU.
//
// Simulates a sinogram of the NEMA IEC body-like phantom with the library's
// projectors (crystal efficiencies, attenuation from the mu-map, 30%
// background, Poisson noise), then reconstructs it with OSEM, subsets by
// view (subset s = views s, s + S, ...), every subset's LORs derived on the
// GPU from the sinogram description (no LOR arrays). Data, image and
// sensitivities stay resident; each subset is forward projection, a Thrust
// transform for the ratio m y / (m A x + a), back projection and a Thrust
// transform for the update.
//
// usage: sinogram_osem [--counts C] [--iterations K] [--subsets S]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <resproj/io/nifti.hpp>
#include <resproj/resproj.hpp>

#include <resproj/recon/gpu_osem.cuh>

#include "common/phantom.hpp"
#include "common/synthetic.hpp"
#include "common/synthetic_gpu.cuh"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace recon = resproj::recon;

int main(int argc, char **argv) {
  double counts = 5e8;
  int iterations = 2, subsets = 34;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--counts"))
      counts = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--iterations"))
      iterations = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--subsets"))
      subsets = std::atoi(argv[i + 1]);
  }
  if (gpu::device_count() == 0) {
    std::printf("sinogram_osem: no CUDA device\n");
    return 0;
  }
  try {
    const auto geometry =
        resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
    const recon::sinogram_subsets sc(resproj::scanner::dmi(), 65, subsets, geometry);
    const auto phantom = ex::nema_phantom::make();
    gpu::stream s;
    const recon::device_sinogram_subsets ds(sc, s);

    // Simulated acquisition (projections on the GPU, sampling on the host).
    auto t = std::chrono::steady_clock::now();
    const auto x_true = ex::activity_image<float>(phantom, geometry);
    recon::corrections corr;
    corr.mu = ex::mu_image<float>(phantom, geometry);
    ex::synthetic_settings set;
    set.total_counts = counts;
    auto data =
        ex::sinogram_model(sc, x_true, corr, set, ex::gpu_subset_projector(sc, ds, s));
    ex::add_poisson_noise(data, 7);
    std::printf(
        "simulated %.3g counts in %lld sinogram bins in %.1f s\n", counts,
        (long long)data.y.size(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());

    // Reconstruction, resident.
    t = std::chrono::steady_clock::now();
    recon::gpu_sinogram_backend b(sc, data, recon::start_image(geometry, 1.f), s);
    recon::osem(b, iterations, [](const recon::osem_progress &p) {
      std::printf("\r  iteration %d/%d subset %2d/%d  %6.1f ms  ETA %5.1f s   ",
                  p.iteration + 1, p.num_iterations, p.subset + 1, p.num_subsets,
                  1e3 * p.last_subset_s, p.eta_s);
      std::fflush(stdout);
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const auto x = b.image();
    std::printf("\nOSEM (with upload and sensitivities): %.2f s\n", secs);
    resproj::io::write_nifti("sinogram_osem.nii",
                             resproj::span<const float>(x.data(), x.size()), geometry);
    const auto q = ex::measure_quality(phantom, geometry, x);
    for (std::size_t k = 0; k < q.contrast_recovery.size(); ++k)
      std::printf("  hot sphere %4.1f mm: contrast recovery %5.1f %%\n",
                  q.sphere_diameter[k], 100 * q.contrast_recovery[k]);
    std::printf("  background variability %.1f %%; wrote sinogram_osem.nii\n",
                100 * q.background_variability);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "sinogram_osem: %s\n", e.what());
    return 1;
  }
  return 0;
}
