/// @file
/// @brief `listmode_order`: one-time reordering of list-mode events for
/// memory locality. A spatial key per event computed on the GPU from its LOR
/// (gpu/listmode_order_keys.cuh), then a radix sort of (key, event index)
/// pairs into a permutation. The gathers that apply the permutation to event
/// arrays (gpu/listmode_gather.cuh) are included.
///
/// Typical use (once per reconstruction; OSEM then reuses the order):
///
///     std::size_t bytes = gpu::listmode_order_workspace_bytes(n);
///     gpu::device_buffer<unsigned char> work(bytes, s);
///     gpu::device_buffer<std::uint32_t> perm(n, s);
///     gpu::listmode_order<float>(geometry, lors, perm.span(),
///                                work.data(), bytes, s);
///     gpu::gather_lors<float>(lors, perm.cspan(), sorted_starts, sorted_ends, s);
///     gpu::gather<std::int16_t>(bins, perm.cspan(), sorted_bins, s);
///     ... project the sorted events, declared
///     `.with_layout(lor_layout::sorted_events())`; value k belongs to
///     event perm[k]:
///     gpu::scatter_back<float>(sorted_values, perm.cspan(), values, s);
///
/// For TOF events the TOF-aware order (the overloads that take the bins
/// and TOF parameters) is the recommended one. The overloads without bins
/// cannot form that key and keep the LOR-only order (also right for non-TOF
/// events).
///
/// Every call is asynchronous on the caller's stream, allocates nothing and
/// is graph-capturable.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/detail/check_device_span.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/listmode_gather.cuh"
#include "resproj/gpu/listmode_order_keys.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// `n` rounded up to a multiple of 256 (workspace pieces are 256-byte aligned).
inline std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

/// cub's temporary storage for sorting `count` (uint32, uint32) pairs on
/// key bits [0, bits).
inline std::size_t order_sort_bytes(std::size_t count, int bits) {
  std::size_t bytes = 0;
  RESPROJ_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const std::uint32_t *>(nullptr),
      static_cast<std::uint32_t *>(nullptr), static_cast<const std::uint32_t *>(nullptr),
      static_cast<std::uint32_t *>(nullptr), static_cast<int>(count), 0, bits,
      cudaStream_t(nullptr)));
  return bytes;
}

/// The larger of the two keys' sort storage (one workspace size serves both).
inline std::size_t order_sort_bytes_any(std::size_t count) {
  return std::max(order_sort_bytes(count, order_key_bits),
                  order_sort_bytes(count, 32)); // any TOF key layout
}

/// @throws invalid_argument ("count") for more events than a sort takes.
inline void check_count_fits(std::size_t count) {
  if (count > std::size_t(std::numeric_limits<std::uint32_t>::max()) ||
      count > std::size_t(std::numeric_limits<int>::max()))
    resproj::detail::throw_invalid("count", "at most 2^31 - 1 events per order (got " +
                                                std::to_string(count) + ")");
}

} // namespace detail

/// Bytes of workspace `listmode_order` (either key) needs for `count`
/// events (keys, indices and the radix sort's temporary storage). Host-only; needs a
/// current CUDA device.
/// @throws invalid_argument ("count") for more than 2^31 - 1 events.
inline std::size_t listmode_order_workspace_bytes(std::size_t count) {
  detail::check_count_fits(count);
  const std::size_t keys = detail::align_up(count * sizeof(std::uint32_t));
  return 3 * keys + detail::align_up(detail::order_sort_bytes_any(count)) + 256;
}

