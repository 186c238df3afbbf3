/// @file
/// @brief The `tb` list-mode event set of docs/benchmark-problems.md
/// (`tb-lm`): random crystal pairs of the total-body scanner whose LOR
/// crosses the image, with a TOF bin each, generated in chunks of any size
/// into the caller's arrays (seeded, one generator per block of 65,536
/// events, so the events depend neither on the chunking nor on the number
/// of host threads). Standard library and resproj only (no Google
/// Benchmark), so that tests can include it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/scanner/tb.hpp"

namespace resproj_bench {

/// `tb-lm`: 1e8 events, this seed.
inline constexpr std::size_t tb_lm_events = 100000000;
inline constexpr std::uint64_t tb_lm_seed = 20261201;
/// TOF bins of `tb-lm` events: uniform in [14, 26] (13 central bins of 41).
inline constexpr int tb_lm_first_bin = 14;
inline constexpr int tb_lm_last_bin = 26;
/// Events per seeded generator: block k of events uses
/// `std::mt19937_64(seed + 7919 k)`.
inline constexpr std::uint64_t tb_event_block = 65536;

/// The tb TOF parameters (`scanner::tb_tof`).
template <class T> resproj::tof_params<T> tb_tof() {
  return resproj::scanner::tb_tof<T>();
}

/// An integer uniform in [0, n) from `rng`, the same with every standard
/// library (unlike std::uniform_int_distribution): 64-bit draws below
/// `2^64 mod n` are rejected, the rest taken modulo n. n >= 1.
inline std::uint64_t uniform_below(std::mt19937_64 &rng, std::uint64_t n) {
  const std::uint64_t threshold = (std::uint64_t(0) - n) % n; // 2^64 mod n
  std::uint64_t u = rng();
  while (u < threshold)
    u = rng();
  return u % n;
}

/// The `tb-lm` events. Event i is drawn by the generator of its block
/// (`tb_event_block`): detector a, then detector b, both uniform over the
/// 564,480 detectors of `scanner::tb()` (index `ring * 840 + crystal`),
/// drawn again (both) until the segment between their centres meets the
/// image box of `scanner::tb_image_geometry()` (`lor_crosses_image`); then
/// a TOF bin uniform in [14, 26]. Events come in acquisition order (no
/// sorting). Holds the float detector table (6.8 MB); immutable after
/// construction, so concurrent calls are safe.
class tb_lm_generator {
public:
  /// @param seed the problem's seed (`tb_lm_seed` for `tb-lm`).
  explicit tb_lm_generator(std::uint64_t seed = tb_lm_seed)
      : seed_(seed), image_(resproj::scanner::tb_image_geometry()),
        grid_(resproj::math::image_grid<float>::from(image_)),
        xyz_(resproj::scanner::tb().detector_centres()) {}

  std::uint64_t seed() const noexcept { return seed_; }
  /// The detector table the pairs index: xyz per detector, float, as
  /// `scanner::tb().detector_centres()`.
  const std::vector<float> &detectors() const noexcept { return xyz_; }
  /// Number of detectors (564,480).
  std::int32_t num_detectors() const noexcept { return std::int32_t(xyz_.size() / 3); }
  /// The image whose box the LORs must cross.
  const resproj::image_geometry &image() const noexcept { return image_; }

  /// Whether the segment from detector a to detector b meets the closed
  /// image box, decided as the projectors decide it: float centres,
  /// `math::clip_to_box` on `b - a`. A pair of one detector never does
  /// (the crystals lie outside the box).
  /// @throws resproj::invalid_argument ("detector") if a or b is out of
  ///         range.
  bool lor_crosses_image(std::int32_t a, std::int32_t b) const {
    if (a < 0 || a >= num_detectors() || b < 0 || b >= num_detectors())
      resproj::detail::throw_invalid(
          "detector", "must be in [0, " + std::to_string(num_detectors()) + ")");
    return crosses(std::size_t(a), std::size_t(b));
  }

  /// Writes events `[first, first + n)` of the event set, n = `bins.size()`:
  /// detectors a, b of event `first + i` to `pairs[2 i]`, `pairs[2 i + 1]`,
  /// its TOF bin to `bins[i]`. Blocks run on `threads` host threads (0: as
  /// many as the hardware has). Nothing beyond the outputs is allocated, so
  /// any number of events can be made chunk by chunk; a chunk that starts
  /// inside a block first draws and drops the block's earlier events.
  /// @throws resproj::invalid_argument ("pairs") if it holds fewer than
  ///         2 n values (nothing is written then).
  void generate(std::uint64_t first, resproj::span<std::int32_t> pairs,
                resproj::span<std::int16_t> bins, unsigned threads = 0) const {
    const std::uint64_t n = bins.size();
    resproj::detail::check_span(pairs, 2 * bins.size(), "pairs");
    if (n == 0)
      return;
    const std::uint64_t last = first + n; // one past
    const std::uint64_t block0 = first / tb_event_block;
    const std::uint64_t blocks = (last - 1) / tb_event_block - block0 + 1;
    if (threads == 0)
      threads = std::max(1u, std::thread::hardware_concurrency());
    const unsigned workers = unsigned(std::min<std::uint64_t>(threads, blocks));
    resproj::run_parallel_tasks(
        blocks, workers, nullptr, [&](unsigned, std::uint64_t t, const auto &) {
          const std::uint64_t k = block0 + t;
          std::mt19937_64 rng(seed_ + 7919 * k);
          const std::uint64_t begin = k * tb_event_block;
          const std::uint64_t end = std::min(last, begin + tb_event_block);
          for (std::uint64_t i = begin; i < end; ++i) {
            std::uint32_t a, b;
            int bin;
            draw(rng, a, b, bin);
            if (i < first)
              continue;
            const std::size_t j = std::size_t(i - first);
            pairs[2 * j] = std::int32_t(a);
            pairs[2 * j + 1] = std::int32_t(b);
            bins[j] = std::int16_t(bin);
          }
        });
  }

