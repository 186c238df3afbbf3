/// @file
/// @brief LOR sources other than explicit end points: LORs addressed by a
/// pair of detector indices into a detector table. Every source is a small
/// trivially copyable view with `count` and `load(i, a, b)`, usable in host
/// and device code; every projector accepts any source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/views.hpp"

RESPROJ_NAMESPACE_BEGIN

/// LORs as (detector_a, detector_b) index pairs into a detector table of
/// crystal centres (`[x0 y0 z0 x1 y1 z1 ...]`, `num_detectors` entries).
/// LOR i runs from detector `pairs[2 i]` to detector `pairs[2 i + 1]`. The
/// end points are read from the table when projected, so only 8 bytes per
/// LOR are stored or moved. Indices must lie in `[0, num_detectors)`: the
/// CPU backend checks every index before projecting (`check_indices`,
/// invalid_argument naming "lors.pairs" and the first bad event); GPU
/// kernels never check indices, so validate device pairs once
/// (`gpu::validate_events`, or `scanner::validate_events` on the host).
template <class T> struct detector_pairs {
  using value_type = T;
  const T *detectors = nullptr;
  std::size_t num_detectors = 0;
  const std::int32_t *pairs = nullptr;
  std::size_t count = 0;
  lor_layout layout{}; ///< memory order of the pairs (see lor_layout)

  constexpr detector_pairs() noexcept = default;
  RESPROJ_HD constexpr detector_pairs(const T *detectors_, std::size_t num_detectors_,
                                      const std::int32_t *pairs_, std::size_t count_,
                                      lor_layout layout_ = {}) noexcept
      : detectors(detectors_), num_detectors(num_detectors_), pairs(pairs_),
        count(count_), layout(layout_) {}

  /// These pairs with their memory order declared (see lor_layout).
  constexpr detector_pairs with_layout(lor_layout l) const noexcept {
    detector_pairs r = *this;
    r.layout = l;
    return r;
  }

  RESPROJ_HD void load(std::size_t i, T a[3], T b[3]) const noexcept {
    const std::size_t da = std::size_t(pairs[2 * i]), db = std::size_t(pairs[2 * i + 1]);
    for (std::size_t k = 0; k < 3; ++k) {
      a[k] = detectors[3 * da + k];
      b[k] = detectors[3 * db + k];
    }
  }
  /// LORs `[first, first + n)` (unchecked).
  RESPROJ_HD constexpr detector_pairs subview(std::size_t first,
                                              std::size_t n) const noexcept {
    return detector_pairs(detectors, num_detectors, pairs + 2 * first, n, layout);
  }

  // LOR-source interface (see lor_view).
  detector_pairs normalized() const noexcept { return *this; }
  /// @throws invalid_argument naming "<name>.detectors" / "<name>.pairs".
  void check(const char *name) const {
    if (count == 0)
      return;
    if (detectors == nullptr || num_detectors == 0)
      detail::throw_invalid(std::string(name) + ".detectors", "empty detector table");
    if (pairs == nullptr)
      detail::throw_invalid(std::string(name) + ".pairs",
                            "null pointer with count " + std::to_string(count));
  }
  template <class F> void for_each_region(F &&f) const {
    f(static_cast<const void *>(detectors), "lors.detectors");
    f(static_cast<const void *>(pairs), "lors.pairs");
  }
  /// Checks every index against the table (reads all pairs: host memory
  /// only; after `check`).
  /// @throws invalid_argument naming "<name>.pairs" and the first bad event.
  void check_indices(const char *name) const {
    for (std::size_t i = 0; i < count; ++i)
      for (int e = 0; e < 2; ++e) {
        const std::int32_t d = pairs[2 * i + std::size_t(e)];
        if (d < 0 || std::size_t(d) >= num_detectors)
          detail::throw_invalid(std::string(name) + ".pairs",
                                "event " + std::to_string(i) + ": detector " +
                                    std::to_string(d) + " is outside the table of " +
                                    std::to_string(num_detectors) + " detectors");
      }
  }
};

static_assert(std::is_trivially_copyable_v<detector_pairs<float>>);

namespace detail {

template <class S, class = void> struct is_lor_source : std::false_type {};
/// A LOR source: `value_type`, `count`, `load(i, a, b)` (host and device),
/// and the host-side `normalized()`, `check(name)`, `for_each_region(f)`.
template <class S>
struct is_lor_source<S, std::void_t<typename S::value_type, decltype(S::count),
                                    decltype(std::declval<const S &>().normalized())>>
    : std::true_type {};

/// Enables a projector overload for sources whose value type is T.
template <class S, class T>
using if_lor_source_of = std::enable_if_t<is_lor_source<S>::value &&
                                          std::is_same_v<typename S::value_type, T>>;

} // namespace detail

RESPROJ_NAMESPACE_END
