/// @file
/// @brief OSEM / MLEM for the examples: the algorithm (one loop, written
/// once, over a small backend policy), the element-wise update formulas
/// (host and device), the scan description (scanner, sinogram, subsets)
/// and the CPU backends for sinogram and (TOF) list-mode data. The GPU
/// backends live in osem_gpu.cuh and run the same loop and formulas.
///
/// Model: expected counts `ybar = m * (A x) + a`, with `m` the per-LOR
/// multiplicative corrections (normalisation x attenuation) and `a` the
/// additive background (randoms + scatter). One OSEM sub-iteration over
/// subset s: `x <- x / sens_s * A_s^T (m y / ybar_s)` (y = 1 per event in
/// list mode), `sens_s = A_s^T m`.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram.hpp"
#include "resproj/scanner/sinogram_source.hpp"

#if defined(__CUDACC__)
#define RESPROJ_EXAMPLE_HD __host__ __device__
#else
#define RESPROJ_EXAMPLE_HD
#endif

namespace resproj_examples {

// ------------------------------------------------------------ formulas --

/// Per-LOR (per-event) EM ratio `m y / (m q + a)`; 0 where y = 0 or the
/// expectation is not positive.
struct em_ratio {
  template <class T> RESPROJ_EXAMPLE_HD T operator()(T q, T m, T a, T y) const {
    const T expected = m * q + a;
    return (y > T(0) && expected > T(0)) ? m * y / expected : T(0);
  }
};

/// Image update `x * g / s`; 0 where the sensitivity is not positive.
struct em_update {
  template <class T> RESPROJ_EXAMPLE_HD T operator()(T x, T g, T s) const {
    return s > T(0) ? x * g / s : T(0);
  }
};

// ----------------------------------------------------------- algorithm --

/// Progress of a reconstruction, reported after every subset.
struct osem_progress {
  int iteration, subset, num_iterations, num_subsets;
  double elapsed_s;     ///< since the start of the reconstruction
  double last_subset_s; ///< time of the subset just done
  double eta_s;         ///< estimate of the time left
};

/// OSEM: `iterations` passes over the backend's subsets in order. The
/// backend provides `num_subsets()`, `forward(s)` (q = A_s x),
/// `ratio(s)` (r = m y / (m q + a)), `back(s)` (g = A_s^T r, zeroing g
/// first), `update(s)` (x = x g / sens_s) and `finish()` (waits for the
/// work queued so far; timing only). With one subset it is MLEM.
/// @throws resproj::invalid_argument ("iterations") if negative.
template <class Backend>
void osem(Backend &b, int iterations,
          const std::function<void(const osem_progress &)> &progress = {}) {
  if (iterations < 0)
    resproj::detail::throw_invalid("iterations", "must be >= 0");
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto last = start;
  const int S = b.num_subsets();
  for (int it = 0; it < iterations; ++it)
    for (int s = 0; s < S; ++s) {
      b.forward(s);
      b.ratio(s);
      b.back(s);
      b.update(s);
      if (progress) {
        b.finish();
        const auto now = clock::now();
        const double elapsed = std::chrono::duration<double>(now - start).count();
        const int done = it * S + s + 1, total = iterations * S;
        progress({it, s, iterations, S, elapsed,
                  std::chrono::duration<double>(now - last).count(),
                  elapsed / done * (total - done)});
        last = now;
      }
    }
  b.finish();
}

// ---------------------------------------------------------------- scan --

/// A polygon scanner with its span-1 sinogram split into OSEM subsets by
/// view (`scanner::subset_views`), in host memory: the detector table, the
/// plane table and each subset's views. Subset s's LORs are the
/// `sinogram_source` over its views and all planes, order
/// `[plane][view][radial]`.
struct scan {
  resproj::scanner::polygon_scanner scanner;
  resproj::scanner::sinogram_layout layout;
  std::vector<float> detectors;                 ///< xyz per detector
  std::vector<std::int32_t> planes;             ///< layout.plane_table()
  std::vector<std::vector<std::int32_t>> views; ///< per subset
  resproj::image_geometry image;

