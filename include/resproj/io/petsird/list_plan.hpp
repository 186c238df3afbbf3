/// @file
/// @brief The prompt and delayed lists of a window of PETSIRD time blocks,
/// planned for decoding in parallel (`plan_window`): a varint ends at each
/// byte below 0x80, so once the scan knows where each list starts and how
/// many varints precede each 1 KiB page of it (`varint_end_index`), every
/// varint can be decoded on its own from the byte where it ends, and its
/// index in the list says which event and field it is. `decode_varint_at`
/// and `store_coincidence_field` are that per-varint work, shared by the
/// GPU kernel and `decode_plan` (the same work on the host). Standard
/// library only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/varint_index.hpp"
#include "resproj/io/petsird/window_walk.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {
namespace detail {

/// A prompt or delayed list of a window: where its events are and what
/// its two module types need to become detector pairs (`detector_map`)
/// and valid TOF bins. Plain data, for the host and the device.
struct coincidence_list {
  std::uint64_t begin = 0;       ///< window offset of its first byte
  std::uint64_t first_event = 0; ///< its first event's index in the output array
  std::uint64_t bins_a = 0;      ///< detection bins of module type a
  std::uint64_t bins_b = 0;      ///< detection bins of module type b
  std::int32_t first_a = 0;      ///< first detector index of type a
  std::int32_t first_b = 0;      ///< first detector index of type b
  std::uint32_t energy_a = 1;    ///< energy bins of type a
  std::uint32_t energy_b = 1;    ///< energy bins of type b
  std::uint32_t tof_end = 1;     ///< TOF indices below it are valid
  std::uint32_t delayed = 0;     ///< 1: a delayed list
};

/// The varints of one list that end in `[begin, begin + bytes)`, a stretch
/// within one `varint_page_bytes` page of the window.
struct list_tile {
  std::uint64_t begin = 0;        ///< window offset
  std::uint64_t first_varint = 0; ///< list index of the first varint ending here
  std::uint32_t bytes = 0;        ///< at most varint_page_bytes
  std::uint32_t list = 0;         ///< index in window_plan::lists
};

/// The lists and tiles of a window's complete time blocks.
struct window_plan {
  std::vector<coincidence_list> lists;
  std::vector<list_tile> tiles;
  std::uint64_t prompts = 0;  ///< prompts in the window's complete blocks
  std::uint64_t delayeds = 0; ///< delayeds in the window's complete blocks
};

/// Decodes the uint32 varint that ends at `raw[t]` (a byte below 0x80) and
/// starts at or after `begin`, into `value`. False where `reader` fails:
/// more than ten bytes, or a value past 32 bits.
RESPROJ_HD inline bool decode_varint_at(const unsigned char *raw, std::uint64_t t,
                                        std::uint64_t begin, std::uint32_t &value) {
  std::uint64_t s = t;
  while (s > begin && raw[s - 1] >= 0x80u) {
    if (t - s == 9)
      return false; // an eleventh byte
    --s;
  }
  std::uint64_t v = 0;
  for (std::uint64_t i = 0; s + i <= t; ++i) {
    const std::uint64_t group = raw[s + i] & 0x7fu;
    if (7 * i >= 32) {
      if (group != 0)
        return false;
    } else {
      v |= group << (7 * i);
    }
  }
  if (v > 0xffffffffu)
    return false;
  value = std::uint32_t(v);
  return true;
}

/// Stores varint `v` (index in list `l`: event v / 3, field v % 3: detection
/// bin a, detection bin b, TOF index) with value `value`: a detection bin
/// becomes its detector index in `pairs`, a TOF index goes to `tof_bins`.
/// False for a detection bin or TOF index out of range (nothing stored).
RESPROJ_HD inline bool store_coincidence_field(const coincidence_list &l, std::uint64_t v,
                                               std::uint32_t value, std::int32_t *pairs,
                                               std::int16_t *tof_bins) {
  const std::uint64_t e = v / 3;
  const unsigned field = unsigned(v - 3 * e);
  const std::uint64_t event = l.first_event + e;
  if (field == 2) {
    if (value >= l.tof_end)
      return false;
    tof_bins[event] = std::int16_t(value);
    return true;
  }
  const bool a = field == 0;
  if (value >= (a ? l.bins_a : l.bins_b))
    return false;
  const std::uint32_t energy = a ? l.energy_a : l.energy_b;
  const std::uint32_t element = energy == 1 ? value : value / energy;
  pairs[2 * event + field] = (a ? l.first_a : l.first_b) + std::int32_t(element);
  return true;
}

/// Scans the window `in` (starting at `at`, bytes `window`, indexed by
/// `index`) as `scan_window` does (prompt and delayed matrices of at most
/// the scanner's module types), skipping each list through the index, and fills `plan`
/// with the lists and tiles of the complete blocks; their events are numbered after
/// `prompts_before` / `delayeds_before`.
/// @return the scan (blocks, consumed bytes, state, error)
inline window_scan plan_window(binary_input &in, const window_start &at,
                               const unsigned char *window, const varint_end_index &index,
                               const detector_map &map, const scanner_information &s,
                               std::uint64_t prompts_before,
                               std::uint64_t delayeds_before, window_plan &plan) {
  plan.lists.clear();
  plan.tiles.clear();
  plan.prompts = plan.delayeds = 0;
  const std::uint64_t origin = in.offset();
  std::vector<std::uint64_t> ends, counts;
  const std::size_t types = map.num_module_types();
  auto list = [&](binary_input &b, bool delayed, std::size_t ta, std::size_t tb,
                  std::uint64_t n, const std::string &what) {
    if (n == 0)
      return;
    const std::uint64_t begin = b.offset() - origin;
    const std::size_t end = index.skip(std::size_t(begin), 3 * n);
    if (end > index.size()) {
      detail::skip_varints(b, 3 * n, what); // fails as the scan does
      return;
    }
    b.advance(std::size_t(end - begin));
    coincidence_list l;
    l.begin = begin;
    l.bins_a = map.num_detection_bins(ta);
    l.bins_b = map.num_detection_bins(tb);
    l.first_a = map.first_detector(ta);
    l.first_b = map.first_detector(tb);
    l.energy_a = std::uint32_t(map.num_energy_bins(ta));
    l.energy_b = std::uint32_t(map.num_energy_bins(tb));
    const std::size_t ntof = s.num_tof_bins(ta, tb);
    l.tof_end = ntof == 0 ? 1u : std::uint32_t(std::min<std::size_t>(ntof, 32768));
    l.delayed = delayed ? 1u : 0u;
    plan.lists.push_back(l);
    ends.push_back(end);
    counts.push_back(n);
  };
  const window_scan w = scan_window(in, at.stream_left, list, types);
  // Lists of a block the scan did not complete come last; drop them.
  while (!plan.lists.empty() && plan.lists.back().begin >= w.consumed) {
    plan.lists.pop_back();
    ends.pop_back();
    counts.pop_back();
  }
  for (std::size_t i = 0; i < plan.lists.size(); ++i) {
    coincidence_list &l = plan.lists[i];
    std::uint64_t &count = l.delayed != 0 ? plan.delayeds : plan.prompts;
    l.first_event = (l.delayed != 0 ? delayeds_before : prompts_before) + count;
    count += counts[i];
    std::uint64_t v = 0;
    for (std::uint64_t p = l.begin; p < ends[i];) {
      const std::uint64_t page = p / varint_page_bytes;
      const std::uint64_t page_end =
          std::min<std::uint64_t>((page + 1) * varint_page_bytes, ends[i]);
      plan.tiles.push_back({p, v, std::uint32_t(page_end - p), std::uint32_t(i)});
      v += p == page * varint_page_bytes && page_end == (page + 1) * varint_page_bytes
               ? index.page_ends(std::size_t(page))
               : count_varint_ends(window + p, std::size_t(page_end - p));
      p = page_end;
    }
  }
  return w;
}

/// Decodes the tiles of `plan` over `window` on the host, one after
/// another (the GPU kernel's work), into arrays indexed as
/// `coincidence_list::first_event` says.
/// @return false at the first varint or value that `reader` rejects
inline bool decode_plan(const unsigned char *window, const window_plan &plan,
                        std::int32_t *prompt_pairs, std::int16_t *prompt_tof_bins,
                        std::int32_t *delayed_pairs, std::int16_t *delayed_tof_bins) {
  for (const list_tile &tile : plan.tiles) {
    const coincidence_list &l = plan.lists[tile.list];
    std::uint64_t v = tile.first_varint;
    for (std::uint64_t t = tile.begin; t < tile.begin + tile.bytes; ++t) {
      if (window[t] >= 0x80u)
        continue;
      std::uint32_t value = 0;
      if (!decode_varint_at(window, t, l.begin, value) ||
          !store_coincidence_field(l, v, value,
                                   l.delayed != 0 ? delayed_pairs : prompt_pairs,
                                   l.delayed != 0 ? delayed_tof_bins : prompt_tof_bins))
        return false;
      ++v;
    }
  }
  return true;
}

} // namespace detail
} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
