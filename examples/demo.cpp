// demo: TOF list-mode OSEM of a NEMA IEC body-like phantom, end to end.
//
// Makes the phantom and its mu-map, simulates a TOF list-mode acquisition
// with the library's own projectors (crystal efficiencies, attenuation, 30%
// randoms + scatter), writes it as a list-mode file and reads it back
// (on the GPU: straight into device memory, split, validated and grouped
// there), computes the sensitivity image, reconstructs with OSEM and writes
// the image (NIfTI) and a PNG of the central slice (phantom |
// reconstruction). Prints progress per subset (on a terminal; one line per
// iteration otherwise) and a summary: where the time from list-mode file to
// NIfTI went, phase by phase, time per iteration, events/s, contrast
// recovery of the hot spheres, background variability.
//
// With a GPU (built by nvcc, device present): the dmi scanner and reference
// image, 40M events, 34 subsets, 2 iterations, all resident on the GPU.
// Otherwise (or with --cpu): the CPU backend on the first 8 rings of the
// dmi scanner, 1.5M events, 34 subsets, 2 iterations (about a minute on 2
// idle cores).
//
// Everything it writes goes to the folder --out (default demo_out, created
// if missing): the events (demo_events.lm), the mu-map (demo_mu.nii), the
// reconstruction (demo_osem.nii) and the PNG.
//
// With --petsird it also writes the events as a PETSIRD file
// (demo_events.petsird, the open PET raw-data standard) and reconstructs
// from that file instead.
//
// With --scanner tb (GPU only): the total-body problem tb-lm-osem instead
// (examples/common/tb_demo.cuh): 1e9 events of a 1.94 m scanner drawn on
// the GPU into demo_out/tb_events.lm (10 GB), 20 subsets, 2 iterations,
// the sensitivity over all LORs; NIfTI, PNG of coronal and transaxial
// slices, memory peaks, sphere contrasts.
//
// usage: demo [--scanner dmi|tb] [--events N] [--iterations K] [--subsets S]
//             [--cpu] [--petsird] [--out DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <resproj/io/listmode_file.hpp>
#include <resproj/io/nifti.hpp>
#include <resproj/resproj.hpp>
#include <resproj/scanner/dmi.hpp>

#include <resproj/io/petsird/petsird.hpp>
#include <resproj/recon/cpu_osem.hpp>
#include <resproj/recon/petsird_data.hpp>
#include <resproj/recon/phase_timing.hpp>
#if defined(__CUDACC__)
#include <resproj/recon/gpu_listmode_setup.cuh>
#include <resproj/recon/gpu_petsird_events.cuh>
#endif

#include "common/phantom.hpp"
#include "common/png.hpp"
#include "common/synthetic.hpp"
#if defined(__CUDACC__)
#include "common/synthetic_gpu.cuh"
#include "common/tb_demo.cuh"
#endif

namespace ex = resproj_examples;
namespace rs = resproj::scanner;
namespace recon = resproj::recon;

