/// @file
/// @brief List-mode events on the host for reconstruction: detector pairs
/// and TOF bins with their corrections, read from a list-mode file and
/// validated, grouped into OSEM subsets (event i of the acquisition in
/// subset i mod S). Plain C++.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// List-mode data: events as detector pairs + TOF bin with their
/// corrections, in acquisition order or grouped by subset (then subset s
/// is events `[offset[s], offset[s+1])`).
struct listmode_data {
  std::vector<std::size_t> offset; ///< num_subsets + 1 entries once grouped
  std::vector<std::int32_t> pairs; ///< 2 per event
  std::vector<std::int16_t> bins;  ///< TOF bin per event
  std::vector<float> m;            ///< multiplicative correction per event
  std::vector<float> a;            ///< additive term per event (per TOF bin)
  /// Number of events.
  std::size_t count() const { return bins.size(); }
};

/// Offsets (S + 1) of `n` events grouped into S = `num_subsets` subsets the
/// way `group_by_subset` does (event i in subset i mod S): subset s starts
/// at `s * (n / S) + min(s, n % S)`.
/// @throws invalid_argument ("num_subsets") unless >= 1.
inline std::vector<std::size_t> subset_offsets(std::size_t n, int num_subsets) {
  if (num_subsets < 1)
    resproj::detail::throw_invalid("num_subsets", "must be >= 1");
  const std::size_t S = std::size_t(num_subsets), q = n / S, r = n % S;
  std::vector<std::size_t> offset(S + 1);
  for (std::size_t s = 0; s <= S; ++s)
    offset[s] = s * q + std::min(s, r);
  return offset;
}

/// Groups acquisition-order events in place so that event i goes to subset
/// i mod `num_subsets` (stable within a subset); sets `d.offset`. Returns
/// the permutation (`new index -> acquisition index`).
/// @throws invalid_argument ("num_subsets") unless >= 1; ("d") if its
///         arrays have inconsistent sizes.
inline std::vector<std::size_t> group_by_subset(listmode_data &d, int num_subsets) {
  const std::size_t n = d.count(), S = num_subsets > 0 ? std::size_t(num_subsets) : 1;
  if (d.pairs.size() != 2 * n || (!d.m.empty() && d.m.size() != n) ||
      (!d.a.empty() && d.a.size() != n))
    resproj::detail::throw_invalid("d", "pairs, m and a do not match the bins");
  auto offset = subset_offsets(n, num_subsets);
  std::vector<std::size_t> perm;
  perm.reserve(n);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = s; i < n; i += S)
      perm.push_back(i);
  listmode_data r;
  r.offset = std::move(offset);
  r.pairs.resize(2 * n);
  r.bins.resize(n);
  r.m.resize(d.m.empty() ? 0 : n);
  r.a.resize(d.a.empty() ? 0 : n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = perm[k];
    r.pairs[2 * k] = d.pairs[2 * i];
    r.pairs[2 * k + 1] = d.pairs[2 * i + 1];
    r.bins[k] = d.bins[i];
    if (!d.m.empty())
      r.m[k] = d.m[i];
    if (!d.a.empty())
      r.a[k] = d.a[i];
  }
  d = std::move(r);
  return perm;
}

/// The first `max_events` events (all by default) of the list-mode file
/// `path` (10-byte records, io/listmode_file.hpp), in acquisition order,
/// checked against `num_detectors` and `num_tof_bins` (0: non-TOF, bins
/// not checked). No corrections, not grouped.
/// @throws io_error if the file cannot be read, is damaged or holds events
///         outside the scanner or the TOF bins (naming the first).
inline listmode_data
read_listmode_data(const std::string &path, std::int64_t num_detectors, int num_tof_bins,
                   std::size_t max_events = std::numeric_limits<std::size_t>::max()) {
  const std::size_t n =
      std::min<std::size_t>(max_events, io::count_listmode_events(path));
  std::vector<scanner::listmode_event> records(n);
  io::read_listmode_events(path, 0, n, span<scanner::listmode_event>(records.data(), n));
  const auto check = scanner::validate_events(records, num_detectors, num_tof_bins);
  if (check.num_invalid > 0)
    throw io_error("resproj: " + path + ": " + std::to_string(check.num_invalid) +
                   " events outside the scanner or the TOF bins (first: " +
                   std::to_string(check.first_invalid) + ")");
  listmode_data lm;
  scanner::split_events(records, lm.pairs, lm.bins);
  return lm;
}

} // namespace recon
RESPROJ_NAMESPACE_END
