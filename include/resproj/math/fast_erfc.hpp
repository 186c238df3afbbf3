/// @file
/// @brief A cheap float erfc for x >= 0 (the TOF edge values), shared by
/// the CPU and GPU code. Opt-in for the CPU and double code
/// (`tof_lor::fast_erfc`); float TOF operations on the GPU use it by default
/// (`gpu::tuning::exact_erfc` turns it off), where CUDA's erfcf is most of
/// a list-mode kernel's instructions.
///
/// Form (Chebyshev fit of Press et al., Numerical Recipes, "erfcc";
/// fractional error < 1.2e-7 in exact arithmetic):
/// `erfc(x) = t exp(-x^2 + P(t))`, `t = 1 / (1 + x/2)`, P of degree 9.
/// On the GPU the reciprocal and the exponential are the hardware
/// approximations (MUFU.RCP, MUFU.EX2): about 15 instructions against
/// CUDA erfcf's ~40 (two IEEE reciprocals, a compensated exp and a slow
/// path). `-x^2 + P` is one fused multiply-add, so its only rounding is
/// that of the sum. Measured against double erfc (tests/math/test_tof.cpp,
/// host form): relative error below 1e-6 for x <= 3.5 (erfc >= 7e-7),
/// below 5e-6 up to x = 9, absolute error below 5e-7 everywhere. The
/// device form adds the approximations' ~2 ulp.
#pragma once

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// 1 / x for x >= 1 (hardware approximation on the device).
RESPROJ_HD inline float approx_reciprocal(float x) noexcept {
#if RESPROJ_IN_DEVICE_CODE
  return __fdividef(1.f, x);
#else
  return 1.f / x;
#endif
}

RESPROJ_HD inline double approx_reciprocal(double x) noexcept { return 1.0 / x; }

/// exp(x) (hardware approximation on the device; 0 far below -87).
RESPROJ_HD inline float approx_exp(float x) noexcept {
#if RESPROJ_IN_DEVICE_CODE
  return __expf(x);
#else
  return expf(x);
#endif
}

/// erfc(x) for x >= 0 in float (see the file comment for its accuracy);
/// +inf gives 0, NaN gives NaN.
RESPROJ_HD inline float fast_erfc(float x) noexcept {
  const float t = approx_reciprocal(1.f + 0.5f * x);
  float p = 0.17087277f;
  p = fma_of(p, t, -0.82215223f);
  p = fma_of(p, t, 1.48851587f);
  p = fma_of(p, t, -1.13520398f);
  p = fma_of(p, t, 0.27886807f);
  p = fma_of(p, t, -0.18628806f);
  p = fma_of(p, t, 0.09678418f);
  p = fma_of(p, t, 0.37409196f);
  p = fma_of(p, t, 1.00002368f);
  p = fma_of(p, t, -1.26551223f);
  return t * approx_exp(fma_of(-x, x, p));
}

/// Double: the library erfc (the fast form is for float).
RESPROJ_HD inline double fast_erfc(double x) noexcept { return erfc(x); }

} // namespace math
RESPROJ_NAMESPACE_END
