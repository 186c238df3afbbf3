/// @file
/// @brief Packed list-mode records (`listmode_event`, core/listmode_event.hpp)
/// on the host: as a LOR source (`listmode_records`), conversion to and from
/// the projectors' pair / bin arrays, and validation against a detector
/// table and a TOF bin count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// The list-mode record and the validation result live in core
/// (core/listmode_event.hpp); these names keep working in `scanner`.
using listmode_event = resproj::listmode_event;
using event_check_result = resproj::event_check_result;

/// Packed list-mode records as a LOR source: event i runs from detector
/// `events[i].detector_a()` to `events[i].detector_b()` of the detector
/// table (`[x0 y0 z0 x1 y1 z1 ...]`, `num_detectors` entries); its TOF bin
/// is `events[i].tof_bin()`, which the host-LOR streamers use when an
/// `op::tof_listmode` leaves its `bins` empty (resident calls take the bins
/// from the operation: split records on the device with
/// `gpu::split_events`). 10 bytes per event. Indices must lie in
/// `[0, num_detectors)`: the CPU backend checks every index before
/// projecting (`check_indices`, invalid_argument naming "lors.events" and
/// the first bad event); GPU kernels never check indices (validate once,
/// `validate_events` or `gpu::validate_events`). Trivially copyable.
template <class T> struct listmode_records {
  using value_type = T;
  const T *detectors = nullptr;
  std::size_t num_detectors = 0;
  const listmode_event *events = nullptr;
  std::size_t count = 0;
  lor_layout layout{}; ///< memory order of the events (see lor_layout)

  constexpr listmode_records() noexcept = default;
  RESPROJ_HD constexpr listmode_records(const T *detectors_, std::size_t num_detectors_,
                                        const listmode_event *events_, std::size_t count_,
                                        lor_layout layout_ = {}) noexcept
      : detectors(detectors_), num_detectors(num_detectors_), events(events_),
        count(count_), layout(layout_) {}

  RESPROJ_HD void load(std::size_t i, T a[3], T b[3]) const noexcept {
    const std::size_t da = events[i].detector_a(), db = events[i].detector_b();
    for (int k = 0; k < 3; ++k) {
      a[k] = detectors[3 * da + std::size_t(k)];
      b[k] = detectors[3 * db + std::size_t(k)];
    }
  }
  /// Events `[first, first + n)` (unchecked).
  RESPROJ_HD constexpr listmode_records subview(std::size_t first,
                                                std::size_t n) const noexcept {
    return listmode_records(detectors, num_detectors, events + first, n, layout);
  }
  constexpr listmode_records with_layout(lor_layout l) const noexcept {
    listmode_records r = *this;
    r.layout = l;
    return r;
  }

  // LOR-source interface (see lor_view).
  listmode_records normalized() const noexcept { return *this; }
  /// @throws invalid_argument naming "<name>.detectors" / "<name>.events".
  void check(const char *name) const {
    if (count == 0)
      return;
    if (detectors == nullptr || num_detectors == 0)
      resproj::detail::throw_invalid(std::string(name) + ".detectors",
                                     "empty detector table");
    if (events == nullptr)
      resproj::detail::throw_invalid(std::string(name) + ".events",
                                     "null pointer with count " + std::to_string(count));
  }
  template <class F> void for_each_region(F &&f) const {
    f(static_cast<const void *>(detectors), "lors.detectors");
    f(static_cast<const void *>(events), "lors.events");
  }
  /// Checks every detector index against the table (reads all events: host
  /// memory only; after `check`).
  /// @throws invalid_argument naming "<name>.events" and the first bad event.
  void check_indices(const char *name) const {
    for (std::size_t i = 0; i < count; ++i)
      for (const std::uint32_t d : {events[i].detector_a(), events[i].detector_b()})
        if (d >= num_detectors)
          resproj::detail::throw_invalid(
              std::string(name) + ".events",
              "event " + std::to_string(i) + ": detector " + std::to_string(d) +
                  " is outside the table of " + std::to_string(num_detectors) +
                  " detectors");
  }
};

/// `true` if detectors a and b index a table of `num_detectors` entries
/// and `tof_bin` is in `[0, num_tof_bins)`; with `num_tof_bins <= 0` (non-TOF)
/// the TOF bin is not checked. The rule `validate_events` applies per event;
/// usable in device code.
RESPROJ_HD inline bool event_is_valid(std::int64_t detector_a, std::int64_t detector_b,
                                      int tof_bin, std::int64_t num_detectors,
                                      int num_tof_bins) noexcept {
  if (detector_a < 0 || detector_a >= num_detectors || detector_b < 0 ||
      detector_b >= num_detectors)
    return false;
  return num_tof_bins <= 0 || (tof_bin >= 0 && tof_bin < num_tof_bins);
}

namespace detail {
inline void check_validation_sizes(std::int64_t num_detectors) {
  if (num_detectors < 0)
    resproj::detail::throw_invalid(
        "num_detectors", "must be >= 0 (got " + std::to_string(num_detectors) + ")");
}
} // namespace detail

