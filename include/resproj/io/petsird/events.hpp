/// @file
/// @brief `petsird::event_chunk` (prompt and delayed coincidences as
/// detector pairs and TOF bins, ready for the projectors and
/// `recon::listmode_data`) and `petsird::event_decoder`, which decodes the
/// stream of time blocks into chunks of bounded size, resuming inside a
/// time block where the previous chunk stopped. Standard library only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/efficiency.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/skip.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

using detail::time_block_kind;

/// A time block as the decoder met it: its kind, its time interval (ms
/// since the start of the acquisition) and its position in the stream.
struct time_block_info {
  time_block_kind kind = time_block_kind::event;
  std::uint32_t start_ms = 0, stop_ms = 0;
  std::uint64_t index = 0;  ///< 0-based among all time blocks
  std::uint64_t offset = 0; ///< byte offset of its union tag
};

/// Coincidences of one kind (prompt or delayed), one entry per event.
struct coincidence_arrays {
  /// `[a0 b0 a1 b1 ...]`: detector indices (`detector_map`); `a` is the
  /// first detection bin of the PETSIRD event.
  std::vector<std::int32_t> pairs;
  /// PETSIRD's TOF bin index (bin 0 nearest detector a; see tof.hpp).
  std::vector<std::int16_t> tof_bins;
  /// Energy bin of detection a and b (`[ea0 eb0 ea1 eb1 ...]`).
  std::vector<std::uint16_t> energy_bins;
  /// Detection efficiency per event (`efficiency_model::factor`), only
  /// when the decoder was given a model.
  std::vector<float> efficiency;

  /// Number of events.
  std::size_t size() const noexcept { return tof_bins.size(); }
  void clear() noexcept {
    pairs.clear();
    tof_bins.clear();
    energy_bins.clear();
    efficiency.clear();
  }
};

/// One chunk of decoded events.
struct event_chunk {
  coincidence_arrays prompts;
  coincidence_arrays delayeds;
  /// Time blocks begun in this chunk (event blocks and the other kinds,
  /// whose contents are skipped).
  std::vector<time_block_info> blocks;
  /// Single, triple and quadruple events skipped in this chunk.
  std::uint64_t skipped_events = 0;

  /// Prompts plus delayeds.
  std::size_t num_events() const noexcept { return prompts.size() + delayeds.size(); }
  void clear() noexcept {
    prompts.clear();
    delayeds.clear();
    blocks.clear();
    skipped_events = 0;
  }
};

/// Appends the events, blocks and skipped count of `from` to `to`.
inline void append_events(event_chunk &to, const event_chunk &from) {
  auto append = [](coincidence_arrays &a, const coincidence_arrays &b) {
    a.pairs.insert(a.pairs.end(), b.pairs.begin(), b.pairs.end());
    a.tof_bins.insert(a.tof_bins.end(), b.tof_bins.begin(), b.tof_bins.end());
    a.energy_bins.insert(a.energy_bins.end(), b.energy_bins.begin(), b.energy_bins.end());
    a.efficiency.insert(a.efficiency.end(), b.efficiency.begin(), b.efficiency.end());
  };
  append(to.prompts, from.prompts);
  append(to.delayeds, from.delayeds);
  to.blocks.insert(to.blocks.end(), from.blocks.begin(), from.blocks.end());
  to.skipped_events += from.skipped_events;
}

/// Decodes the time-block stream that follows the header, resumably: each
/// `next` call appends at most `max_events` prompts + delayeds to a chunk,
/// stopping inside a time block if need be. Every detection bin is checked
/// against its module type and every TOF index against the TOF bins of
/// the module-type pair (an io_error names the block and event otherwise).
/// Not thread-safe; one decoder per input.
class event_decoder {
public:
  /// @param in     the input, positioned after the header
  /// @param s      the scanner (outlives the decoder)
  /// @param model  efficiency model for per-event efficiencies, or null
  event_decoder(binary_input &in, const scanner_information &s,
                const efficiency_model *model = nullptr)
      : in_(&in), s_(&s), map_(s), model_(model) {}

  /// Whether the end of the stream was reached (and checked).
  bool done() const noexcept { return done_; }

  /// Appends up to `max_events` (>= 1) events to `out` (not cleared).
  /// @return false when the stream had ended before this call.
  /// @throws io_error for malformed or truncated data.
  bool next(std::size_t max_events, event_chunk &out) {
    if (done_)
      return false;
    std::size_t budget = max_events == 0 ? 1 : max_events;
    while (budget > 0 && !done_) {
      if (in_block_) {
        decode_lists(budget, out);
        continue;
      }
      begin_block(out);
    }
    return true;
  }

