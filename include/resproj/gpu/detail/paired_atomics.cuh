/// @file
/// @brief Vector atomics for the two bilinear taps of a sample that are
/// neighbours in memory (sm_90 float2 / float4 atomic adds), used by the
/// TOF back projections and the all-LOR sensitivity.
#pragma once

#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/plane_pairs.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Atomic adder for the back projections that adds the two bilinear
/// neighbours of a sample that are adjacent in memory (the contiguous axis 2
/// as the stencil's second axis, i.e. principal axis 0 or 1) with one
/// vector atomic (sm_90: float2 at an 8-byte aligned pair, float4 with
/// zero ends when the pair starts 4 bytes into a 16-byte group, two scalar
/// atomics otherwise): two atomic operations per sample instead of four
/// when all four neighbours are inside. For rays along the contiguous axis
/// it pairs the taps of two consecutive planes instead (`scatter_plane_pair`).
/// Same amounts as `atomic_add` (`value * weight`); only float images use
/// vector atomics.
struct paired_atomic_add {
  static constexpr bool scatters_samples = true;
  std::int64_t extent; ///< elements of the image array (a float4 stays inside)

  template <class T> __device__ void operator()(T *voxel, T amount) const {
    atomicAdd(voxel, amount);
  }

  /// Adds `a_lo` at `image[o]` and `a_hi` at `image[o + 1]`: one float2
  /// atomic at an 8-byte aligned pair, one float4 with zero ends when the
  /// pair starts 4 bytes into a 16-byte group, two scalar atomics otherwise.
  template <class I>
  __device__ void add_adjacent(float *image, I o, float a_lo, float a_hi) const {
    float *p = image + o;
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if ((addr & 7u) == 0) {
      atomicAdd(reinterpret_cast<float2 *>(p), make_float2(a_lo, a_hi));
      return;
    }
    if ((addr & 15u) == 4 && std::int64_t(o) >= 1 && std::int64_t(o) + 2 < extent) {
      atomicAdd(reinterpret_cast<float4 *>(p - 1), make_float4(0.f, a_lo, a_hi, 0.f));
      return;
    }
#else
    (void)addr;
#endif
    atomicAdd(p, a_lo);
    atomicAdd(p + 1, a_hi);
  }

  /// Adds `value * w_lo` at `image[o_lo]` and `value * w_hi` at
  /// `image[o_hi]`, where o_hi = o_lo + 1 when both weights are non-zero
  /// (a zero weight means that neighbour is outside the image and its
  /// offset is not meaningful).
  template <class I>
  __device__ void add_pair(float *image, I o_lo, float w_lo, I o_hi, float w_hi,
                           float value) const {
    if (w_lo == 0.f) {
      if (w_hi != 0.f)
        atomicAdd(image + o_hi, value * w_hi);
      return;
    }
    if (w_hi == 0.f) {
      atomicAdd(image + o_lo, value * w_lo);
      return;
    }
    add_adjacent<I>(image, o_lo, value * w_lo, value * w_hi);
  }

  /// Plane pairs (math::detail::scatters_plane_pairs): the samples of
  /// planes p (`v0`) and p + 1 (`v1`) of a ray whose planes are the
  /// contiguous axis, the two taps of each column that both touch with one
  /// vector atomic (math::scatter_plane_pair; scalar atomics for double);
  /// each amount is `scale * (v * weight)`, offsets shifted by `delta`.
  static constexpr bool scatters_plane_pairs = true;
  template <class I, class T>
  __device__ void scatter_plane_pair(T *image, const math::joseph_ray<T> &r,
                                     std::int64_t p, T v0, T v1, std::int64_t delta = 0,
                                     T scale = T(1)) const {
    math::scatter_plane_pair<I>(
        r, p, v0, v1, I(delta),
        [&](I o, T a_lo, T a_hi) {
          if constexpr (std::is_same_v<T, float>) {
            add_adjacent<I>(image, o, scale * a_lo, scale * a_hi);
          } else {
            atomicAdd(image + o, scale * a_lo);
            atomicAdd(image + o + 1, scale * a_hi);
          }
        },
        [&](I o, T a) { atomicAdd(image + o, scale * a); });
  }

  template <class I, class T>
  __device__ void scatter_sample(T *image, const math::joseph_ray<T> &r, std::int64_t p,
                                 T value) const {
    const math::bilinear_stencil<I, T> st = math::stencil_at<I>(r, p);
    if constexpr (std::is_same_v<T, float>) {
      if (r.stride_v == 1) { // pairs (0, 2) and (1, 3) are adjacent
        add_pair<I>(image, st.offset[0], st.weight[0], st.offset[2], st.weight[2], value);
        add_pair<I>(image, st.offset[1], st.weight[1], st.offset[3], st.weight[3], value);
        return;
      }
    }
    for (int i = 0; i < 4; ++i)
      if (st.weight[i] != T(0))
        atomicAdd(image + st.offset[i], value * st.weight[i]);
  }
};

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
