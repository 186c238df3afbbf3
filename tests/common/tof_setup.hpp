/// @file
/// @brief A reference TOF setup (tof_reference.hpp) as the library takes
/// it (`params_of` gives the library's `tof_params<T>`, `rounded` the setup
/// with every value rounded to T, so that the float64 reference sees the
/// same inputs as a projector in T), per-LOR TOF values at random
/// (`randomise_per_lor`) and a bound on sample positions (`max_position`).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
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

/// Per-LOR sigmas in [lo, hi) and offsets in [-off, off).
inline void randomise_per_lor(ref::tof_setup &s, std::size_t n, std::uint64_t seed,
                              double lo, double hi, double off) {
  rng r(seed);
  s.sigmas.resize(n);
  s.center_offsets.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    s.sigmas[i] = r.uniform(lo, hi);
    s.center_offsets[i] = r.uniform(-off, off);
  }
}

/// Largest distance from the midpoint of LOR i to any point of the box (a
/// bound on |s| of its samples).
template <class T>
double max_position(const grid &g, const lor_set<T> &l, std::size_t i) {
  const auto a = l.start(i), b = l.end(i);
  double best = 0;
  for (int c = 0; c < 8; ++c) {
    double d2 = 0;
    for (int k = 0; k < 3; ++k) {
      const double x = (c >> k) & 1 ? g.box_max(k) : g.box_min(k);
      const double m = 0.5 * (a[std::size_t(k)] + b[std::size_t(k)]);
      d2 += (x - m) * (x - m);
    }
    best = std::max(best, std::sqrt(d2));
  }
  return best;
}

} // namespace resproj_test