  scan(resproj::scanner::polygon_scanner sc, int radial_trim, int num_subsets,
       const resproj::image_geometry &geometry)
      : scanner(std::move(sc)),
        layout(resproj::scanner::span1_sinogram(scanner, radial_trim)),
        detectors(scanner.detector_centres()), planes(layout.plane_table()),
        image(geometry) {
    for (int s = 0; s < num_subsets; ++s) {
      const auto v = resproj::scanner::subset_views(layout, s, num_subsets);
      views.emplace_back(v.begin(), v.end());
    }
  }
  int num_subsets() const { return int(views.size()); }
  std::size_t num_detectors() const { return detectors.size() / 3; }
  /// Sinogram geometry reading the plane table at `plane_rings` (host or
  /// device copy of `planes`).
  resproj::scanner::sinogram_geometry geometry(const std::int32_t *plane_rings) const {
    return layout.geometry(plane_rings);
  }
  /// LORs of subset s, reading the tables at the given (host or device)
  /// copies of `detectors`, `planes` and `views[s]`.
  resproj::scanner::sinogram_source<float>
  source(int s, const float *det, const std::int32_t *plane_rings,
         const std::int32_t *subset_views) const {
    return resproj::scanner::make_sinogram_source(
        det, num_detectors(), geometry(plane_rings), subset_views,
        int(views[std::size_t(s)].size()), 0, layout.num_planes());
  }
  /// Host source of subset s.
  resproj::scanner::sinogram_source<float> source(int s) const {
    return source(s, detectors.data(), planes.data(), views[std::size_t(s)].data());
  }
  /// LORs in subset s.
  std::size_t subset_count(int s) const {
    return std::size_t(layout.num_planes()) * views[std::size_t(s)].size() *
           std::size_t(layout.num_radial);
  }
  /// Detector pair of LOR i of subset s.
  void detector_pair(int s, std::size_t i, std::int32_t &da, std::int32_t &db) const {
    const std::size_t nr = std::size_t(layout.num_radial);
    const auto &v = views[std::size_t(s)];
    const int radial = int(i % nr);
    const std::size_t pv = i / nr;
    const auto p = layout.detector_pair(int(pv / v.size()), v[pv % v.size()], radial);
    da = p.first;
    db = p.second;
  }
};

/// Sinogram data in subset order: subset s holds `scan::subset_count(s)`
/// bins from `offset[s]`, in the order of `scan::source(s)`.
struct sinogram_data {
  std::vector<std::size_t> offset; ///< num_subsets + 1 entries
  std::vector<float> y;            ///< measured counts
  std::vector<float> m;            ///< multiplicative corrections
  std::vector<float> a;            ///< additive background
};

/// List-mode data: events as detector pairs + TOF bin with their
/// corrections, grouped by subset (subset s = events `[offset[s],
/// offset[s+1])`, the events i of the acquisition with i mod S = s).
struct listmode_data {
  std::vector<std::size_t> offset; ///< num_subsets + 1 entries
  std::vector<std::int32_t> pairs; ///< 2 per event
  std::vector<std::int16_t> bins;  ///< TOF bin per event
  std::vector<float> m;            ///< multiplicative correction per event
  std::vector<float> a;            ///< additive term per event (per TOF bin)
  std::size_t count() const { return bins.size(); }
};

/// Offsets (S + 1) of `n` events grouped into S = `num_subsets` subsets
/// as `group_by_subset` does (event i in subset i mod S).
/// @throws resproj::invalid_argument ("num_subsets") unless >= 1.
inline std::vector<std::size_t> subset_offsets(std::size_t n, int num_subsets) {
  if (num_subsets < 1)
    resproj::detail::throw_invalid("num_subsets", "must be >= 1");
  const std::size_t S = std::size_t(num_subsets), q = n / S, r = n % S;
  std::vector<std::size_t> offset(S + 1);
  for (std::size_t s = 0; s <= S; ++s)
    offset[s] = s * q + std::min(s, r);
  return offset;
}

/// Reorders acquisition-order events so that event i goes to subset
/// i mod `num_subsets` (stable within a subset). Returns the permutation
/// (`new index -> acquisition index`).
/// @throws resproj::invalid_argument ("num_subsets") unless >= 1.
inline std::vector<std::size_t> group_by_subset(listmode_data &d, int num_subsets) {
  if (num_subsets < 1)
    resproj::detail::throw_invalid("num_subsets", "must be >= 1");
  const std::size_t n = d.count(), S = std::size_t(num_subsets);
  std::vector<std::size_t> perm;
  perm.reserve(n);
  d.offset = subset_offsets(n, num_subsets);
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t i = s; i < n; i += S)
      perm.push_back(i);
  listmode_data r;
  r.offset = d.offset;
  r.pairs.resize(2 * n);
  r.bins.resize(n);
  r.m.resize(d.m.empty() ? 0 : n);
  r.a.resize(d.a.empty() ? 0 : n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = perm[k];
    r.pairs[2 * k] = d.pairs[2 * i];
    r.pairs[2 * k + 1] = d.pairs[2 * i + 1];
    r.bins[k] = d.bins[i];
    if (!d.m.empty())
      r.m[k] = d.m[i];
    if (!d.a.empty())
      r.a[k] = d.a[i];
  }
  d = std::move(r);
  return perm;
}