  /// Calls `f(first, pairs, bins)` for consecutive chunks of at most
  /// `chunk` events covering events `[0, count)` (spans of `const
  /// std::int32_t` / `const std::int16_t`, valid during the call only):
  /// memory stays at one chunk whatever `count`.
  /// @throws resproj::invalid_argument ("chunk") if 0; whatever f throws.
  template <class F>
  void for_each_chunk(std::uint64_t count, std::size_t chunk, F &&f,
                      unsigned threads = 0) const {
    if (chunk == 0)
      resproj::detail::throw_invalid("chunk", "must be > 0");
    const std::size_t size = std::size_t(std::min<std::uint64_t>(chunk, count));
    std::vector<std::int32_t> pairs(2 * size);
    std::vector<std::int16_t> bins(size);
    for (std::uint64_t first = 0; first < count; first += chunk) {
      const std::size_t n = std::size_t(std::min<std::uint64_t>(chunk, count - first));
      generate(first, resproj::span<std::int32_t>(pairs.data(), 2 * n),
               resproj::span<std::int16_t>(bins.data(), n), threads);
      f(first, resproj::span<const std::int32_t>(pairs.data(), 2 * n),
        resproj::span<const std::int16_t>(bins.data(), n));
    }
  }

  /// End points of detector pairs: `starts[3 i + k]`, `ends[3 i + k]` =
  /// coordinate k of detectors `pairs[2 i]`, `pairs[2 i + 1]`.
  /// @throws resproj::invalid_argument ("pairs" if odd, "starts" / "ends"
  ///         if too small, "pairs[i]" for an index out of range; nothing is
  ///         written for the first three).
  void end_points(resproj::span<const std::int32_t> pairs, resproj::span<float> starts,
                  resproj::span<float> ends) const {
    if (pairs.size() % 2 != 0)
      resproj::detail::throw_invalid("pairs", "size must be even");
    const std::size_t n = pairs.size() / 2;
    resproj::detail::check_span(starts, 3 * n, "starts");
    resproj::detail::check_span(ends, 3 * n, "ends");
    for (std::size_t i = 0; i < 2 * n; ++i)
      if (pairs[i] < 0 || pairs[i] >= num_detectors())
        resproj::detail::throw_invalid("pairs[" + std::to_string(i) + "]",
                                       "detector out of range");
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < 3; ++k) {
        starts[3 * i + k] = xyz_[3 * std::size_t(pairs[2 * i]) + k];
        ends[3 * i + k] = xyz_[3 * std::size_t(pairs[2 * i + 1]) + k];
      }
  }

private:
  bool crosses(std::size_t a, std::size_t b) const noexcept {
    const float *pa = xyz_.data() + 3 * a, *pb = xyz_.data() + 3 * b;
    const float d[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
    float t_in = 0, t_out = 0;
    return resproj::math::clip_to_box(grid_, pa, d, t_in, t_out);
  }

  void draw(std::mt19937_64 &rng, std::uint32_t &a, std::uint32_t &b, int &bin) const {
    const std::uint64_t n = xyz_.size() / 3;
    do {
      a = std::uint32_t(uniform_below(rng, n));
      b = std::uint32_t(uniform_below(rng, n));
    } while (!crosses(a, b));
    bin = tb_lm_first_bin +
          int(uniform_below(rng, std::uint64_t(tb_lm_last_bin - tb_lm_first_bin + 1)));
  }

  std::uint64_t seed_;
  resproj::image_geometry image_;
  resproj::math::image_grid<float> grid_;
  std::vector<float> xyz_;
};

/// `tb-lm` events held whole (8 + 2 bytes per event: 1 GB for 1e8).
struct tb_events {
  std::vector<std::int32_t> pairs; ///< (a, b) per event
  std::vector<std::int16_t> bins;  ///< TOF bin per event
  std::size_t size() const noexcept { return bins.size(); }
};

/// Events `[0, count)` of the `tb-lm` event set with `seed`.
inline tb_events make_tb_events(std::size_t count, std::uint64_t seed = tb_lm_seed,
                                unsigned threads = 0) {
  tb_events e;
  e.pairs.resize(2 * count);
  e.bins.resize(count);
  tb_lm_generator(seed).generate(
      0, resproj::span<std::int32_t>(e.pairs.data(), 2 * count),
      resproj::span<std::int16_t>(e.bins.data(), count), threads);
  return e;
}

} // namespace resproj_bench
