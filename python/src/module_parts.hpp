// The parts of the extension module defined in their own translation units.
#pragma once

#include <nanobind/nanobind.h>

namespace resproj_py {

/// Scanners, sinogram layouts and subsets (scanner.cpp).
void bind_scanner(nanobind::module_ &m);
/// List-mode files and event checks (scanner.cpp).
void bind_listmode(nanobind::module_ &m);
/// NIfTI-1 images on the host (scanner.cpp).
void bind_nifti(nanobind::module_ &m);
/// Reconstruction subsets and list-mode OSEM on the CPU (recon.cpp).
void bind_recon(nanobind::module_ &m);
/// List-mode OSEM on the GPU (recon_gpu.cpp; GPU backend only).
void bind_recon_gpu(nanobind::module_ &m);
/// The host-LOR streamer (streamer.cpp; GPU backend only).
void bind_streamer(nanobind::module_ &m);

} // namespace resproj_py
