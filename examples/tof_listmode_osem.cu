// tof_listmode_osem: TOF list-mode OSEM of an existing list-mode file on
// the GPU, on the dmi scanner: the program to copy when you have events.
//
// The file holds 10-byte records (detector a, detector b, TOF bin; see
// io/listmode_file.hpp), e.g. demo_events.lm written by the demo. They are
// read straight into device memory, validated, grouped into subsets (event
// i in subset i mod S) and reordered once; the sensitivity image with
// attenuation comes from the sinogram description. Everything then stays
// on the GPU until the image is written as NIfTI.
//
// Corrections: the attenuation image from --mu (a NIfTI mu-map in 1/mm; its
// geometry is the reconstruction's), otherwise none and the dmi reference
// image (215 x 215 x 71, 2.78 mm); crystal efficiencies 1; an additive
// background of --background counts per sinogram bin (spread over the TOF
// bins). Real data would bring their own normalisation and background.
//
// usage: tof_listmode_osem EVENTS.lm [--mu MU.nii] [--background B]
//                          [--iterations K] [--subsets S] [--out IMAGE.nii]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <resproj/io/nifti.hpp>
#include <resproj/resproj.hpp>
#include <resproj/scanner/dmi.hpp>

#include <resproj/recon/gpu_listmode_setup.cuh>

namespace gpu = resproj::gpu;
namespace recon = resproj::recon;

int main(int argc, char **argv) {
  std::string events, mu_path, out = "tof_listmode_osem.nii";
  float background = 0;
  int iterations = 2, subsets = 34;
  bool usage = false;
  for (int i = 1; i < argc && !usage; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--mu") && has_value)
      mu_path = argv[++i];
    else if (!std::strcmp(argv[i], "--background") && has_value)
      background = float(std::atof(argv[++i]));
    else if (!std::strcmp(argv[i], "--iterations") && has_value)
      iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--subsets") && has_value)
      subsets = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && has_value)
      out = argv[++i];
    else if (argv[i][0] != '-' && events.empty())
      events = argv[i];
    else
      usage = true;
  }
  if (usage || events.empty() || iterations < 1 || subsets < 1 || !(background >= 0)) {
    std::fprintf(stderr, "usage: tof_listmode_osem EVENTS.lm [--mu MU.nii] "
                         "[--background B] [--iterations K] [--subsets S] "
                         "[--out IMAGE.nii]\n");
    return 2;
  }
  if (gpu::device_count() == 0) {
    std::printf("tof_listmode_osem: no CUDA device\n");
    return 0;
  }
  try {
    // The scanner, its TOF and the image.
    const auto tof = resproj::scanner::dmi_tof();
    const auto geometry =
        mu_path.empty()
            ? resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78})
            : resproj::io::read_nifti_geometry(mu_path);
    const recon::sinogram_subsets sc(resproj::scanner::dmi(), 65, subsets, geometry);

    // Corrections.
    recon::corrections corr;
    corr.mu.assign(std::size_t(geometry.num_voxels()), 0.f);
    if (!mu_path.empty())
      resproj::io::read_nifti<float>(
          mu_path, resproj::span<float>(corr.mu.data(), corr.mu.size()));
    corr.efficiency.assign(sc.num_detectors(), 1.f);
    corr.scale = 1;
    corr.background = background;

    // Events from the file into device memory, set-up, OSEM, NIfTI.
    gpu::stream s;
    const recon::device_sinogram_subsets ds(sc, s);
    gpu::device_file_io io;
    recon::phase_table phases;
    recon::stopwatch w;
    const recon::gpu_listmode_data data(sc, ds, io, events, corr, tof, s, &phases);
    w.lap(); // the set-up's phases are in the table already
    auto b = data.backend(recon::start_image(geometry, 1.f));
    recon::osem(b, iterations);
    s.synchronize();
    phases.add("osem", "OSEM iterations", w.lap(), double(data.count()) * iterations,
               "events");
    gpu::write_nifti_from_device(io, out, b.x, s);
    phases.add("nifti", "write NIfTI (device -> file)", w.lap());

    std::printf("%zu events, %d subsets, %d iterations -> %s\n", data.count(), subsets,
                iterations, out.c_str());
    phases.print(stdout);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tof_listmode_osem: %s\n", e.what());
    return 1;
  }
  return 0;
}