// --------------------------------------------------------- CPU backends --

namespace detail {
inline resproj::image_view<float> view_of(std::vector<float> &v,
                                          const resproj::image_geometry &g) {
  return {v.data(), g};
}
inline resproj::image_view<const float> cview_of(const std::vector<float> &v,
                                                 const resproj::image_geometry &g) {
  return {v.data(), g};
}
template <class F> void parallel_for(std::size_t n, F &&f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < std::int64_t(n); ++i)
    f(std::size_t(i));
}
} // namespace detail

/// Back projects `m` of every subset into one sensitivity image per
/// subset (CPU). `out[s]` is zeroed first.
inline std::vector<std::vector<float>> sensitivity_images(const scan &sc,
                                                          const sinogram_data &d) {
  std::vector<std::vector<float>> out;
  for (int s = 0; s < sc.num_subsets(); ++s) {
    out.emplace_back(std::size_t(sc.image.num_voxels()), 0.f);
    resproj::cpu::back(resproj::op::non_tof{}, detail::view_of(out.back(), sc.image),
                       sc.source(s),
                       resproj::span<const float>(d.m.data() + d.offset[std::size_t(s)],
                                                  sc.subset_count(s)));
  }
  return out;
}

/// CPU backend of `osem` for sinogram data (subsets by view).
struct cpu_sinogram_backend {
  const scan &sc;
  const sinogram_data &data;
  std::vector<std::vector<float>> sens; ///< per subset
  std::vector<float> x, g, q, r;
  resproj::cpu::options opt;

  /// @param x0 initial image (> 0 where activity may be)
  cpu_sinogram_backend(const scan &s, const sinogram_data &d, std::vector<float> x0)
      : sc(s), data(d), sens(sensitivity_images(s, d)), x(std::move(x0)), g(x.size()) {
    if (x.size() != std::size_t(sc.image.num_voxels()))
      resproj::detail::throw_invalid("x0", "size does not match the image");
  }
  int num_subsets() const { return sc.num_subsets(); }
  void forward(int s) {
    q.resize(sc.subset_count(s));
    resproj::cpu::forward(resproj::op::non_tof{}, detail::cview_of(x, sc.image),
                          sc.source(s), resproj::span<float>(q.data(), q.size()), opt);
  }
  void ratio(int s) {
    const std::size_t o = data.offset[std::size_t(s)];
    r.resize(q.size());
    detail::parallel_for(q.size(), [&](std::size_t i) {
      r[i] = em_ratio{}(q[i], data.m[o + i], data.a[o + i], data.y[o + i]);
    });
  }
  void back(int s) {
    std::fill(g.begin(), g.end(), 0.f);
    resproj::cpu::back(resproj::op::non_tof{}, detail::view_of(g, sc.image), sc.source(s),
                       resproj::span<const float>(r.data(), r.size()), opt);
  }
  void update(int s) {
    const auto &sn = sens[std::size_t(s)];
    detail::parallel_for(x.size(),
                         [&](std::size_t i) { x[i] = em_update{}(x[i], g[i], sn[i]); });
  }
  void finish() {}
};

