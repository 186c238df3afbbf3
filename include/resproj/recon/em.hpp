/// @file
/// @brief The EM algorithm of emission tomography: the per-LOR ratio and the
/// image update (host and device), and the OSEM / MLEM driver, one loop over
/// a small backend policy, with a progress callback. Plain C++.
///
/// Model: expected counts `ybar = m (A x) + a`, with `m` the multiplicative
/// corrections (normalisation x attenuation) and `a` the additive background
/// (randoms + scatter) per LOR or event. One OSEM sub-iteration over subset
/// s: `x <- x / sens_s * A_s^T (m y / ybar_s)` (y = 1 per event in list
/// mode), `sens_s = A_s^T m`. With one subset it is MLEM.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// Per-LOR (per-event) EM ratio `m y / (m q + a)` of a forward projection
/// `q`; 0 where y = 0 or the expectation is not positive.
struct em_ratio {
  template <class T> RESPROJ_HD T operator()(T q, T m, T a, T y) const {
    const T expected = m * q + a;
    return (y > T(0) && expected > T(0)) ? m * y / expected : T(0);
  }
};

/// Image update `x g / s` from the back projected ratio `g` and the
/// sensitivity `s`; 0 where the sensitivity is not positive.
struct em_update {
  template <class T> RESPROJ_HD T operator()(T x, T g, T s) const {
    return s > T(0) ? x * g / s : T(0);
  }
};

/// A uniform start image of `value` (> 0) everywhere, on the host.
inline std::vector<float> start_image(const image_geometry &g, float value) {
  return std::vector<float>(std::size_t(g.num_voxels()), value);
}

/// Progress of a reconstruction, reported after every subset.
struct osem_progress {
  int iteration;        ///< 0-based
  int subset;           ///< 0-based, within the iteration
  int num_iterations;   ///< of the whole run
  int num_subsets;      ///< per iteration
  double elapsed_s;     ///< since the start of the reconstruction
  double last_subset_s; ///< time of the subset just done
  double eta_s;         ///< estimate of the time left
};

/// Called after every subset (the backend's queued work has finished then).
using osem_callback = std::function<void(const osem_progress &)>;

/// OSEM: `iterations` passes over the backend's subsets in order. The
/// backend provides `num_subsets()`, `forward(s)` (q = A_s x), `ratio(s)`
/// (r = m y / (m q + a)), `back(s)` (g = A_s^T r, zeroing g first),
/// `update(s)` (x = x g / sens_s) and `finish()` (waits for the work queued
/// so far). With one subset it is MLEM.
///
/// Synchronises: at the end, and after every subset when `progress` is set
/// (so that the callback sees finished work and true times).
/// @param backend e.g. `cpu_listmode_backend`, `gpu_listmode_backend`
/// @param iterations passes over all subsets (>= 0)
/// @param progress optional callback after every subset
/// @throws invalid_argument ("iterations") if negative.
template <class Backend>
void osem(Backend &backend, int iterations, const osem_callback &progress = {}) {
  if (iterations < 0)
    resproj::detail::throw_invalid("iterations", "must be >= 0");
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last = start;
  const int S = backend.num_subsets();
  for (int it = 0; it < iterations; ++it)
    for (int s = 0; s < S; ++s) {
      backend.forward(s);
      backend.ratio(s);
      backend.back(s);
      backend.update(s);
      if (progress) {
        backend.finish();
        const auto now = clock::now();
        const double elapsed = std::chrono::duration<double>(now - start).count();
        const int done = it * S + s + 1, total = iterations * S;
        progress({it, s, iterations, S, elapsed,
                  std::chrono::duration<double>(now - last).count(),
                  elapsed / done * (total - done)});
        last = now;
      }
    }
  backend.finish();
}

} // namespace recon
RESPROJ_NAMESPACE_END
