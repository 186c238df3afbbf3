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

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/views.hpp"

RESPROJ_NAMESPACE_BEGIN

/// LORs as (detector_a, detector_b) index pairs into a detector table of
/// crystal centres (`[x0 y0 z0 x1 y1 z1 ...]`, `num_detectors` entries).
/// LOR i runs from detector `pairs[2 i]` to detector `pairs[2 i + 1]`. The
/// end points are read from the table when projected, so only 8 bytes per
/// LOR are stored or moved. Indices are not checked per LOR by the
/// projectors (validate them once, e.g. scanner::validate_events).
template <class T> struct detector_pairs {
  const T *detectors = nullptr;
  std::size_t num_detectors = 0;
  const std::int32_t *pairs = nullptr;
  std::size_t count = 0;

  constexpr detector_pairs() noexcept = default;
  RESPROJ_HD constexpr detector_pairs(const T *detectors_, std::size_t num_detectors_,
                                      const std::int32_t *pairs_,
                                      std::size_t count_) noexcept
      : detectors(detectors_), num_detectors(num_detectors_), pairs(pairs_),
        count(count_) {}

  RESPROJ_HD void load(std::size_t i, T a[3], T b[3]) const noexcept {
    const std::size_t da = std::size_t(pairs[2 * i]), db = std::size_t(pairs[2 * i + 1]);
    for (int k = 0; k < 3; ++k) {
      a[k] = detectors[3 * da + k];
      b[k] = detectors[3 * db + k];
    }
  }
  /// LORs `[first, first + n)` (unchecked).
  RESPROJ_HD constexpr detector_pairs subview(std::size_t first,
                                              std::size_t n) const noexcept {
    return detector_pairs(detectors, num_detectors, pairs + 2 * first, n);
  }
};

static_assert(std::is_trivially_copyable_v<detector_pairs<float>>);

namespace detail {

/// The projectors' value type T for a source type, and whether it is one.
template <class S> struct lor_source_traits { static constexpr bool is_source = false; };
template <class T> struct lor_source_traits<lor_view<T>> {
  static constexpr bool is_source = true;
  using value_type = std::remove_const_t<T>;
  using normalized = lor_view<const value_type>;
};
template <class T> struct lor_source_traits<detector_pairs<T>> {
  static constexpr bool is_source = true;
  using value_type = T;
  using normalized = detector_pairs<T>;
};

/// Enables a projector overload for sources whose value type is T.
template <class S, class T>
using if_lor_source_of =
    std::enable_if_t<lor_source_traits<S>::is_source &&
                     std::is_same_v<typename lor_source_traits<S>::value_type, T>>;

/// The source as the kernels take it (`lor_view<T>` -> `lor_view<const T>`).
template <class S>
typename lor_source_traits<S>::normalized normalize_source(const S &s) {
  return typename lor_source_traits<S>::normalized(s);
}

/// Checks the non-per-LOR fields of a detector-pair source.
/// @throws invalid_argument naming "lors.detectors" / "lors.pairs".
template <class T> void check_lors(const detector_pairs<T> &lors, const char *name) {
  if (lors.count == 0)
    return;
  if (lors.detectors == nullptr || lors.num_detectors == 0)
    throw_invalid(std::string(name) + ".detectors", "empty detector table");
  if (lors.pairs == nullptr)
    throw_invalid(std::string(name) + ".pairs",
                  "null pointer with count " + std::to_string(lors.count));
}

/// Calls `f(pointer, name)` for every memory region a source reads (for
/// the GPU backend's device-pointer checks).
template <class T, class F> void for_each_region(const lor_view<T> &lors, F &&f) {
  f(static_cast<const void *>(lors.starts), "lors.starts");
  f(static_cast<const void *>(lors.ends), "lors.ends");
}
template <class T, class F> void for_each_region(const detector_pairs<T> &lors, F &&f) {
  f(static_cast<const void *>(lors.detectors), "lors.detectors");
  f(static_cast<const void *>(lors.pairs), "lors.pairs");
}

} // namespace detail

RESPROJ_NAMESPACE_END
