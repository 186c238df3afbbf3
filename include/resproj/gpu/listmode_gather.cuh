/// @file
/// @brief Application of a list-mode event permutation (from
/// `listmode_order`, gpu/listmode_order.cuh) to device arrays: `gather`
/// (per-event values), `gather_lors` (LOR end points) and `scatter_back`
/// (results of the reordered events back to the original order).
/// Asynchronous on the caller's stream, no allocation, graph-capturable.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/check_device_span.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// `dst[i] = src[perm[i]]`, `width` consecutive elements per entry.
template <class E>
RESPROJ_KERNEL void __launch_bounds__(256)
    gather_kernel(const E *__restrict__ src, const std::uint32_t *__restrict__ perm,
                  std::size_t count, int width, E *__restrict__ dst) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  const std::size_t from = std::size_t(perm[i]) * std::size_t(width);
  for (int k = 0; k < width; ++k)
    dst[i * std::size_t(width) + std::size_t(k)] = src[from + std::size_t(k)];
}

/// `dst[perm[i]] = src[i]`.
template <class E>
RESPROJ_KERNEL void __launch_bounds__(256)
    scatter_back_kernel(const E *__restrict__ src, const std::uint32_t *__restrict__ perm,
                        std::size_t count, E *__restrict__ dst) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  dst[perm[i]] = src[i];
}

} // namespace detail

/// `dst[k] = src[permutation[k]]` for k < permutation.size() (per-event
/// arrays: bins, values, per-event sigma or offset, ...).
/// @throws invalid_argument ("src", "dst", "permutation") for host memory
/// or too-small arrays. Asynchronous; no allocation; graph-capturable.
template <class E>
void gather(span<const E> src, span<const std::uint32_t> permutation, span<E> dst,
            stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const std::size_t n = permutation.size();
  if (n == 0)
    return;
  const int device = current_device();
  detail::check_device_span(permutation.data(), n, n, "permutation", device);
  detail::check_device_span(src.data(), src.size(), n, "src", device);
  detail::check_device_span(dst.data(), dst.size(), n, "dst", device);
  detail::launch(detail::gather_kernel<E>, (n + 255) / 256, 256, s, "gather_kernel",
                 src.data(), permutation.data(), n, 1, dst.data());
}

/// Applies the permutation to LOR end points: sorted LOR k = `lors`
/// LOR `permutation[k]`, written to `starts` and `ends` (xyz triplets,
/// 3 * permutation.size() values each).
/// @throws invalid_argument ("lors.starts", "starts", ...) as `gather`.
template <class T>
void gather_lors(lor_view<const T> lors, span<const std::uint32_t> permutation,
                 span<T> starts, span<T> ends, stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  resproj::detail::check_lors(lors, "lors");
  const std::size_t n = permutation.size();
  if (n == 0)
    return;
  const int device = current_device();
  detail::check_device_span(permutation.data(), n, n, "permutation", device);
  detail::check_device_span(lors.starts, 3 * lors.count, 3 * n, "lors.starts", device);
  detail::check_device_span(lors.ends, 3 * lors.count, 3 * n, "lors.ends", device);
  detail::check_device_span(starts.data(), starts.size(), 3 * n, "starts", device);
  detail::check_device_span(ends.data(), ends.size(), 3 * n, "ends", device);
  detail::launch(detail::gather_kernel<T>, (n + 255) / 256, 256, s, "gather_kernel",
                 lors.starts, permutation.data(), n, 3, starts.data());
  detail::launch(detail::gather_kernel<T>, (n + 255) / 256, 256, s, "gather_kernel",
                 lors.ends, permutation.data(), n, 3, ends.data());
}

/// Maps results of the reordered events back: `dst[permutation[k]] =
/// src[k]` for k < permutation.size().
/// @throws invalid_argument as `gather`.
template <class E>
void scatter_back(span<const E> src, span<const std::uint32_t> permutation, span<E> dst,
                  stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  const std::size_t n = permutation.size();
  if (n == 0)
    return;
  const int device = current_device();
  detail::check_device_span(permutation.data(), n, n, "permutation", device);
  detail::check_device_span(src.data(), src.size(), n, "src", device);
  detail::check_device_span(dst.data(), dst.size(), n, "dst", device);
  detail::launch(detail::scatter_back_kernel<E>, (n + 255) / 256, 256, s,
                 "scatter_back_kernel", src.data(), permutation.data(), n, dst.data());
}

} // namespace gpu
RESPROJ_NAMESPACE_END
