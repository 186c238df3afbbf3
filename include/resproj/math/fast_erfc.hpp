/// @file
/// @brief A cheaper float erfc for x >= 0 (the TOF edge values), shared by
/// the CPU and GPU code. Opt-in (gpu::tof_kernel_options::fast_erfc); the
/// default edge values use the C library / CUDA erfcf.
///
/// Form: erfc(x) = t * exp(-x^2) * q(t) with t = 1 / (1 + 0.4 x), q a
/// degree-8 polynomial in t on [0, 1] fitted (weighted least squares,
/// relative error, in this project) to erfc(x) exp(x^2) / t; fit error
/// 1.3e-7. exp(-x^2) without the rounding of x^2: x = h + l with h a
/// multiple of 1/256 (h^2 exact in float below x = 16), exp(-h^2) from the
/// library's exp (exact argument) times exp(-l (2h + l)) from its Taylor
/// series (|l (2h + l)| < 0.04 below x = 10). Measured against double
/// erfc (tests/math/test_tof.cpp): relative error below 1e-6 for x in
/// [0, 9] (erfc >= 4e-37); 0 above x = 10 (erfc(10) = 2e-45 is below the
/// smallest normal float); measured maximum 6e-7 (erfcf: 2e-7). On sm_90
/// about 30% fewer PTX instructions than CUDA's erfcf (one IEEE
/// reciprocal and one expf instead of two reciprocals, Newton steps and
/// a compensated exp).
#pragma once

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

RESPROJ_HD inline float exp_of(float x) { return expf(x); }
RESPROJ_HD inline double exp_of(double x) { return exp(x); }

/// erfc(x) for x >= 0 in float, relative error < 1e-6 for x <= 9 (see
/// the file comment); 0 for x > 10. NaN gives NaN.
RESPROJ_HD inline float fast_erfc(float x) noexcept {
  if (x > 10.f)
    return 0.f;
  const float t = 1.f / (1.f + 0.4f * x);
  float q = 0.050187288301f;
  q = q * t - 0.182615346733f;
  q = q * t + 0.168643857982f;
  q = q * t - 0.00525540994927f;
  q = q * t + 0.141277340982f;
  q = q * t + 0.168578171641f;
  q = q * t + 0.207838583883f;
  q = q * t + 0.225669773281f;
  q = q * t + 0.225675860718f;
  // x = h + l, h = round(256 x) / 256 (at most 12 significant bits below
  // 16: h * h is exact), x^2 = h^2 + d with d = l (x + h).
  const float h = floor_of(x * 256.f + 0.5f) * (1.f / 256.f);
  const float d = (x - h) * (x + h);
  // exp(-d) = 1 - d + d^2/2 - d^3/6 (+ d^4/24 < 1e-7 for |d| < 0.04).
  const float e_d = 1.f - d * (1.f - d * (0.5f - d * (1.f / 6.f)));
  return t * q * (exp_of(-(h * h)) * e_d);
}

/// Double: the library erfc (the fast form is for float).
RESPROJ_HD inline double fast_erfc(double x) noexcept { return erfc(x); }

} // namespace math
RESPROJ_NAMESPACE_END
