/// @file
/// @brief The demo's total-body mode (`demo --scanner tb`), the problem
/// `tb-lm-osem` of docs/benchmark-problems.md on one GPU: the phantom and
/// its mu-map, the acquisition drawn on the GPU into a list-mode file
/// (10 GB for 1e9 events), then, timed phase by phase, list-mode file on
/// disk -> NIfTI on disk: events read, validated, split into subsets and
/// reordered in device memory, the sensitivity over every LOR of the
/// scanner (all ring differences) with attenuation, TOF list-mode OSEM,
/// the NIfTI. Prints the phase table, peak device and host memory, the
/// contrast of the six spheres and the background variability, and writes
/// a PNG of coronal and transaxial slices (phantom | reconstruction).
/// Needs nvcc.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "png.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"
#include "resproj/recon/gpu_multi_listmode.cuh"
#include "resproj/recon/phase_timing.hpp"
#include "resproj/scanner/tb.hpp"
#include "tb_phantom.hpp"
#include "tb_simulation_gpu.cuh"

namespace resproj_examples {

/// What `run_tb_demo` does.
struct tb_demo_settings {
  long long events = 1000000000; ///< the problem's 1e9
  int iterations = 2, subsets = 20;
  std::uint64_t seed = 20261202;
  std::uint64_t chunk = std::uint64_t(1) << 26; ///< events drawn per GPU chunk
  std::string out = "demo_out";
};

namespace detail {
inline double gib(std::uint64_t bytes) { return double(bytes) / double(1ull << 30); }
/// Peak resident memory of this process (bytes).
inline std::uint64_t peak_host_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return std::uint64_t(u.ru_maxrss) * 1024; // kilobytes on Linux
}
} // namespace detail

