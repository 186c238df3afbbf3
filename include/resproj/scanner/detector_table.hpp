/// @file
/// @brief `detector_table`: any set of detector (crystal) centres, N x 3
/// floats, and its trivially copyable view `detector_table_view` for use in
/// kernels.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// Non-owning, trivially copyable view of a detector table: detector `i` is
/// at `(xyz[3 i], xyz[3 i + 1], xyz[3 i + 2])` (image axes 0, 1, 2).
/// The pointer may point to host or device memory; the functions do not
/// check indices (validate them on the host, e.g. with `validate_events`).
struct detector_table_view {
  const float *xyz = nullptr;     ///< 3 * num_detectors floats
  std::int32_t num_detectors = 0; ///< number of detectors

  /// Centre of detector `i` (unchecked).
  RESPROJ_HD void position(std::int32_t i, float &x, float &y, float &z) const noexcept {
    const float *p = xyz + 3 * std::ptrdiff_t(i);
    x = p[0];
    y = p[1];
    z = p[2];
  }
  /// `true` if `0 <= i < num_detectors`.
  RESPROJ_HD bool contains(std::int64_t i) const noexcept {
    return i >= 0 && i < std::int64_t(num_detectors);
  }
};

static_assert(std::is_trivially_copyable_v<detector_table_view>);

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
  /// A view of this table's host memory (valid while the table lives).
  detector_table_view view() const noexcept {
    return detector_table_view{xyz_.data(), num_detectors()};
  }

private:
  std::vector<float> xyz_;
};

} // namespace scanner
RESPROJ_NAMESPACE_END
