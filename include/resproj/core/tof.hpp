/// @file
/// @brief `tof_params<T>`: time-of-flight parameters of a projection call
/// (docs/projection.md, "TOF"), validated before any work.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"

RESPROJ_NAMESPACE_BEGIN

/// TOF parameters, in the length unit of the LORs. Bin j (0-based) is
/// centred at `(j - (num_bins - 1) / 2) * bin_width + center_offset` along
/// the LOR, measured from the midpoint of the unclipped segment, positive
/// towards the end point: bin 0 is nearest the start point.
///
/// `sigma` and `center_offset` hold for every LOR unless the matching
/// per-LOR span is non-empty; per-LOR arrays are indexed like the LORs of
/// the call (element i for LOR i of the chunk) and must live where the
/// call's LORs live (host for the CPU backend, device for the GPU one).
/// Their elements must be finite, sigmas > 0: the CPU backend checks every
/// element a call uses (`detail::check_tof_values`) and throws; GPU kernels
/// never check per-LOR values, so a bad element there gives undefined
/// values for its LOR. Trivially copyable.
template <class T> struct tof_params {
  T bin_width = 0;              ///< > 0
  int num_bins = 0;             ///< >= 1
  T sigma = 0;                  ///< Gaussian sigma, > 0
  T center_offset = 0;          ///< shift of every bin towards the end point
  T num_sigmas = 3;             ///< truncation of the Gaussian, > 0
  span<const T> sigmas;         ///< per-LOR sigma, or empty
  span<const T> center_offsets; ///< per-LOR centre offset, or empty

  RESPROJ_HD T sigma_of(std::size_t i) const noexcept {
    return sigmas.empty() ? sigma : sigmas[i];
  }
  RESPROJ_HD T center_offset_of(std::size_t i) const noexcept {
    return center_offsets.empty() ? center_offset : center_offsets[i];
  }
  /// The parameters of LORs `[first, first + n)` of this call (per-LOR
  /// arrays offset accordingly; unchecked).
  RESPROJ_HD tof_params subview(std::size_t first, std::size_t n) const noexcept {
    tof_params r = *this;
    if (!sigmas.empty())
      r.sigmas = sigmas.subspan(first, n);
    if (!center_offsets.empty())
      r.center_offsets = center_offsets.subspan(first, n);
    return r;
  }
};

namespace detail {

/// Validates `tof` for a call over `count` LORs.
/// @throws invalid_argument naming the parameter ("tof.bin_width", ...).
template <class T> void check_tof(const tof_params<T> &tof, std::size_t count) {
  auto positive = [](T v, const char *name) {
    if (!std::isfinite(double(v)) || !(v > T(0)))
      throw_invalid(name,
                    "must be finite and > 0 (got " + std::to_string(double(v)) + ")");
  };
  positive(tof.bin_width, "tof.bin_width");
  positive(tof.num_sigmas, "tof.num_sigmas");
  if (tof.num_bins < 1)
    throw_invalid("tof.num_bins",
                  "must be >= 1 (got " + std::to_string(tof.num_bins) + ")");
  if (tof.sigmas.empty())
    positive(tof.sigma, "tof.sigma");
  if (tof.center_offsets.empty() && !std::isfinite(double(tof.center_offset)))
    throw_invalid("tof.center_offset", "must be finite");
  auto per_lor = [count](const span<const T> &s, const char *name) {
    if (s.empty() || count == 0)
      return;
    if (s.data() == nullptr)
      throw_invalid(name, "null pointer with size " + std::to_string(s.size()));
    if (s.size() < count)
      throw_invalid(name, "too small: holds " + std::to_string(s.size()) +
                              " values, needs one per LOR (" + std::to_string(count) +
                              ")");
  };
  per_lor(tof.sigmas, "tof.sigmas");
  per_lor(tof.center_offsets, "tof.center_offsets");
}

/// Checks the elements of the per-LOR arrays of `tof` used by a call over
/// `count` LORs: sigmas finite and > 0, centre offsets finite. Reads the
/// arrays, so only for executors whose per-LOR arrays are host memory (the
/// CPU backend); call after `check_tof`.
/// @throws invalid_argument naming "tof.sigmas" / "tof.center_offsets" and
///         the index of the first bad element.
template <class T> void check_tof_values(const tof_params<T> &tof, std::size_t count) {
  auto first_bad = [count](const span<const T> &s, bool positive) {
    if (s.empty())
      return count;
    for (std::size_t i = 0; i < count; ++i)
      if (!std::isfinite(double(s[i])) || (positive && !(s[i] > T(0))))
        return i;
    return count;
  };
  auto fail = [](const span<const T> &s, std::size_t i, const char *name,
                 const char *rule) {
    throw_invalid(name, "element " + std::to_string(i) + " " + rule + " (got " +
                            std::to_string(double(s[i])) + ")");
  };
  const std::size_t s = first_bad(tof.sigmas, true);
  if (s < count)
    fail(tof.sigmas, s, "tof.sigmas", "must be finite and > 0");
  const std::size_t o = first_bad(tof.center_offsets, false);
  if (o < count)
    fail(tof.center_offsets, o, "tof.center_offsets", "must be finite");
}

} // namespace detail

RESPROJ_NAMESPACE_END
