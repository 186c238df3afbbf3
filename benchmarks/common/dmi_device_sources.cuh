/// @file
/// @brief The dmi scanner's detector table, plane table and view lists in
/// device memory, and the `scanner::sinogram_source`s of `dmi-subset` and
/// `dmi-full` over them (LORs derived on the device; each source knows its
/// sinogram layout). Needs nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/core/span.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/sinogram.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace resproj_bench {

/// The dmi tables on the device (uploads queued on the stream given to the
/// constructor; synchronise it before use from another stream).
struct dmi_device_tables {
  resproj::gpu::device_buffer<float> detectors; ///< xyz per detector
  resproj::gpu::device_buffer<std::int32_t> planes, subset_views, all_views;
  std::size_t num_detectors = 0;
  resproj::scanner::sinogram_source<float>
      subset;                                    ///< dmi-subset (views of subset 0 of 34)
  resproj::scanner::sinogram_source<float> full; ///< dmi-full (every view)

  explicit dmi_device_tables(resproj::gpu::stream_ref s) {
    namespace rs = resproj::scanner;
    namespace gpu = resproj::gpu;
    const auto layout = rs::dmi_sinogram();
    const auto table = rs::dmi().detector_centres();
    const auto plane_table = layout.plane_table();
    const auto sv = rs::subset_views(layout, 0, rs::dmi_num_subsets);
    const auto av = rs::subset_views(layout, 0, 1);
    const std::vector<std::int32_t> sv32(sv.begin(), sv.end()),
        av32(av.begin(), av.end());
    num_detectors = table.size() / 3;
    detectors = gpu::make_device_buffer(
        resproj::span<const float>(table.data(), table.size()), s);
    planes = gpu::make_device_buffer(
        resproj::span<const std::int32_t>(plane_table.data(), plane_table.size()), s);
    subset_views = gpu::make_device_buffer(
        resproj::span<const std::int32_t>(sv32.data(), sv32.size()), s);
    all_views = gpu::make_device_buffer(
        resproj::span<const std::int32_t>(av32.data(), av32.size()), s);
    const auto geometry = layout.geometry(planes.data());
    subset = rs::make_sinogram_source<float>(detectors.data(), num_detectors, geometry,
                                             subset_views.data(), int(sv32.size()), 0,
                                             layout.num_planes());
    full = rs::make_sinogram_source<float>(detectors.data(), num_detectors, geometry,
                                           all_views.data(), int(av32.size()), 0,
                                           layout.num_planes());
  }
};

} // namespace resproj_bench
