/// @file
/// @brief Synthetic PET data made with the library's own projectors (CPU
/// backend): per-LOR corrections (crystal efficiencies x attenuation from
/// a mu-map, scaled to a count level), a flat randoms + scatter
/// background, noise-free and Poisson sinograms in subset order, list-mode
/// events (detector pairs + TOF bin) drawn from the same model, and
/// list-mode events histogrammed into a sinogram. synthetic_gpu.cuh gives
/// the GPU projectors the simulation can use instead.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <unordered_map>
#include <vector>

#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

namespace resproj_examples {

using resproj::recon::corrections;
using resproj::recon::listmode_data;
using resproj::recon::sinogram_data;
using resproj::recon::sinogram_subsets;

/// Settings of the synthetic acquisition.
struct synthetic_settings {
  double total_counts = 1e6;        ///< expected counts in the whole sinogram
  double background_fraction = 0.3; ///< randoms + scatter share of them
  double efficiency_spread = 0.1;   ///< crystal efficiencies uniform in 1 +- this
  std::uint32_t seed = 1;
};

/// The noise-free sinogram model of activity `x` (subset order): fills
/// `c.efficiency`, `c.scale` and `c.background` (c.mu must hold the
/// mu-map) so that the expected counts total `settings.total_counts` with
/// the chosen background fraction; returns y = expected counts, m, a.
/// @throws resproj::invalid_argument ("x", "c.mu", "settings") for wrong
///         sizes or settings.
/// `project(subset, image, out)` forward projects `image` over the subset's
/// LORs into `out` (default: the CPU backend; the demo passes the GPU one).
using subset_projector =
    std::function<void(int, const std::vector<float> &, resproj::span<float>)>;

inline subset_projector cpu_subset_projector(const sinogram_subsets &sc) {
  return [&sc](int s, const std::vector<float> &img, resproj::span<float> out) {
    resproj::cpu::forward(resproj::op::non_tof{},
                          resproj::image_view<const float>(img.data(), sc.image),
                          sc.source(s), out);
  };
}

inline sinogram_data sinogram_model(const sinogram_subsets &sc,
                                    const std::vector<float> &x, corrections &c,
                                    const synthetic_settings &settings,
                                    subset_projector project = {}) {
  if (!project)
    project = cpu_subset_projector(sc);
  const std::size_t nv = std::size_t(sc.image.num_voxels());
  if (x.size() != nv)
    resproj::detail::throw_invalid("x", "size does not match the image");
  if (c.mu.size() != nv)
    resproj::detail::throw_invalid("c.mu", "size does not match the image");
  if (!(settings.total_counts > 0) || !(settings.background_fraction >= 0) ||
      !(settings.background_fraction < 1) || !(settings.efficiency_spread >= 0) ||
      !(settings.efficiency_spread < 1))
    resproj::detail::throw_invalid("settings", "counts > 0, fractions in [0, 1) needed");
  std::mt19937_64 rng(settings.seed);
  std::uniform_real_distribution<double> u(-settings.efficiency_spread,
                                           settings.efficiency_spread);
  c.efficiency.resize(sc.num_detectors());
  for (float &e : c.efficiency)
    e = float(1.0 + u(rng));
  c.scale = 1;
  sinogram_data d;
  d.offset.push_back(0);
  for (int s = 0; s < sc.num_subsets(); ++s)
    d.offset.push_back(d.offset.back() + sc.subset_count(s));
  const std::size_t n = d.offset.back();
  d.y.resize(n);
  d.m.resize(n);
  d.a.resize(n);
  std::vector<float> att;
  double trues = 0;
  for (int s = 0; s < sc.num_subsets(); ++s) {
    const std::size_t o = d.offset[std::size_t(s)], k = sc.subset_count(s);
    att.resize(k);
    project(s, c.mu, resproj::span<float>(att.data(), k));
    project(s, x, resproj::span<float>(d.y.data() + o, k));
    resproj::recon::detail::parallel_for(k, [&](std::size_t i) {
      std::int32_t da, db;
      sc.detector_pair(s, i, da, db);
      d.m[o + i] =
          resproj::recon::lor_correction(c.scale, c.efficiency.data(), da, db, att[i]);
    });
    for (std::size_t i = 0; i < k; ++i)
      trues += double(d.m[o + i]) * d.y[o + i];
  }
  if (!(trues > 0))
    resproj::detail::throw_invalid("x", "projects to no counts");
  c.scale = float((1.0 - settings.background_fraction) * settings.total_counts / trues);
  c.background = float(settings.background_fraction * settings.total_counts / double(n));
  for (std::size_t i = 0; i < n; ++i) {
    d.m[i] *= c.scale;
    d.a[i] = c.background;
    d.y[i] = d.m[i] * d.y[i] + d.a[i];
  }
  return d;
}

/// Replaces `d.y` by a Poisson draw with mean `d.y` (seeded).
inline void add_poisson_noise(sinogram_data &d, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  for (float &v : d.y) {
    std::poisson_distribution<long long> p{double(v)};
    v = v > 0 ? float(p(rng)) : 0.f;
  }
}

/// Draws `num_events` list-mode events, in acquisition order, from the
/// noise-free model `model` (as returned by `sinogram_model`) of activity
/// `x`: the LOR with probability proportional to its expected counts
/// (cumulative sum + binary search), then, with the LOR's true share
/// `m q / ybar`, a TOF bin from the LOR's TOF profile of `x` and
/// otherwise a uniform bin (background). Non-TOF (`tof.num_bins == 0`):
/// bin 0. Returns pairs and bins (no corrections; see
/// `listmode_corrections`).
/// @throws resproj::invalid_argument ("model") if it holds no counts.
/// `profiles(image, events, tof, out)` computes the TOF sinogram forward
/// projection of `image` over the event LORs (`out[i * N + j]`); default:
/// the CPU backend.
using tof_profiler =
    std::function<void(const std::vector<float> &, const resproj::detector_pairs<float> &,
                       const resproj::tof_params<float> &, resproj::span<float>)>;

inline listmode_data draw_events(const sinogram_subsets &sc, const sinogram_data &model,
                                 const std::vector<float> &x,
                                 const resproj::tof_params<float> &tof,
                                 std::size_t num_events, std::uint32_t seed,
                                 tof_profiler profiles = {}) {
  if (!profiles)
    profiles = [&sc](const std::vector<float> &img,
                     const resproj::detector_pairs<float> &l,
                     const resproj::tof_params<float> &t, resproj::span<float> out) {
      resproj::cpu::forward(resproj::op::tof_sinogram{t},
                            resproj::image_view<const float>(img.data(), sc.image), l,
                            out);
    };
  const std::size_t n = model.y.size();
  std::vector<double> cum(n);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i)
    cum[i] = (total += double(model.y[i]));
  if (!(total > 0))
    resproj::detail::throw_invalid("model", "holds no counts");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  listmode_data lm;
  lm.pairs.resize(2 * num_events);
  lm.bins.assign(num_events, 0);
  // Random numbers drawn in sequence (reproducible), searches in parallel.
  std::vector<double> u(2 * num_events);
  for (double &v : u)
    v = u01(rng);
  std::vector<char> is_true(num_events);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t e = 0; e < std::int64_t(num_events); ++e) {
    const double r = u[2 * std::size_t(e)] * total;
    std::size_t i =
        std::size_t(std::upper_bound(cum.begin(), cum.end(), r) - cum.begin());
    i = std::min(i, n - 1);
    const int s = int(std::upper_bound(model.offset.begin(), model.offset.end(), i) -
                      model.offset.begin()) -
                  1;
    sc.detector_pair(s, i - model.offset[std::size_t(s)], lm.pairs[2 * std::size_t(e)],
                     lm.pairs[2 * std::size_t(e) + 1]);
    const double ybar = double(model.y[i]);
    is_true[std::size_t(e)] =
        u[2 * std::size_t(e) + 1] * ybar < ybar - double(model.a[i]);
  }
  if (tof.num_bins <= 0)
    return lm;
  // TOF bins from each event LOR's TOF profile, in chunks of events.
  const std::size_t N = std::size_t(tof.num_bins), chunk = 1 << 20;
  std::vector<float> prof(chunk * N);
  for (std::size_t e0 = 0; e0 < num_events; e0 += chunk) {
    const std::size_t k = std::min(chunk, num_events - e0);
    const resproj::detector_pairs<float> lors(sc.detectors.data(), sc.num_detectors(),
                                              lm.pairs.data() + 2 * e0, k);
    profiles(x, lors, tof, resproj::span<float>(prof.data(), k * N));
    for (std::size_t j = 0; j < k; ++j) {
      const float *p = prof.data() + j * N;
      double sum = 0;
      for (std::size_t b = 0; b < N; ++b)
        sum += p[b];
      std::size_t bin;
      if (is_true[e0 + j] && sum > 0) {
        double r = u01(rng) * sum;
        bin = 0;
        while (bin + 1 < N && (r -= p[bin]) >= 0)
          ++bin;
      } else {
        bin = std::min(N - 1, std::size_t(u01(rng) * double(N)));
      }
      lm.bins[e0 + j] = std::int16_t(bin);
    }
  }
  return lm;
}