namespace detail {

/// The common part of both orders: validation, workspace carving, the key
/// kernel (`launch_keys(keys, indices)`) and the radix sort on `key_bits`.
template <class T, class LaunchKeys>
void order_events(lor_view<const T> lors, span<std::uint32_t> permutation,
                  void *workspace, std::size_t workspace_bytes, stream_ref s,
                  int key_bits, LaunchKeys &&launch_keys) {
  if (lors.count == 0)
    return;
  const int device = current_device();
  require_device_pointer(lors.starts, device, "lors.starts");
  require_device_pointer(lors.ends, device, "lors.ends");
  check_device_span(permutation.data(), permutation.size(), lors.count, "permutation",
                    device);
  const std::size_t needed = listmode_order_workspace_bytes(lors.count);
  if (workspace_bytes < needed)
    resproj::detail::throw_invalid("workspace_bytes",
                                   "too small: " + std::to_string(workspace_bytes) +
                                       " bytes, needs " + std::to_string(needed));
  require_device_pointer(workspace, device, "workspace");

  // Carve the workspace (256-byte aligned pieces).
  auto base = reinterpret_cast<std::uintptr_t>(workspace);
  base = (base + 255) / 256 * 256;
  const std::size_t key_bytes = align_up(lors.count * sizeof(std::uint32_t));
  auto *keys_in = reinterpret_cast<std::uint32_t *>(base);
  auto *keys_out = reinterpret_cast<std::uint32_t *>(base + key_bytes);
  auto *indices = reinterpret_cast<std::uint32_t *>(base + 2 * key_bytes);
  void *temp = reinterpret_cast<void *>(base + 3 * key_bytes);
  std::size_t temp_bytes = order_sort_bytes(lors.count, key_bits);

  launch_keys(keys_in, indices);
  RESPROJ_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      temp, temp_bytes, keys_in, keys_out, static_cast<const std::uint32_t *>(indices),
      permutation.data(), static_cast<int>(lors.count), 0, key_bits, s.get()));
}

} // namespace detail

/// Computes a locality order of list-mode events: `permutation[k]` is the
/// index of the event to process k-th (a permutation of 0 .. count-1).
/// Sorted by a spatial key of each LOR (transaxial angle, axial tilt,
/// radial offset, axial midpoint: 6, 3, 8 and 9 bits) with
/// cub::DeviceRadixSort on `s`. The order depends only on the LORs, so
/// results of projections of the reordered events are mapped back with
/// `scatter_back`.
///
/// @param box          quantisation range (`listmode_order_box::from(image geometry)`)
/// @param lors         event LORs in device memory (current device)
/// @param permutation  device output, at least `lors.count` values
/// @param workspace    device memory of `workspace_bytes` bytes
/// @param workspace_bytes at least `listmode_order_workspace_bytes(lors.count)`
/// @param s            stream (not the legacy default stream)
/// @throws invalid_argument ("lors", "lors.starts", "permutation", "workspace",
///         "workspace_bytes", "box", "stream") before anything is enqueued.
/// Asynchronous; no allocation; graph-capturable.
template <class T>
void listmode_order(const listmode_order_box &box, lor_view<const T> lors,
                    span<std::uint32_t> permutation, void *workspace,
                    std::size_t workspace_bytes, stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  resproj::detail::check_lors(lors, "lors");
  detail::check_count_fits(lors.count);
  detail::check_box(box);
  detail::order_events<T>(
      lors, permutation, workspace, workspace_bytes, s, detail::order_key_bits,
      [&](std::uint32_t *keys, std::uint32_t *indices) {
        detail::launch(detail::listmode_key_kernel<T>, (lors.count + 255) / 256, 256, s,
                       "listmode_key_kernel", lors.starts, lors.ends, lors.count, box,
                       keys, indices);
      });
}