/// Runs the total-body demo on the current GPU; `progress` is called after
/// every subset. Throws on failure.
inline void run_tb_demo(const tb_demo_settings &set,
                        const resproj::recon::osem_callback &progress) {
  namespace gpu = resproj::gpu;
  namespace recon = resproj::recon;
  namespace rs = resproj::scanner;
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  const auto geometry = rs::tb_image_geometry();
  const auto tof = rs::tb_tof<float>();
  const auto phantom = tb_phantom::make();
  std::printf("demo: tb-lm-osem on the GPU, scanner tb (%d rings x %d crystals, all ring "
              "differences), image %lld x %lld x %lld, %lld events, %d subsets, %d "
              "iterations\n",
              rs::tb_num_rings, rs::tb_crystals_per_ring, (long long)geometry.shape()[0],
              (long long)geometry.shape()[1], (long long)geometry.shape()[2], set.events,
              set.subsets, set.iterations);
  gpu::stream s;
  auto t = clock::now();
  // The sinogram tables give the detector table and the subsets; the
  // sensitivity sums over every LOR (sensitivity_lors::all), not over them.
  const recon::sinogram_subsets sc(rs::tb(), 0, set.subsets, geometry);
  const recon::device_sinogram_subsets dsc(sc, s);
  const auto x_true = tb_activity_image<float>(phantom, geometry, 2);
  recon::corrections corr;
  corr.mu = tb_mu_image<float>(phantom, geometry, 2);
  corr.efficiency.assign(sc.num_detectors(), 1.f);
  std::printf("phantom and mu-map (%.1f M voxels) in %.1f s\n",
              1e-6 * double(geometry.num_voxels()), since(t));

  // The acquisition, on the GPU, into the list-mode file.
  std::filesystem::create_directories(set.out);
  const std::string lm_path = set.out + "/tb_events.lm";
  t = clock::now();
  const tb_acquisition m = make_tb_acquisition(
      phantom, dsc.detectors.data(), std::uint32_t(sc.num_detectors()),
      std::uint32_t(sc.scanner.crystals_per_ring()), geometry, tof, 0.3, set.seed);
  const tb_draw_counts drawn =
      tb_simulate_to_file(m, std::uint64_t(set.events), lm_path, set.chunk, s);
  const double t_sim = since(t);
  const double lors = drawn.lors(double(sc.num_detectors()));
  std::printf(
      "simulated %lld events (%.1f %% randoms + scatter) in %.1f s (%.3g events/s, "
      "file written), %s; %.4g LORs cross the image\n",
      set.events, 100.0 * double(drawn.randoms) / double(set.events), t_sim,
      double(set.events) / t_sim, lm_path.c_str(), lors);
  // Additive term: the randoms + scatter spread evenly over the LORs.
  corr.background = float(double(drawn.randoms) / lors);

  // Reconstruction: list-mode file on disk -> NIfTI on disk.
  s.synchronize();
  const int device = gpu::current_device();
  gpu::reset_pool_peak(device);
  const std::uint64_t before = gpu::pool_used_bytes(device);
  recon::phase_table phases;
  recon::stopwatch w;
  gpu::device_file_io io;
  const recon::gpu_listmode_data problem(sc, dsc, io, lm_path, corr, tof, s, &phases,
                                         recon::sensitivity_lors::all);
  w.lap();
  const std::size_t num_events = problem.count();
  const std::string nii = set.out + "/tb_osem.nii", png = set.out + "/tb_osem.png";
  std::uint64_t peak_device = 0;
  std::vector<float> x;
  // OSEM on `b`, whose image (or replica 0) is `result`, then the NIfTI.
  const auto reconstruct = [&](auto &b, const gpu::device_image<float> &result,
                               const char *setup_name) {
    b.opt.check_pointers = false; // checked once above; hot loop
    b.finish();
    phases.add("backend", setup_name, w.lap());
    recon::osem(b, set.iterations, progress);
    phases.add("osem", "OSEM iterations", w.lap(), double(num_events) * set.iterations,
               "events");
    gpu::write_nifti_from_device(io, nii, result, s);
    phases.add("nifti", "write NIfTI (device -> file)", w.lap());
    peak_device = gpu::pool_peak_used_bytes(device);
    x = b.image();
  };
  const std::vector<float> start = recon::start_image(geometry, 1.f);
  const int devices = gpu::device_count();
  if (devices > 1) { // every visible GPU: events split, one reduction per subset
    const gpu::device_set all = gpu::device_set::all();
    const gpu::stream_set streams(all);
    const recon::multi_device_listmode split(problem, all, streams);
    recon::multi_device_listmode_backend b(split, start, streams);
    reconstruct(b, b.x.replica(0), "OSEM set-up (events split across the GPUs)");
  } else {
    auto b = problem.backend(start);
    reconstruct(b, b.x, "OSEM backend set-up");
  }

  std::printf("list-mode file on disk -> NIfTI on disk, by phase:\n");
  phases.print(stdout);
  const double per_it = phases.seconds("osem") / set.iterations;
  std::printf("OSEM: %.3f s per iteration, %.3g events/s (forward + back + update)\n",
              per_it, double(num_events) / per_it);
  if (devices > 1)
    std::printf("OSEM on %d GPUs (events split, image replicated); memory below: "
                "device %d, which also holds the whole set-up\n",
                devices, device);
  std::printf("peak device memory of the reconstruction %.2f GiB (%.2f GiB in use before "
              "it; events %.2f GiB as 10-byte records); peak host memory (resident) "
              "%.2f GiB\n",
              detail::gib(peak_device), detail::gib(before),
              detail::gib(num_events * 10ull), detail::gib(detail::peak_host_bytes()));
  const auto q = measure_tb_quality(phantom, geometry, x);
  double bg = 0;
  for (const auto &r : q) {
    std::printf("  %s sphere %4.1f mm: %s %5.1f %%, background variability %4.1f %%\n",
                r.hot ? "hot " : "cold", r.diameter,
                r.hot ? "contrast recovery" : "cold contrast    ", 100 * r.contrast,
                100 * r.background_variability);
    bg += r.background_mean / double(q.size());
  }
  // PNG: coronal slices through the spheres' plane (y = 0) on top,
  // transaxial slices through the 22 mm hot and 37 mm cold spheres below;
  // both images shown from 0 to 1.5 x the hot activity.
  const std::int64_t coronal = geometry.shape()[1] / 2;
  const auto slice_at = [&](double z) {
    return std::int64_t((z - geometry.box_min(2)) / geometry.voxel_size()[2]);
  };
  const float top = float(1.5 * phantom.hot_ratio);
  const float top_x = float(1.5 * phantom.hot_ratio * bg);
  std::vector<std::vector<png_panel>> rows = {
      {image_slice(geometry, x_true, 1, coronal, top),
       image_slice(geometry, x, 1, coronal, top_x)},
      {image_slice(geometry, x_true, 2, slice_at(150), top),
       image_slice(geometry, x, 2, slice_at(150), top_x),
       image_slice(geometry, x_true, 2, slice_at(750), top),
       image_slice(geometry, x, 2, slice_at(750), top_x)}};
  const bool png_ok = write_panels_png(png, rows);
  std::printf("wrote %s%s\n", nii.c_str(),
              png_ok ? (" and " + png +
                        " (top: coronal, phantom | reconstruction; below: transaxial at "
                        "z = 150 and 750 mm, phantom | reconstruction)")
                           .c_str()
                     : " (the PNG could not be written)");
}

} // namespace resproj_examples