namespace {
using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct settings {
  long long events = -1;
  int iterations = 2, subsets = -1;
  bool tb = false; ///< the total-body problem
  bool force_cpu = false;
  bool petsird = false; ///< write and reconstruct a PETSIRD file
  std::string out = "demo_out";
};

/// The first `rings` rings of the dmi scanner (all 36 = dmi itself).
rs::polygon_scanner dmi_rings(int rings) {
  const auto d = rs::dmi();
  std::vector<double> z(d.ring_z().begin(), d.ring_z().begin() + rings);
  const double c = 0.5 * (z.front() + z.back());
  for (double &v : z)
    v -= c;
  return rs::polygon_scanner(d.num_sides(), d.crystals_per_side(), d.inner_radius(),
                             d.crystal_pitch(), std::move(z));
}

/// Progress after each subset: on a terminal one line updated in place;
/// otherwise (a log) one line per iteration, after its last subset.
void print_progress(const recon::osem_progress &p, std::size_t events_per_subset,
                    bool terminal) {
  const bool last_of_iteration = p.subset + 1 == p.num_subsets;
  if (!terminal && !last_of_iteration)
    return;
  std::printf("%s  iteration %d/%d subset %2d/%d  elapsed %7.2f s  subset %7.1f ms "
              "(%.3g events/s)  ETA %6.1f s   ",
              terminal ? "\r" : "", p.iteration + 1, p.num_iterations, p.subset + 1,
              p.num_subsets, p.elapsed_s, 1e3 * p.last_subset_s,
              double(events_per_subset) / p.last_subset_s, p.eta_s);
  if (!terminal || (p.iteration + 1 == p.num_iterations && last_of_iteration))
    std::printf("\n");
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  settings set;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char *name) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "demo: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--events"))
      set.events = std::atoll(next("--events"));
    else if (!std::strcmp(argv[i], "--iterations"))
      set.iterations = std::atoi(next("--iterations"));
    else if (!std::strcmp(argv[i], "--subsets"))
      set.subsets = std::atoi(next("--subsets"));
    else if (!std::strcmp(argv[i], "--cpu"))
      set.force_cpu = true;
    else if (!std::strcmp(argv[i], "--petsird"))
      set.petsird = true;
    else if (!std::strcmp(argv[i], "--out"))
      set.out = next("--out");
    else if (!std::strcmp(argv[i], "--scanner") && i + 1 < argc &&
             (!std::strcmp(argv[i + 1], "dmi") || !std::strcmp(argv[i + 1], "tb")))
      set.tb = !std::strcmp(next("--scanner"), "tb");
    else {
      std::fprintf(stderr, "usage: demo [--scanner dmi|tb] [--events N] [--iterations K] "
                           "[--subsets S] [--cpu] [--petsird] [--out DIR]\n");
      return 2;
    }
  }
  bool use_gpu = false;
#if defined(__CUDACC__)
  use_gpu = !set.force_cpu && resproj::gpu::device_count() > 0;
#endif
  if (set.tb && (!use_gpu || set.petsird)) {
    std::fprintf(stderr, "demo: --scanner tb needs a GPU (built with nvcc, device "
                         "present) and reads its own list-mode file (no --petsird)\n");
    return 2;
  }
  if (set.events < 0)
    set.events = set.tb ? 1000000000 : use_gpu ? 40000000 : 1500000;
  if (set.subsets < 0)
    set.subsets = set.tb ? 20 : 34;
  if (set.events <= 0 || set.iterations < 1 || set.subsets < 1) {
    std::fprintf(stderr, "demo: --events, --iterations, --subsets must be >= 1\n");
    return 2;
  }
  try {
    const auto t_all = clock_type::now();
#if defined(__CUDACC__)
    if (set.tb) {
      ex::tb_demo_settings tb;
      tb.events = set.events;
      tb.iterations = set.iterations;
      tb.subsets = set.subsets;
      tb.out = set.out;
      const bool terminal = isatty(fileno(stdout)) != 0;
      const std::size_t per_subset = std::size_t(set.events) / std::size_t(set.subsets);
      ex::run_tb_demo(tb, [&](const recon::osem_progress &p) {
        print_progress(p, per_subset, terminal);
      });
      std::printf("total %.1f s\n", since(t_all));
      return 0;
    }
#endif
    // Scanner, image, phantom.
    const int rings = use_gpu ? 36 : 8;
    const auto geometry =
        use_gpu ? resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78})
                : resproj::image_geometry::centred({120, 120, 8}, {4.0, 4.0, 5.31556});
    const recon::sinogram_subsets sc(dmi_rings(rings), 65, set.subsets, geometry);
    const auto phantom = ex::nema_phantom::make(1.0, 0.0);
    const auto tof = rs::dmi_tof();
    std::printf("demo: TOF list-mode OSEM on the %s, scanner %d rings x %d crystals, "
                "image %lld x %lld x %lld, %lld events, %d subsets, %d iterations\n",
                use_gpu ? "GPU" : "CPU", sc.scanner.num_rings(),
                sc.scanner.crystals_per_ring(), (long long)geometry.shape()[0],
                (long long)geometry.shape()[1], (long long)geometry.shape()[2],
                set.events, set.subsets, set.iterations);

    // Synthetic acquisition.
    auto t = clock_type::now();
    const auto x_true = ex::activity_image<float>(phantom, geometry);
    recon::corrections corr;
    corr.mu = ex::mu_image<float>(phantom, geometry);
    ex::synthetic_settings syn;
    syn.total_counts = double(set.events);
    ex::subset_projector project;
    ex::tof_profiler profiles;