/// TOF-aware locality order (recommended for TOF events): as above, but
/// the key also places each event
/// at the centre of its TOF bin on its LOR (direction, then a Z-order code
/// of that point; see `listmode_tof_key`), so that events whose TOF
/// windows overlap in space are adjacent. The order depends on the LORs,
/// the bins and the TOF parameters; map results back with `scatter_back`
/// as above. Same workspace size.
///
/// @param bins  the events' TOF bins (device, at least `lors.count`);
///              bins outside [0, N-1] are placed at the nearest bin
/// @param tof   TOF parameters of the events (per-event offsets, if any,
///              device arrays indexed like the events)
/// @param key   key layout (`listmode_tof_key::for_image` of the image
///              the events are projected into and of the events per
///              call, unless tuning; the overloads that take an image
///              geometry pick it)
/// @throws invalid_argument as above, and "bins" / "tof.*" for a null,
///         host or too-small bin array or invalid TOF parameters, "key"
///         for a layout of more than 32 bits, negative bit counts,
///         slab_bits > z_bits, z_bits > xy_bits or a tilt cell that is not finite
///         and > 0.
/// Asynchronous; no allocation; graph-capturable.
template <class T>
void listmode_order(const listmode_order_box &box, lor_view<const T> lors,
                    span<const std::int16_t> bins, const tof_params<T> &tof,
                    span<std::uint32_t> permutation, void *workspace,
                    std::size_t workspace_bytes, stream_ref s,
                    const listmode_tof_key &key = listmode_tof_key{}) {
  detail::require_explicit_stream(s, "stream");
  resproj::detail::check_lors(lors, "lors");
  detail::check_count_fits(lors.count);
  detail::check_box(box);
  detail::check_tof_key(key);
  resproj::detail::check_tof(tof, lors.count);
  if (bins.size() < lors.count)
    resproj::detail::throw_invalid("bins",
                                   "too small: holds " + std::to_string(bins.size()) +
                                       " elements, needs " + std::to_string(lors.count));
  if (lors.count > 0) {
    const int device = current_device();
    require_device_pointer(bins.data(), device, "bins");
    if (!tof.center_offsets.empty())
      require_device_pointer(tof.center_offsets.data(), device, "tof.center_offsets");
  }
  const tof_params<T> call_tof = tof.subview(0, lors.count);
  detail::order_events<T>(
      lors, permutation, workspace, workspace_bytes, s, key.bits(),
      [&](std::uint32_t *keys, std::uint32_t *indices) {
        detail::launch(detail::listmode_tof_key_kernel<T>, (lors.count + 255) / 256, 256,
                       s, "listmode_tof_key_kernel", lors.starts, lors.ends, bins.data(),
                       call_tof, lors.count, box, key, keys, indices);
      });
}

/// TOF-aware order with the box of an image geometry and the key layout
/// for that image and `lors.count` events per call
/// (`listmode_tof_key::for_image`: axial slabs for an image larger than
/// the L2 cache can hold, coarser direction cells for smaller calls). Order
/// the events of each call (such as each OSEM subset) on their own.
template <class T>
void listmode_order(const image_geometry &geometry, lor_view<const T> lors,
                    span<const std::int16_t> bins, const tof_params<T> &tof,
                    span<std::uint32_t> permutation, void *workspace,
                    std::size_t workspace_bytes, stream_ref s) {
  listmode_order<T>(listmode_order_box::from(geometry), lors, bins, tof, permutation,
                    workspace, workspace_bytes, s,
                    listmode_tof_key::for_image(geometry, lors.count));
}

/// TOF-aware order with the box of an image geometry and the key layout
/// `key` (for tuning).
template <class T>
void listmode_order(const image_geometry &geometry, lor_view<const T> lors,
                    span<const std::int16_t> bins, const tof_params<T> &tof,
                    span<std::uint32_t> permutation, void *workspace,
                    std::size_t workspace_bytes, stream_ref s,
                    const listmode_tof_key &key) {
  listmode_order<T>(listmode_order_box::from(geometry), lors, bins, tof, permutation,
                    workspace, workspace_bytes, s, key);
}

/// As above, with the box of an image geometry.
template <class T>
void listmode_order(const image_geometry &geometry, lor_view<const T> lors,
                    span<std::uint32_t> permutation, void *workspace,
                    std::size_t workspace_bytes, stream_ref s) {
  listmode_order<T>(listmode_order_box::from(geometry), lors, permutation, workspace,
                    workspace_bytes, s);
}

} // namespace gpu
RESPROJ_NAMESPACE_END
