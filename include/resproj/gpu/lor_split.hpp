/// @file
/// @brief `lor_range` and `split_lors`: division of a LOR count into
/// consecutive per-device ranges proportional to weights (plain host
/// arithmetic, used by the multi-device projectors and streamers).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// A range of LORs `[first, first + count)`.
struct lor_range {
  std::size_t first = 0;
  std::size_t count = 0;
};

/// Splits `count` LORs into `parts` consecutive ranges proportional to
/// `weights` (empty: equal), each a multiple of `granule` LORs (`granule`
/// must divide `count`). Ranges may be empty. Plain host arithmetic.
/// @throws invalid_argument("weights") for a wrong size, a negative or
///         non-finite weight, or all weights zero; ("granule") if it does not
///         divide `count`.
inline std::vector<lor_range> split_lors(std::size_t count, int parts,
                                         const std::vector<double> &weights,
                                         std::size_t granule = 1) {
  if (parts <= 0)
    resproj::detail::throw_invalid("parts", "must be >= 1");
  if (granule == 0 || count % granule != 0)
    resproj::detail::throw_invalid("granule", std::to_string(granule) +
                                                  " does not divide the LOR count " +
                                                  std::to_string(count));
  std::vector<double> w = weights;
  if (w.empty())
    w.assign(std::size_t(parts), 1.0);
  if (w.size() != std::size_t(parts))
    resproj::detail::throw_invalid("weights", "has " + std::to_string(w.size()) +
                                                  " entries for " +
                                                  std::to_string(parts) + " devices");
  double total = 0;
  for (const double x : w) {
    if (!std::isfinite(x) || x < 0)
      resproj::detail::throw_invalid("weights", "must be finite and >= 0");
    total += x;
  }
  if (!(total > 0))
    resproj::detail::throw_invalid("weights", "are all zero");
  const std::size_t units = count / granule;
  std::vector<lor_range> ranges(static_cast<std::size_t>(parts));
  double cumulative = 0;
  std::size_t previous = 0;
  for (int d = 0; d < parts; ++d) {
    cumulative += w[std::size_t(d)];
    std::size_t boundary =
        d + 1 == parts ? units
                       : std::size_t(std::llround(double(units) * cumulative / total));
    if (boundary > units)
      boundary = units;
    if (boundary < previous)
      boundary = previous;
    ranges[std::size_t(d)] =
        lor_range{previous * granule, (boundary - previous) * granule};
    previous = boundary;
  }
  return ranges;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