  /// Decodes exactly one time block (its union tag first, no stream
  /// count), appending all its events to `out`; `index` numbers it in
  /// messages and in `out.blocks`. For block-parallel decoding.
  /// @throws io_error for malformed or truncated data.
  void decode_block(std::uint64_t index, event_chunk &out) {
    block_index_ = index;
    stream_left_ = 1;
    begin_block(out);
    std::size_t budget = ~std::size_t(0);
    while (in_block_)
      decode_lists(budget, out);
  }

  /// Resumes the stream at a time block (the input positioned at its
  /// union tag, or at a stream count when `stream_left` is 0): `index`
  /// numbers it, `stream_left` time blocks (it included) are left in the
  /// current stream block. For decoders started inside the stream.
  void resume(std::uint64_t index, std::uint64_t stream_left) noexcept {
    block_index_ = index;
    stream_left_ = stream_left;
    in_block_ = false;
    done_ = false;
  }

private:
  enum class phase { prompts, delayeds, rest };

  std::string where() const { return "time block " + std::to_string(block_index_ - 1); }

  void begin_block(event_chunk &out) {
    if (stream_left_ == 0) {
      stream_left_ = in_->uvarint("time_blocks (stream block count)");
      if (stream_left_ == 0) {
        if (in_->remaining() != 0)
          in_->fail("end of file", std::to_string(in_->remaining()) +
                                       " bytes after the end of the time-block stream");
        done_ = true;
        return;
      }
    }
    --stream_left_;
    time_block_info info;
    info.index = block_index_++;
    info.offset = in_->offset();
    const std::uint8_t tag = in_->byte(where() + " (union tag)");
    if (tag > 5)
      in_->fail(where() + " (union tag)",
                "tag " + std::to_string(tag) + " is not a PETSIRD time block (0-5)",
                info.offset);
    info.kind = time_block_kind(tag);
    info.start_ms = in_->u32(where() + ".time_interval.start");
    info.stop_ms = in_->u32(where() + ".time_interval.stop");
    out.blocks.push_back(info);
    if (info.kind != time_block_kind::event) {
      detail::skip_other_block(*in_, info.kind);
      return;
    }
    // Singles come first: skipped, counted.
    const std::size_t nt = in_->count(where() + ".single_events (size)", 1);
    for (std::size_t t = 0; t < nt; ++t) {
      const std::size_t n = in_->count(where() + ".single_events (list size)", 2);
      out.skipped_events += n;
      detail::skip_varints(*in_, 2 * std::uint64_t(n), where() + ".single_events");
    }
    in_block_ = true;
    phase_ = phase::prompts;
    start_matrix();
  }

  void start_matrix() {
    const char *name = phase_ == phase::prompts ? ".prompt_events" : ".delayed_events";
    rows_ = in_->count(where() + name + " (size)", 1, s_->num_module_types());
    t1_ = 0;
    cols_ = 0;
    t2_ = 0;
    list_left_ = 0;
    row_open_ = false;
  }

  /// Decodes prompt then delayed lists until the budget is spent or the
  /// block's coincidences are done (then skips triples and quadruples).
  void decode_lists(std::size_t &budget, event_chunk &out) {
    while (budget > 0) {
      if (list_left_ > 0) {
        const std::size_t n = std::size_t(std::min<std::uint64_t>(list_left_, budget));
        decode_events(n, phase_ == phase::prompts ? out.prompts : out.delayeds);
        list_left_ -= n;
        budget -= n;
        if (list_left_ > 0)
          return;
        ++t2_;
        continue;
      }
      const char *name = phase_ == phase::prompts ? ".prompt_events" : ".delayed_events";
      if (row_open_ && t2_ < cols_) {
        list_left_ = in_->count(where() + name + " (list size)", 3);
        if (list_left_ == 0)
          ++t2_;
        continue;
      }
      if (row_open_) {
        row_open_ = false;
        ++t1_;
      }
      if (t1_ < rows_) {
        cols_ = in_->count(where() + name + " (row size)", 1, s_->num_module_types());
        t2_ = 0;
        row_open_ = true;
        continue;
      }
      if (phase_ == phase::prompts) {
        phase_ = phase::delayeds;
        start_matrix();
        continue;
      }
      // Triples (4 levels of vectors) and quadruples (5 levels), 5 varints each.
      out.skipped_events += skip_multiples(4) + skip_multiples(5);
      in_block_ = false;
      return;
    }
  }