/// Histograms list-mode events into a sinogram of `model`'s layout (subset
/// order), ignoring TOF bins: the counts `y`; m and a copied from `model`.
/// @throws resproj::invalid_argument ("lm") for an event on no sinogram bin.
inline sinogram_data histogram_events(const sinogram_subsets &sc,
                                      const sinogram_data &model,
                                      const listmode_data &lm) {
  std::unordered_map<std::int64_t, std::size_t> index;
  const std::int64_t nd = std::int64_t(sc.num_detectors());
  for (int s = 0; s < sc.num_subsets(); ++s)
    for (std::size_t i = 0; i < sc.subset_count(s); ++i) {
      std::int32_t da, db;
      sc.detector_pair(s, i, da, db);
      index[std::int64_t(da) * nd + db] = model.offset[std::size_t(s)] + i;
    }
  sinogram_data h = model;
  std::fill(h.y.begin(), h.y.end(), 0.f);
  for (std::size_t e = 0; e < lm.count(); ++e) {
    const auto it = index.find(std::int64_t(lm.pairs[2 * e]) * nd + lm.pairs[2 * e + 1]);
    if (it == index.end())
      resproj::detail::throw_invalid("lm", "event on no sinogram bin");
    h.y[it->second] += 1.f;
  }
  return h;
}

} // namespace resproj_examples
