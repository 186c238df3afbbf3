/// @file
/// @brief The kernel that decodes a window of PETSIRD prompt and delayed
/// lists on the device (`petsird_decode_kernel`): one warp per tile of
/// io/petsird/list_plan.hpp, each lane finding the varint ends in 32 bytes
/// of the tile's page; a warp-wide prefix count numbers them, and each
/// varint is decoded from the byte where it ends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/io/petsird/list_plan.hpp"
#include "resproj/io/petsird/varint_index.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Threads per block of `petsird_decode_kernel` (one warp per tile).
inline constexpr int petsird_decode_threads = 256;
static_assert(io::petsird::varint_page_bytes == 32 * 32,
              "a warp's 32 lanes read 32 bytes each of one page");

/// One bit per byte of the 32 bytes at `p` (16-byte aligned) below 0x80.
__device__ inline unsigned varint_end_mask32(const unsigned char *p) {
  const uint4 a = reinterpret_cast<const uint4 *>(p)[0];
  const uint4 b = reinterpret_cast<const uint4 *>(p)[1];
  const unsigned words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  unsigned mask = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const unsigned m = ~words[i] & 0x80808080u; // bits 7, 15, 23, 31
    mask |= (((m >> 7) | (m >> 14) | (m >> 21) | (m >> 28)) & 0xfu) << (4 * i);
  }
  return mask;
}

/// Bits `[from, to)` of a 32-bit mask, the bounds clamped to `[0, 32]`.
__device__ inline unsigned bit_range32(long long from, long long to) {
  from = from < 0 ? 0 : (from > 32 ? 32 : from);
  to = to < 0 ? 0 : (to > 32 ? 32 : to);
  if (to <= from)
    return 0u;
  const unsigned upto = to == 32 ? 0xffffffffu : (1u << to) - 1u;
  const unsigned below = from == 32 ? 0xffffffffu : (1u << from) - 1u;
  return upto & ~below;
}

/// Decodes the `num_tiles` tiles of a window (`window`: its bytes, padded
/// to whole pages and 16-byte aligned) into the output arrays; a varint or
/// value that the reader rejects lowers `*bad_window` to `window_index`.
RESPROJ_KERNEL void __launch_bounds__(petsird_decode_threads)
    petsird_decode_kernel(const unsigned char *__restrict__ window,
                          const io::petsird::detail::list_tile *__restrict__ tiles,
                          std::uint64_t num_tiles,
                          const io::petsird::detail::coincidence_list *__restrict__ lists,
                          std::int32_t *prompt_pairs, std::int16_t *prompt_tof_bins,
                          std::int32_t *delayed_pairs, std::int16_t *delayed_tof_bins,
                          unsigned *bad_window, unsigned window_index) {
  const std::uint64_t warp = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32u;
  const unsigned lane = threadIdx.x % 32u;
  if (warp >= num_tiles)
    return; // the whole warp
  const io::petsird::detail::list_tile tile = tiles[warp];
  const io::petsird::detail::coincidence_list &l = lists[tile.list];
  const std::uint64_t page =
      tile.begin / io::petsird::varint_page_bytes * io::petsird::varint_page_bytes;
  const std::uint64_t at = page + 32u * lane;
  const long long from = (long long)tile.begin - (long long)at;
  unsigned mask = varint_end_mask32(window + at) & bit_range32(from, from + tile.bytes);
  const unsigned count = __popc(mask);
  unsigned before = count; // inclusive prefix over the lanes
#pragma unroll
  for (unsigned offset = 1; offset < 32u; offset *= 2u) {
    const unsigned other = __shfl_up_sync(0xffffffffu, before, offset);
    if (lane >= offset)
      before += other;
  }
  std::uint64_t v = tile.first_varint + (before - count);
  const bool delayed = l.delayed != 0;
  std::int32_t *const pairs = delayed ? delayed_pairs : prompt_pairs;
  std::int16_t *const tof_bins = delayed ? delayed_tof_bins : prompt_tof_bins;
  bool ok = true;
  while (mask != 0u) {
    const unsigned bit = unsigned(__ffs(int(mask))) - 1u;
    mask &= mask - 1u;
    std::uint32_t value = 0;
    ok = io::petsird::detail::decode_varint_at(window, at + bit, l.begin, value) &&
         io::petsird::detail::store_coincidence_field(l, v, value, pairs, tof_bins) && ok;
    ++v;
  }
  if (!ok)
    atomicMin(bad_window, window_index);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
