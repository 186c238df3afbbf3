/// @file
/// @brief `detector_table`: any set of detector (crystal) centres, N x 3
/// floats, validated. Projectors take its `xyz()` with index pairs as a
/// `detector_pairs` LOR source.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// An owning table of detector centres: N x 3 floats, detector-major
/// (`[x0 y0 z0 x1 y1 z1 ...]`), in the image's length unit, axis k of a
/// point being image axis k. Any shape works (rings of polygons, block
/// detectors, ...); `polygon_scanner::to_detector_table()` makes one for a
/// polygon scanner. An instance always holds validated values (N >= 1,
/// N < 2^31, every value finite). Copyable; immutable.
class detector_table {
public:
  /// @param xyz  3 * N finite floats, N >= 1.
  /// @throws invalid_argument naming "xyz" (empty, size not a multiple of
  ///         3, too many detectors) or "xyz[i]" (not finite).
  explicit detector_table(std::vector<float> xyz) : xyz_(std::move(xyz)) {
    using resproj::detail::throw_invalid;
    if (xyz_.empty())
      throw_invalid("xyz", "must hold at least one detector");
    if (xyz_.size() % 3 != 0)
      throw_invalid("xyz", "size must be a multiple of 3 (got " +
                               std::to_string(xyz_.size()) + ")");
    if (xyz_.size() / 3 > std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw_invalid("xyz", "too many detectors (more than 2^31 - 1)");
    for (std::size_t i = 0; i < xyz_.size(); ++i)
      if (!std::isfinite(xyz_[i]))
        throw_invalid("xyz[" + std::to_string(i) + "]", "must be finite");
  }

  /// Number of detectors N.
  std::int32_t num_detectors() const noexcept { return std::int32_t(xyz_.size() / 3); }
  /// The 3 * N values.
  const std::vector<float> &xyz() const noexcept { return xyz_; }
  /// Centre of detector `i`.
  /// @throws invalid_argument ("detector") if `i` is out of range.
  std::array<float, 3> position(std::int64_t i) const {
    if (i < 0 || i >= std::int64_t(num_detectors()))
      resproj::detail::throw_invalid("detector", "must be in [0, " +
                                                     std::to_string(num_detectors()) +
                                                     ") (got " + std::to_string(i) + ")");
    const std::size_t k = 3 * std::size_t(i);
    return {xyz_[k], xyz_[k + 1], xyz_[k + 2]};
  }

private:
  std::vector<float> xyz_;
};

} // namespace scanner
RESPROJ_NAMESPACE_END