#if defined(__CUDACC__)
    namespace gpu = resproj::gpu;
    std::unique_ptr<gpu::stream> gs;
    std::unique_ptr<recon::device_sinogram_subsets> gds;
    if (use_gpu) {
      gs = std::make_unique<gpu::stream>();
      gds = std::make_unique<recon::device_sinogram_subsets>(sc, *gs);
      project = ex::gpu_subset_projector(sc, *gds, *gs);
      profiles = ex::gpu_tof_profiler(sc, *gds, *gs);
    }
#endif
    const auto model = ex::sinogram_model(sc, x_true, corr, syn, project);
    const auto drawn =
        ex::draw_events(sc, model, x_true, tof, std::size_t(set.events), 2026, profiles);
    std::filesystem::create_directories(set.out);
    const std::string lm_path = set.out + "/demo_events.lm";
    const auto records = rs::pack_events(
        resproj::span<const std::int32_t>(drawn.pairs.data(), drawn.pairs.size()),
        resproj::span<const std::int16_t>(drawn.bins.data(), drawn.bins.size()));
    resproj::io::write_listmode_file(
        lm_path, resproj::span<const rs::listmode_event>(records.data(), records.size()));
    // The mu-map too, so that other programs (examples/python/listmode_osem.py)
    // can reconstruct the same problem from these files.
    resproj::io::write_nifti(set.out + "/demo_mu.nii",
                             resproj::span<const float>(corr.mu.data(), corr.mu.size()),
                             geometry);
    std::printf("simulated %lld events in %.1f s, written to %s (mu-map: demo_mu.nii)\n",
                set.events, since(t), lm_path.c_str());
    // With --petsird the same events as a PETSIRD file too (time blocks of
    // 65536 events, 1 ms each), which the reconstruction then reads.
    const std::string petsird_path = set.out + "/demo_events.petsird";
    if (set.petsird) {
      t = clock_type::now();
      namespace pe = resproj::io::petsird;
      pe::scanner_description d(sc.scanner.to_detector_table());
      d.tof = tof;
      d.model_name = "resproj demo (dmi)";
      std::vector<pe::time_block_events> blocks;
      const std::size_t per_block = 65536;
      for (std::size_t first = 0; first < records.size(); first += per_block) {
        pe::time_block_events b;
        b.start_ms = std::uint32_t(blocks.size());
        b.stop_ms = b.start_ms + 1;
        b.prompts = resproj::span<const rs::listmode_event>(
            records.data() + first, std::min(per_block, records.size() - first));
        blocks.push_back(b);
      }
      pe::write_file(
          petsird_path, d,
          resproj::span<const pe::time_block_events>(blocks.data(), blocks.size()));
      std::printf("wrote %s (PETSIRD 0.12, %zu time blocks) in %.1f s\n",
                  petsird_path.c_str(), blocks.size(), since(t));
    }

    // Reconstruction, timed phase by phase: list-mode file on disk -> NIfTI
    // on disk (the PNG and the quality figures are not part of it).
    const bool terminal = isatty(fileno(stdout)) != 0;
    const std::string nii = set.out + "/demo_osem.nii", png = set.out + "/demo_osem.png";
    const std::size_t per_subset = std::size_t(set.events) / std::size_t(set.subsets);
    const auto progress = [&](const recon::osem_progress &p) {
      print_progress(p, per_subset, terminal);
    };
    recon::phase_table phases;
    recon::stopwatch w;
    std::vector<float> x;
    std::size_t num_events = 0;
    if (!use_gpu) {
      recon::listmode_data lm =
          set.petsird
              ? recon::read_petsird_listmode_data(petsird_path,
                                                  std::int64_t(sc.num_detectors()), tof)
              : recon::read_listmode_data(lm_path, std::int64_t(sc.num_detectors()),
                                          tof.num_bins);
      num_events = lm.count();
      phases.add("read",
                 set.petsird ? "read PETSIRD file (host)" : "read file (host), validate",
                 w.lap(), double(num_events), "events");
      recon::listmode_corrections(sc, corr, tof, lm);
      phases.add("corr", "per-event corrections (attenuation, eff.)", w.lap(),
                 double(num_events), "events");
      recon::group_by_subset(lm, set.subsets);
      phases.add("group", "group by subset", w.lap(), double(num_events), "events");
      auto sens = recon::sensitivity_image(sc, corr);
      phases.add("sens", "sensitivity with attenuation", w.lap(),
                 double(sc.total_count()), "LORs");
      recon::cpu_listmode_backend b(sc, lm, tof, std::move(sens),
                                    recon::start_image(geometry, 1.f));
      w.lap();
      recon::osem(b, set.iterations, progress);
      phases.add("osem", "OSEM iterations", w.lap(), double(num_events) * set.iterations,
                 "events");
      x = std::move(b.x);
      resproj::io::write_nifti(nii, resproj::span<const float>(x.data(), x.size()),
                               geometry);
      phases.add("nifti", "write NIfTI", w.lap());
    }