  std::uint64_t skip_multiples(int depth) {
    // Counted by walking the nesting; elements are 5 varints.
    const std::string what =
        where() + (depth == 4 ? ".triple_events" : ".quadruple_events");
    return skip_level(depth, what);
  }
  std::uint64_t skip_level(int depth, const std::string &what) {
    const std::size_t n = in_->count(what + " (size)", depth == 1 ? 5 : 1);
    if (depth == 1) {
      detail::skip_varints(*in_, 5 * std::uint64_t(n), what);
      return n;
    }
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i)
      total += skip_level(depth - 1, what);
    return total;
  }

  void decode_events(std::size_t n, coincidence_arrays &a) {
    const std::size_t ta = t1_, tb = t2_;
    const char *name = phase_ == phase::prompts ? ".prompt_events" : ".delayed_events";
    const std::string what =
        where() + name + "[" + std::to_string(ta) + "][" + std::to_string(tb) + "]";
    const std::uint64_t na = map_.num_detection_bins(ta),
                        nb = map_.num_detection_bins(tb);
    const std::size_t ntof = s_->num_tof_bins(ta, tb);
    // The arrays get room for the whole list (its size was checked against
    // the bytes left) and keep the events decoded, also when one fails.
    const std::size_t e0 = a.tof_bins.size();
    struct keep_decoded {
      coincidence_arrays &a;
      bool efficiency;
      std::size_t events;
      void resize(std::size_t e) {
        a.pairs.resize(2 * e);
        a.tof_bins.resize(e);
        a.energy_bins.resize(2 * e);
        if (efficiency)
          a.efficiency.resize(e);
      }
      ~keep_decoded() { resize(events); }
    } kept{a, model_ != nullptr, e0};
    kept.resize(e0 + n);
    std::int32_t *const pairs = a.pairs.data() + 2 * e0;
    std::int16_t *const tof_bins = a.tof_bins.data() + e0;
    std::uint16_t *const energy_bins = a.energy_bins.data() + 2 * e0;
    float *const efficiency = model_ != nullptr ? a.efficiency.data() + e0 : nullptr;
    // The error of an event that starts at offset `at`.
    const auto reject = [&](std::uint32_t ba, std::uint32_t bb, std::uint32_t tof,
                            std::uint64_t at) {
      if (ba >= na || bb >= nb)
        in_->fail(what,
                  "detection bin " + std::to_string(ba >= na ? ba : bb) +
                      " is past the " + std::to_string(ba >= na ? na : nb) +
                      " detection bins of module type " +
                      std::to_string(ba >= na ? ta : tb),
                  at);
      in_->fail(what,
                "TOF index " + std::to_string(tof) + " is past the " +
                    std::to_string(ntof == 0 ? 1 : ntof) +
                    " TOF bins of the module-type pair" +
                    (tof > 32767 ? " (at most 32767 are supported)" : ""),
                at);
    };
    // TOF indices below `tof_end` are valid (0 only without TOF bins).
    const std::uint32_t tof_end =
        ntof == 0 ? 1u : std::uint32_t(std::min<std::size_t>(ntof, 32768));
    const auto store = [&](std::uint32_t ba, std::uint32_t bb, std::uint32_t tof,
                           std::uint64_t at) {
      if (ba >= na || bb >= nb || tof >= tof_end)
        reject(ba, bb, tof, at);
      const auto da = map_.split_bin(ta, ba), db = map_.split_bin(tb, bb);
      const std::size_t e = kept.events - e0;
      pairs[2 * e] = da.first;
      pairs[2 * e + 1] = db.first;
      tof_bins[e] = std::int16_t(tof);
      energy_bins[2 * e] = da.second;
      energy_bins[2 * e + 1] = db.second;
      if (efficiency != nullptr)
        efficiency[e] = model_->factor(ta, ba, tb, bb);
      ++kept.events;
    };
    std::size_t i = 0;
    while (i < n) {
      // Events whose three varints are short and in view, decoded in place.
      std::size_t avail = 0;
      const unsigned char *const start = in_->view(avail);
      const unsigned char *p = start;
      for (; i < n && std::size_t(p - start) + 15 <= avail; ++i) {
        const unsigned char *q = p;
        std::uint32_t ba, bb, tof;
        if (!binary_input::quick_u32(q, ba) || !binary_input::quick_u32(q, bb) ||
            !binary_input::quick_u32(q, tof))
          break;
        const std::size_t done = std::size_t(p - start);
        store(ba, bb, tof, in_->offset() + done);
        p = q;
      }
      in_->advance(std::size_t(p - start));
      if (i == n)
        break;
      // One event through the checked reads (the buffer's end, long varints).
      const std::uint64_t at = in_->offset();
      const std::uint32_t ba = in_->u32(what), bb = in_->u32(what), tof = in_->u32(what);
      store(ba, bb, tof, at);
      ++i;
    }
  }

  binary_input *in_;
  const scanner_information *s_;
  detector_map map_;
  const efficiency_model *model_;
  bool done_ = false, in_block_ = false, row_open_ = false;
  phase phase_ = phase::prompts;
  std::uint64_t stream_left_ = 0, block_index_ = 0, list_left_ = 0;
  std::size_t rows_ = 0, cols_ = 0, t1_ = 0, t2_ = 0;
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
