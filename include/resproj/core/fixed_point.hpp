/// @file
/// @brief The fixed-point format of the reproducible back projection: the
/// exponent range, its resolution and range, and the checks the
/// accumulators of both backends share (`cpu::fixed_point_image`,
/// `gpu::fixed_point_image`). See docs/projection.md, "Reproducible back
/// projection".
///
/// An accumulator holds one signed 64-bit integer per voxel. A contribution
/// `amount` is added as `llrint(amount * 2^e)` (round to nearest, ties to
/// even); the voxel's value is `acc * 2^-e`. Integer addition is
/// associative, so the sum does not depend on the order of the additions.
#pragma once

#include <cmath>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Default exponent e of a fixed-point accumulator: resolution 2^-32
/// (about 2.3e-10), range +-2^31 (about 2.1e9).
inline constexpr int fixed_point_default_exponent = 32;
/// Smallest exponent accepted: resolution 2^-16 (1.5e-5), range +-2^47.
inline constexpr int fixed_point_min_exponent = 16;
/// Largest exponent accepted: resolution 2^-48 (3.6e-15), range +-2^15.
inline constexpr int fixed_point_max_exponent = 48;

/// Smallest step of a fixed-point value with exponent e: 2^-e. Each
/// contribution is rounded by at most half of it.
inline double fixed_point_resolution(int exponent) { return std::ldexp(1.0, -exponent); }

/// Largest magnitude a fixed-point voxel (and every single contribution)
/// may reach with exponent e: 2^(63 - e). Beyond it the integer wraps
/// around and the voxel's value is meaningless; nothing checks this.
inline double fixed_point_range(int exponent) { return std::ldexp(1.0, 63 - exponent); }

namespace detail {

/// @throws invalid_argument naming `name` unless `exponent` lies in
///         [fixed_point_min_exponent, fixed_point_max_exponent].
inline void check_fixed_point_exponent(int exponent, const char *name) {
  if (exponent < fixed_point_min_exponent || exponent > fixed_point_max_exponent)
    throw_invalid(name, "must be in [" + std::to_string(fixed_point_min_exponent) + ", " +
                            std::to_string(fixed_point_max_exponent) + "] (got " +
                            std::to_string(exponent) + ")");
}

/// @throws invalid_argument naming `name` when the geometry of an image
///         (`got`) differs from that of the accumulator (`expected`).
inline void check_same_geometry(const image_geometry &expected, const image_geometry &got,
                                const char *name) {
  if (got == expected)
    return;
  const auto shape = [](const image_geometry &g) {
    return "(" + std::to_string(g.shape()[0]) + ", " + std::to_string(g.shape()[1]) +
           ", " + std::to_string(g.shape()[2]) + ")";
  };
  throw_invalid(name, "differs from the accumulator's geometry (shape " + shape(got) +
                          " vs " + shape(expected) +
                          "; voxel sizes and origins must match exactly too)");
}

} // namespace detail
RESPROJ_NAMESPACE_END