/// Checks every event against `num_detectors` and `num_tof_bins` (see
/// `event_is_valid`; pass num_tof_bins = 0 for non-TOF events).
/// @throws invalid_argument ("num_detectors") if negative.
inline event_check_result validate_events(span<const listmode_event> events,
                                          std::int64_t num_detectors, int num_tof_bins) {
  detail::check_validation_sizes(num_detectors);
  event_check_result r{0, events.size()};
  for (std::size_t i = 0; i < events.size(); ++i) {
    const listmode_event &e = events[i];
    if (!event_is_valid(e.detector_a(), e.detector_b(), e.tof_bin(), num_detectors,
                        num_tof_bins)) {
      if (r.num_invalid == 0)
        r.first_invalid = i;
      ++r.num_invalid;
    }
  }
  return r;
}

/// As above for a vector of records.
inline event_check_result validate_events(const std::vector<listmode_event> &events,
                                          std::int64_t num_detectors, int num_tof_bins) {
  return validate_events(span<const listmode_event>(events.data(), events.size()),
                         num_detectors, num_tof_bins);
}

/// Checks split arrays: `pairs` holds `[a b]` per event (2 * count int32),
/// `tof_bins` one int16 per event, or is empty for non-TOF (then the TOF
/// bins are not checked, whatever `num_tof_bins`).
/// @throws invalid_argument ("pairs" if its size is odd, "tof_bins" if
///         non-empty and not pairs.size() / 2, "num_detectors" if negative).
inline event_check_result validate_events(span<const std::int32_t> pairs,
                                          span<const std::int16_t> tof_bins,
                                          std::int64_t num_detectors, int num_tof_bins) {
  detail::check_validation_sizes(num_detectors);
  if (pairs.size() % 2 != 0)
    resproj::detail::throw_invalid("pairs", "size must be even (two detectors per "
                                            "event), got " +
                                                std::to_string(pairs.size()));
  const std::size_t n = pairs.size() / 2;
  if (!tof_bins.empty() && tof_bins.size() != n)
    resproj::detail::throw_invalid(
        "tof_bins", "must be empty or hold one bin per event (" + std::to_string(n) +
                        "), holds " + std::to_string(tof_bins.size()));
  const int bins = tof_bins.empty() ? 0 : num_tof_bins;
  event_check_result r{0, n};
  for (std::size_t i = 0; i < n; ++i)
    if (!event_is_valid(pairs[2 * i], pairs[2 * i + 1],
                        tof_bins.empty() ? 0 : tof_bins[i], num_detectors, bins)) {
      if (r.num_invalid == 0)
        r.first_invalid = i;
      ++r.num_invalid;
    }
  return r;
}

/// Splits records into the projectors' arrays: `pairs[2 i]`,
/// `pairs[2 i + 1]` = detectors a, b of event i (as int32: indices of
/// 2^31 and above become -1, which `validate_events` on the arrays
/// reports), `tof_bins[i]` its TOF bin. `tof_bins` may be empty (non-TOF:
/// bins not written). Nothing is validated beyond sizes.
/// @throws invalid_argument ("pairs" / "tof_bins") if too small (nothing
///         is written then).
inline void split_events(span<const listmode_event> events, span<std::int32_t> pairs,
                         span<std::int16_t> tof_bins) {
  resproj::detail::check_span(pairs, 2 * events.size(), "pairs");
  const bool with_bins = !tof_bins.empty();
  if (with_bins)
    resproj::detail::check_span(tof_bins, events.size(), "tof_bins");
  for (std::size_t i = 0; i < events.size(); ++i) {
    const listmode_event &e = events[i];
    const std::uint32_t a = e.detector_a(), b = e.detector_b();
    pairs[2 * i] = a > 0x7fffffffu ? std::int32_t(-1) : std::int32_t(a);
    pairs[2 * i + 1] = b > 0x7fffffffu ? std::int32_t(-1) : std::int32_t(b);
    if (with_bins)
      tof_bins[i] = e.tof_bin();
  }
}

/// As above, resizing `pairs` to 2 * count and `tof_bins` to count.
inline void split_events(const std::vector<listmode_event> &events,
                         std::vector<std::int32_t> &pairs,
                         std::vector<std::int16_t> &tof_bins) {
  pairs.resize(2 * events.size());
  tof_bins.resize(events.size());
  split_events(span<const listmode_event>(events.data(), events.size()),
               span<std::int32_t>(pairs.data(), pairs.size()),
               span<std::int16_t>(tof_bins.data(), tof_bins.size()));
}

/// Packs arrays into records (the inverse of `split_events`); `tof_bins`
/// may be empty (bins set to 0). Negative detector indices are stored as
/// their uint32 bit pattern (and found invalid by `validate_events`).
/// @throws invalid_argument ("pairs" if odd, "tof_bins" if non-empty and
///         not pairs.size() / 2).
inline std::vector<listmode_event> pack_events(span<const std::int32_t> pairs,
                                               span<const std::int16_t> tof_bins) {
  if (pairs.size() % 2 != 0)
    resproj::detail::throw_invalid("pairs", "size must be even, got " +
                                                std::to_string(pairs.size()));
  const std::size_t n = pairs.size() / 2;
  if (!tof_bins.empty() && tof_bins.size() != n)
    resproj::detail::throw_invalid("tof_bins", "must be empty or hold " +
                                                   std::to_string(n) + " bins, holds " +
                                                   std::to_string(tof_bins.size()));
  std::vector<listmode_event> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] =
        listmode_event::make(std::uint32_t(pairs[2 * i]), std::uint32_t(pairs[2 * i + 1]),
                             tof_bins.empty() ? std::int16_t(0) : tof_bins[i]);
  return out;
}

} // namespace scanner
RESPROJ_NAMESPACE_END
