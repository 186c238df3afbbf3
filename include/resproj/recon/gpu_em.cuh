/// @file
/// @brief The EM steps on the GPU, element-wise and queued on a stream: the
/// per-LOR ratio `m y / (m q + a)` in place over a forward projection, and
/// the image update `x g / s`; plus `device_sinogram_subsets`, the device
/// copies of a `sinogram_subsets`' tables. Thrust transforms, instantiated
/// only where called. Needs nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <thrust/execution_policy.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/em.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {
namespace detail {

/// Thrust policy: asynchronous on `s`, no synchronisation after the call.
inline auto on(gpu::stream_ref s) { return thrust::cuda::par_nosync.on(s.get()); }

template <class T> struct ratio_of {
  __device__ T operator()(const thrust::tuple<T, T, T> &t) const {
    return em_ratio{}(thrust::get<0>(t), thrust::get<1>(t), thrust::get<2>(t), T(1));
  }
  __device__ T operator()(const thrust::tuple<T, T, T, T> &t) const {
    return em_ratio{}(thrust::get<0>(t), thrust::get<1>(t), thrust::get<2>(t),
                      thrust::get<3>(t));
  }
};
template <class T> struct update_of {
  T sensitivity_scale;
  __device__ T operator()(const thrust::tuple<T, T, T> &t) const {
    return em_update{}(thrust::get<0>(t), thrust::get<1>(t),
                       thrust::get<2>(t) * sensitivity_scale);
  }
};
template <class T>
void check_same_size(span<const T> v, std::size_t n, const char *name) {
  if (v.size() != n)
    resproj::detail::throw_invalid(name, "size must equal that of q");
}

template <class T>
gpu::device_buffer<T> upload(const std::vector<T> &v, gpu::stream_ref s) {
  return gpu::make_device_buffer(span<const T>(v.data(), v.size()), s);
}

} // namespace detail

/// List mode: `q[i] = m[i] / (m[i] q[i] + a[i])` in place (one count per
/// event; 0 where the expectation is not positive). Queued on `s`; no
/// synchronisation, no allocation.
/// @param q forward projection of the events (device), overwritten
/// @param m multiplicative correction per event (device)
/// @param a additive term per event (device)
/// @throws invalid_argument ("m", "a") if a size differs from that of `q`.
template <class T>
void gpu_em_ratio(span<T> q, span<const T> m, span<const T> a, gpu::stream_ref s) {
  detail::check_same_size(m, q.size(), "m");
  detail::check_same_size(a, q.size(), "a");
  auto in = thrust::make_zip_iterator(thrust::make_tuple(q.data(), m.data(), a.data()));
  thrust::transform(detail::on(s), in, in + std::ptrdiff_t(q.size()), q.data(),
                    detail::ratio_of<T>{});
}

/// Sinogram (or histogrammed) data: `q[i] = m[i] y[i] / (m[i] q[i] + a[i])`
/// in place; 0 where y = 0 or the expectation is not positive. Queued on
/// `s`; no synchronisation, no allocation.
/// @param y measured counts (device)
/// @throws invalid_argument ("m", "a", "y") if a size differs from that of `q`.
template <class T>
void gpu_em_ratio(span<T> q, span<const T> m, span<const T> a, span<const T> y,
                  gpu::stream_ref s) {
  detail::check_same_size(m, q.size(), "m");
  detail::check_same_size(a, q.size(), "a");
  detail::check_same_size(y, q.size(), "y");
  auto in = thrust::make_zip_iterator(
      thrust::make_tuple(q.data(), m.data(), a.data(), y.data()));
  thrust::transform(detail::on(s), in, in + std::ptrdiff_t(q.size()), q.data(),
                    detail::ratio_of<T>{});
}

/// The EM image update `x = x g / (sensitivity_scale * sens)` (0 where the
/// sensitivity is not positive). `sensitivity_scale` = 1 / S for OSEM with
/// S subsets and the total sensitivity image. Queued on `s`; no
/// synchronisation, no allocation.
/// @param x image (device), updated
/// @param g back projected ratio (device)
/// @param sens sensitivity image (device)
/// @throws invalid_argument ("g", "sens") if its size differs from that of `x`.
template <class T>
void gpu_em_update(gpu::device_image<T> &x, const gpu::device_image<T> &g,
                   const gpu::device_image<T> &sens, T sensitivity_scale,
                   gpu::stream_ref s) {
  if (g.size() != x.size())
    resproj::detail::throw_invalid("g", "size does not match the image");
  if (sens.size() != x.size())
    resproj::detail::throw_invalid("sens", "size does not match the image");
  auto in =
      thrust::make_zip_iterator(thrust::make_tuple(x.data(), g.data(), sens.data()));
  thrust::transform(detail::on(s), in, in + std::ptrdiff_t(x.size()), x.data(),
                    detail::update_of<T>{sensitivity_scale});
}

/// The tables of a `sinogram_subsets` in device memory (detectors, plane
/// table, each subset's views), for sinogram sources the GPU projectors
/// read. Allocated and uploaded on the stream given; move-only.
struct device_sinogram_subsets {
  gpu::device_buffer<float> detectors;
  gpu::device_buffer<std::int32_t> planes;
  std::vector<gpu::device_buffer<std::int32_t>> views;

  /// Uploads the tables of `sub` (queued on `s`, no synchronisation).
  device_sinogram_subsets(const sinogram_subsets &sub, gpu::stream_ref s)
      : detectors(detail::upload(sub.detectors, s)),
        planes(detail::upload(sub.planes, s)) {
    for (const auto &v : sub.views)
      views.push_back(detail::upload(v, s));
  }
  /// The LORs of subset `k` of `sub` (the subsets uploaded), on the device.
  scanner::sinogram_source<float> source(const sinogram_subsets &sub, int k) const {
    return sub.source(k, detectors.data(), planes.data(),
                      views.at(std::size_t(k)).data());
  }
};

} // namespace recon
RESPROJ_NAMESPACE_END
