/// @file
/// @brief Fixed-point accumulation of the reproducible back projection
/// (core/fixed_point.hpp): the conversions between T and the 64-bit
/// integers of an accumulator, and the accumulation functor that the
/// per-LOR math calls instead of a floating-point add. One implementation
/// for the CPU and the GPU backend: only the integer add (`Sink`) differs.
#pragma once

#include <cmath>
#include <cstdint>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// 2^e in T, exact for 0 <= e <= 63.
template <class T> RESPROJ_HD T exact_power_of_two(int e) noexcept {
  return T(std::uint64_t(1) << e);
}

/// `amount * scale` (scale a power of two: the product is exact) rounded to
/// the nearest 64-bit integer, ties to even: `std::llrint` on the host
/// (default rounding mode), `__float2ll_rn` / `__double2ll_rn` on the GPU,
/// which round the same way. Undefined beyond +-2^63 (the caller keeps its
/// values in range).
RESPROJ_HD inline std::int64_t to_fixed_point(float amount, float scale) noexcept {
#if RESPROJ_IN_DEVICE_CODE
  return static_cast<std::int64_t>(__float2ll_rn(amount * scale));
#else
  return static_cast<std::int64_t>(std::llrint(amount * scale));
#endif
}
RESPROJ_HD inline std::int64_t to_fixed_point(double amount, double scale) noexcept {
#if RESPROJ_IN_DEVICE_CODE
  return static_cast<std::int64_t>(__double2ll_rn(amount * scale));
#else
  return static_cast<std::int64_t>(std::llrint(amount * scale));
#endif
}

/// `q * inverse_scale` in T: one rounding (the integer to T; the power of
/// two scales exactly), the same on host and device.
template <class T>
RESPROJ_HD T from_fixed_point(std::int64_t q, T inverse_scale) noexcept {
  return static_cast<T>(q) * inverse_scale;
}

/// The accumulation functor of a reproducible back projection, called by
/// the per-LOR math as `add(voxel, amount)` like a floating-point adder.
/// `base` is the pointer the math was handed as the image; no T is read or
/// written through it: the voxel's index is `voxel - base`, and the
/// converted amount goes to `accumulator[index]` through `sink(element,
/// q)`, an integer add (plain, OpenMP atomic or CUDA atomic). Amounts that
/// round to 0 add nothing.
template <class T, class Sink> struct fixed_point_add {
  const T *base;
  std::int64_t *accumulator;
  T scale; ///< 2^e
  Sink sink;

  RESPROJ_EXEC_CHECK_DISABLE
  RESPROJ_HD void operator()(T *voxel, T amount) const noexcept {
    const std::int64_t q = to_fixed_point(amount, scale);
    if (q != 0)
      sink(accumulator + (voxel - base), q);
  }
};

} // namespace math
RESPROJ_NAMESPACE_END
