/// @file
/// @brief The simulation's projections on the GPU (synthetic.hpp takes them
/// as callbacks): the subsets' sinogram forward projection and the TOF
/// profiles of event LORs. Host-blocking: data simulation, not
/// reconstruction. Needs nvcc.
#pragma once

#include <cstdint>
#include <vector>

#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/gpu_em.cuh"
#include "synthetic.hpp"

namespace resproj_examples {

/// A `subset_projector` on the GPU: uploads the image, projects the
/// subset's sinogram-described LORs, downloads.
inline subset_projector
gpu_subset_projector(const sinogram_subsets &sc,
                     const resproj::recon::device_sinogram_subsets &ds,
                     resproj::gpu::stream_ref s) {
  namespace gpu = resproj::gpu;
  return [&sc, &ds, s](int k, const std::vector<float> &img, resproj::span<float> out) {
    gpu::device_image<float> d(sc.image, s);
    d.upload(resproj::span<const float>(img.data(), img.size()), s);
    gpu::device_buffer<float> o(out.size(), s);
    gpu::forward(resproj::op::non_tof{}, d.cview(), ds.source(sc, k), o.span(), s);
    o.copy_to_host(out, s);
    s.synchronize();
  };
}

/// A `tof_profiler` on the GPU: the TOF sinogram forward projection of the
/// image over host detector pairs.
inline tof_profiler gpu_tof_profiler(const sinogram_subsets &sc,
                                     const resproj::recon::device_sinogram_subsets &ds,
                                     resproj::gpu::stream_ref s) {
  namespace gpu = resproj::gpu;
  return [&sc, &ds, s](const std::vector<float> &img,
                       const resproj::detector_pairs<float> &l,
                       const resproj::tof_params<float> &tof, resproj::span<float> out) {
    gpu::device_image<float> d(sc.image, s);
    d.upload(resproj::span<const float>(img.data(), img.size()), s);
    auto pairs = gpu::make_device_buffer(
        resproj::span<const std::int32_t>(l.pairs, 2 * l.count), s);
    const resproj::detector_pairs<float> dl(ds.detectors.data(), ds.detectors.size() / 3,
                                            pairs.data(), l.count);
    gpu::device_buffer<float> o(out.size(), s);
    gpu::forward(resproj::op::tof_sinogram{tof}, d.cview(), dl, o.span(), s);
    o.copy_to_host(out, s);
    s.synchronize();
  };
}

} // namespace resproj_examples
