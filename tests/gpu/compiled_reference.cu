// The header-only results that tests/gpu/test_compiled.cpp (a g++
// translation unit) compares the compiled target with: gpu::forward of the
// same calls, compiled here by nvcc. Declared in test_compiled.cpp.
#include <cuda_runtime.h>

#include "resproj/core/operations.hpp"
#include "resproj/gpu/projector.cuh"
#include "resproj/scanner/sinogram_source.hpp"

namespace rp = resproj;

void reference_forward(const rp::op::non_tof &op,
                       rp::gpu::device_image_view<const float> image,
                       const rp::scanner::sinogram_source<float> &lors,
                       rp::span<float> out, cudaStream_t stream) {
  rp::gpu::forward(op, image, lors, out, rp::gpu::stream_ref(stream));
}

void reference_forward(const rp::op::tof_listmode<float> &op,
                       rp::gpu::device_image_view<const float> image,
                       const rp::detector_pairs<float> &lors, rp::span<float> out,
                       cudaStream_t stream) {
  rp::gpu::forward(op, image, lors, out, rp::gpu::stream_ref(stream));
}
