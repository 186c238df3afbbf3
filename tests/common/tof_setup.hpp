/// @file
/// @brief A reference TOF setup (tof_reference.hpp) as the library takes
/// it: `params_of` gives the library's `tof_params<T>`, `rounded` the setup
/// with every value rounded to T, so that the float64 reference sees the
/// same inputs as a projector in T.
#pragma once

#include <vector>

#include "common/host_views.hpp"
#include "common/tof_reference.hpp"
#include "resproj/core/tof.hpp"

namespace resproj_test {

/// The library's parameters for a reference setup; per-LOR arrays rounded
/// to T into `sig` / `off` (which must outlive the result).
template <class T>
resproj::tof_params<T> params_of(const ref::tof_setup &s, std::vector<T> &sig,
                                 std::vector<T> &off) {
  resproj::tof_params<T> p;
  p.bin_width = T(s.bin_width);
  p.num_bins = s.num_bins;
  p.sigma = T(s.sigma);
  p.center_offset = T(s.center_offset);
  p.num_sigmas = T(s.num_sigmas);
  sig.assign(s.sigmas.begin(), s.sigmas.end());
  off.assign(s.center_offsets.begin(), s.center_offsets.end());
  p.sigmas = cspan_of(sig);
  p.center_offsets = cspan_of(off);
  return p;
}

/// The setup as the library sees it (every value rounded to T), so the
/// reference gets the same inputs.
template <class T> ref::tof_setup rounded(ref::tof_setup s) {
  s.bin_width = double(T(s.bin_width));
  s.sigma = double(T(s.sigma));
  s.center_offset = double(T(s.center_offset));
  s.num_sigmas = double(T(s.num_sigmas));
  for (auto &v : s.sigmas)
    v = double(T(v));
  for (auto &v : s.center_offsets)
    v = double(T(v));
  return s;
}

} // namespace resproj_test
