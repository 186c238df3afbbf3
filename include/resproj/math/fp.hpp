/// @file
/// @brief Scalar helpers shared by host and device code: overloaded libm
/// calls and a multiply that is never fused into an FMA.
#pragma once

#include <cmath>
#include <cstdint>
#include <math.h> // floorf, fabsf, sqrtf in the global namespace (host and device)

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

RESPROJ_HD inline float floor_of(float x) { return floorf(x); }
RESPROJ_HD inline double floor_of(double x) { return floor(x); }
RESPROJ_HD inline float abs_of(float x) { return fabsf(x); }
RESPROJ_HD inline double abs_of(double x) { return fabs(x); }
RESPROJ_HD inline float sqrt_of(float x) { return sqrtf(x); }
RESPROJ_HD inline double sqrt_of(double x) { return sqrt(x); }
/// `a * b + c` with one rounding.
RESPROJ_HD inline float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
RESPROJ_HD inline double fma_of(double a, double b, double c) { return fma(a, b, c); }

/// `a * b` rounded on its own: never contracted with a following add into
/// an FMA, whatever the compiler flags (-ffp-contract, nvcc --fmad). Used
/// only where the result feeds a discrete decision (principal axis, plane
/// range, TOF window), so that every backend and precision decides alike.
RESPROJ_HD inline float mul_no_contract(float a, float b) {
#if RESPROJ_IN_DEVICE_CODE
  return __fmul_rn(a, b);
#else
  float r = a * b;
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+m"(r)); // opaque to the optimiser: no fusion across it
#endif
  return r;
#endif
}

RESPROJ_HD inline double mul_no_contract(double a, double b) {
#if RESPROJ_IN_DEVICE_CODE
  return __dmul_rn(a, b);
#else
  double r = a * b;
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+m"(r));
#endif
  return r;
#endif
}

} // namespace math
RESPROJ_NAMESPACE_END