/// CPU backend of `osem` for list-mode data: TOF when `tof.num_bins > 0`,
/// else non-TOF. `sensitivity` is the total sensitivity image (A^T m over
/// the whole sinogram); each subset uses sensitivity / S.
struct cpu_listmode_backend {
  const scan &sc;
  const listmode_data &data;
  resproj::tof_params<float> tof;
  std::vector<float> sens, x, g, q, r;
  resproj::cpu::options opt;

  cpu_listmode_backend(const scan &s, const listmode_data &d,
                       const resproj::tof_params<float> &t,
                       std::vector<float> sensitivity, std::vector<float> x0)
      : sc(s), data(d), tof(t), sens(std::move(sensitivity)), x(std::move(x0)),
        g(x.size()) {
    if (x.size() != std::size_t(sc.image.num_voxels()))
      resproj::detail::throw_invalid("x0", "size does not match the image");
    if (sens.size() != x.size())
      resproj::detail::throw_invalid("sensitivity", "size does not match the image");
    if (d.offset.size() < 2)
      resproj::detail::throw_invalid("data.offset", "events not grouped by subset");
    const float scale = 1.f / float(num_subsets());
    for (float &v : sens)
      v *= scale;
  }
  int num_subsets() const { return int(data.offset.size()) - 1; }
  std::size_t first(int s) const { return data.offset[std::size_t(s)]; }
  std::size_t count(int s) const {
    return data.offset[std::size_t(s) + 1] - data.offset[std::size_t(s)];
  }
  resproj::detector_pairs<float> lors(int s) const {
    return {sc.detectors.data(), sc.num_detectors(), data.pairs.data() + 2 * first(s),
            count(s)};
  }
  resproj::span<const std::int16_t> bins(int s) const {
    return {data.bins.data() + first(s), count(s)};
  }
  void forward(int s) {
    q.resize(count(s));
    const resproj::span<float> out(q.data(), q.size());
    if (tof.num_bins > 0)
      resproj::cpu::forward(resproj::op::tof_listmode{tof, bins(s)},
                            detail::cview_of(x, sc.image), lors(s), out, opt);
    else
      resproj::cpu::forward(resproj::op::non_tof{}, detail::cview_of(x, sc.image),
                            lors(s), out, opt);
  }
  void ratio(int s) {
    const std::size_t o = first(s);
    r.resize(q.size());
    detail::parallel_for(q.size(), [&](std::size_t i) {
      r[i] = em_ratio{}(q[i], data.m[o + i], data.a[o + i], 1.f);
    });
  }
  void back(int s) {
    std::fill(g.begin(), g.end(), 0.f);
    const resproj::span<const float> v(r.data(), r.size());
    if (tof.num_bins > 0)
      resproj::cpu::back(resproj::op::tof_listmode{tof, bins(s)},
                         detail::view_of(g, sc.image), lors(s), v, opt);
    else
      resproj::cpu::back(resproj::op::non_tof{}, detail::view_of(g, sc.image), lors(s), v,
                         opt);
  }
  void update(int) {
    detail::parallel_for(x.size(),
                         [&](std::size_t i) { x[i] = em_update{}(x[i], g[i], sens[i]); });
  }
  void finish() {}
};

/// Poisson log-likelihood `sum y log(ybar) - ybar` (without the constant
/// log y! term) of image x for sinogram data (CPU).
inline double poisson_log_likelihood(const scan &sc, const sinogram_data &d,
                                     const std::vector<float> &x) {
  double L = 0;
  std::vector<float> q;
  for (int s = 0; s < sc.num_subsets(); ++s) {
    q.assign(sc.subset_count(s), 0.f);
    resproj::cpu::forward(resproj::op::non_tof{}, detail::cview_of(x, sc.image),
                          sc.source(s), resproj::span<float>(q.data(), q.size()));
    const std::size_t o = d.offset[std::size_t(s)];
    for (std::size_t i = 0; i < q.size(); ++i) {
      const double ybar = double(d.m[o + i]) * q[i] + d.a[o + i];
      if (ybar > 0)
        L += double(d.y[o + i]) * std::log(ybar) - ybar;
    }
  }
  return L;
}

/// A uniform start image of `value` (> 0) everywhere.
inline std::vector<float> start_image(const resproj::image_geometry &g, float value) {
  return std::vector<float>(std::size_t(g.num_voxels()), value);
}

} // namespace resproj_examples
