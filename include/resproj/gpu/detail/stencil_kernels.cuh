/// @file
/// @brief Device side of the stencil layout (math/stencil_layout.hpp): an
/// atomic adder that writes a sample's stencil with one or two vector
/// atomics, and the reduction of the layout into the image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/stencil_layout.hpp"
#include "resproj/math/tof_projection.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Reduction: `image[voxel] += sum of its layout elements` (four or eight,
/// `math::stencil_voxel_elements`), which are then zeroed (every other
/// element is padding and stays zero), one thread per voxel.
template <class T>
RESPROJ_KERNEL void __launch_bounds__(256)
    stencil_reduce_kernel(math::image_grid<T> grid, math::stencil_layout layout,
                          T *__restrict__ data, T *__restrict__ image) {
  const std::int64_t voxel =
      std::int64_t(blockIdx.x) * blockDim.x + std::int64_t(threadIdx.x);
  const std::int64_t n2 = grid.shape[2], n1 = grid.shape[1];
  if (voxel >= grid.shape[0] * grid.stride[0])
    return;
  const std::int64_t i2 = voxel % n2, i01 = voxel / n2;
  const std::int64_t i1 = i01 % n1, i0 = i01 / n1;
  std::int64_t e[8];
  const int n = math::stencil_voxel_elements<std::int64_t>(layout, i0, i1, i2, e);
  T sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += data[e[i]];
    data[e[i]] = T(0);
  }
  if (sum != T(0))
    image[voxel] += sum;
}

/// Atomic adder of the list-mode back kernels into the stencil layout:
/// a sample's four amounts (`value * weight`, zero for out-of-image
/// neighbours, so padding stays zero) as one float4 atomic when the
/// stencil is 16-byte aligned (always with width 4), else two float2
/// atomics (double: scalar atomics). Samples the layout does not cover go straight to the
/// image through `Fallback`. The reduction (`stencil_reduce_kernel`) adds the layout into
/// the image afterwards.
template <class T, class Fallback> struct stencil_atomic_add {
  static constexpr bool scatters_samples = true;
  T *data;
  math::stencil_layout layout;
  Fallback fallback;

  template <class U> __device__ void operator()(U *voxel, U amount) const {
    atomicAdd(voxel, amount);
  }

  template <class I, class U>
  __device__ void scatter_sample(U *image, const math::joseph_ray<U> &r, std::int64_t p,
                                 U value) const {
    static_assert(std::is_same_v<U, T>);
    const math::bilinear_point<I, T> q = math::bilinear_at<I>(r, p);
    if (!layout.covers(r.axis, q.iu, q.iv)) {
      math::detail::tof_scatter<I>(image, r, p, value, fallback);
      return;
    }
    const I e = layout.template entry<I>(r.axis, p, q.iu, q.iv);
    T *at = data + e;
    const T a = value * q.weight[0], b = value * q.weight[1];
    const T c = value * q.weight[2], d = value * q.weight[3];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (std::is_same_v<T, float>) {
      if ((e & 3) == 0) {
        atomicAdd(reinterpret_cast<float4 *>(at), make_float4(a, b, c, d));
      } else {
        if (a != 0.f || b != 0.f)
          atomicAdd(reinterpret_cast<float2 *>(at), make_float2(a, b));
        if (c != 0.f || d != 0.f)
          atomicAdd(reinterpret_cast<float2 *>(at + 2), make_float2(c, d));
      }
      return;
    }
#endif
    const T amount[4] = {a, b, c, d};
    for (int i = 0; i < 4; ++i)
      if (amount[i] != T(0))
        atomicAdd(at + i, amount[i]);
  }
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