#if defined(__CUDACC__)
    else {
      gpu::device_file_io io;
      const auto setup = [&]() -> recon::gpu_listmode_data {
        if (!set.petsird)
          return recon::gpu_listmode_data(sc, *gds, io, lm_path, corr, tof, *gs, &phases);
        return recon::petsird_listmode_data(sc, *gds, petsird_path, corr, tof, *gs,
                                            &phases);
      };
      const recon::gpu_listmode_data problem = setup();
      w.lap(); // the problem's phases are in the table already
      num_events = problem.count();
      auto b = problem.backend(recon::start_image(geometry, 1.f));
      b.opt.check_pointers = false; // checked once above; hot loop
      gs->synchronize();
      phases.add("backend", "OSEM backend set-up", w.lap());
      recon::osem(b, set.iterations, progress);
      phases.add("osem", "OSEM iterations", w.lap(), double(num_events) * set.iterations,
                 "events");
      gpu::write_nifti_from_device(io, nii, b.x, *gs);
      phases.add("nifti", "write NIfTI (device -> file)", w.lap());
      x = b.image();
    }
#endif
    const double t_osem = phases.seconds("osem");

    // Output and summary.
    const std::int64_t k2 = geometry.shape()[2] / 2;
    const bool png_ok = ex::write_slices_png(png, geometry, {&x_true, &x}, k2,
                                             float(1.5 * phantom.hot_ratio));
    std::printf(
        "wrote %s%s\n", nii.c_str(),
        png_ok ? (" and " + png + " (phantom | reconstruction, central slice)").c_str()
               : " (the PNG could not be written)");
    const double per_it = t_osem / set.iterations;
    std::printf("list-mode file on disk -> NIfTI on disk, by phase:\n");
    phases.print(stdout);
    std::printf("OSEM: %.3f s per iteration, %.3g events/s (forward + back + update)\n",
                per_it, double(num_events) / per_it);
    // Compare with the phantom scaled to the counts reconstructed.
    const auto q = ex::measure_quality(phantom, geometry, x);
    for (std::size_t k = 0; k < q.contrast_recovery.size(); ++k)
      std::printf("  hot sphere %4.1f mm: contrast recovery %5.1f %%\n",
                  q.sphere_diameter[k], 100 * q.contrast_recovery[k]);
    std::printf("  background variability %.1f %%, background mean %.3f (true %.3f)\n",
                100 * q.background_variability, q.background_mean, phantom.background);
    std::printf("total %.1f s\n", since(t_all));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
