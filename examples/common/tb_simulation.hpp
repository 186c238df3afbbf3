/// @file
/// @brief The `tb-lm-osem` acquisition (docs/benchmark-problems.md): list-mode
/// events of the total-body scanner drawn one at a time from the
/// attenuated, TOF-blurred model of the phantom, plus randoms + scatter
/// spread uniformly over the LORs and TOF bins. Every function that draws
/// an event is host and device code, so the CPU (`tb_draw_events`, any
/// thread count) and the GPU (tb_simulation_gpu.cuh) give the same events:
/// event i depends only on the seed and i.
///
/// The model (that of the reconstruction, with the phantom's analytic
/// shapes instead of voxels):
/// - LORs are the pairs of detectors of distinct transaxial crystals whose
///   segment meets the image box, decided as the projectors decide it
///   (`math::clip_to_box` on the float detector table): the LORs the
///   all-LOR sensitivity sums over.
/// - A true event lies on LOR L with probability proportional to
///   `w(L) = (integral of the activity along L) x exp(-integral of mu)`:
///   a LOR drawn uniformly is kept with probability `w(L) / bound`.
/// - Its emission point is drawn along L with density proportional to the
///   activity, and its TOF difference is that point's signed distance from
///   the LOR's midpoint plus Gaussian noise truncated at `num_sigmas`; the
///   TOF bin is that of the projectors (`tof_params`: bin j centred at
///   `(j - (n - 1) / 2) bin_width` towards detector b). Differences outside
///   the bins are not recorded (the event is drawn again). (The projectors
///   integrate the kernel over whole bins out to the truncation, so their
///   outermost bins hold a little of the Gaussian's tail that this draw
///   leaves out: about 0.3 % of the mass.)
/// - A random + scatter event (probability `random_fraction`) lies on a
///   uniform LOR with a uniform TOF bin.
/// Standard library and resproj only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"
#include "tb_phantom.hpp"

namespace resproj_examples {

/// Random numbers for one event: SplitMix64 started from a hash of the
/// seed and the event index (a counter-based stream: no state is shared
/// between events).
struct event_rng {
  std::uint64_t state;

  RESPROJ_HD static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  RESPROJ_HD event_rng(std::uint64_t seed, std::uint64_t event)
      : state(mix(seed + mix(event + 0x632BE59BD9B4E019ull))) {}
  RESPROJ_HD std::uint64_t next() {
    state += 0x9E3779B97F4A7C15ull;
    return mix(state);
  }
  /// Uniform in [0, 1), 53 bits.
  RESPROJ_HD double uniform() {
    return double(next() >> 11) * (1.0 / 9007199254740992.0);
  }
  /// Uniform integer in [0, n), n >= 1 (bias below n / 2^53).
  RESPROJ_HD std::uint32_t below(std::uint32_t n) {
    const auto k = std::uint32_t(uniform() * double(n));
    return k < n ? k : n - 1;
  }
};

/// Everything an event draw reads (trivially copyable, passed to kernels
/// by value). Make it with `make_tb_acquisition`.
struct tb_acquisition {
  static constexpr int max_spheres = 8;
  const float *detectors = nullptr; ///< xyz per detector (host or device)
  std::uint32_t num_detectors = 0;
  std::uint32_t crystals_per_ring = 0;
  resproj::math::image_grid<float> grid{};
  // Phantom: elliptic cylinder along axis 2, spheres inside it.
  double semi_axis0 = 0, semi_axis1 = 0, half_length = 0;
  double background = 0, mu = 0, max_activity = 0;
  int num_spheres = 0;
  double sphere_centre[max_spheres][3] = {};
  double sphere_radius[max_spheres] = {};
  double sphere_activity[max_spheres] = {};
  double bound = 0; ///< >= w(L) for every LOR
  // TOF.
  double bin_width = 0, sigma = 0, num_sigmas = 3;
  int num_bins = 0;
  double random_fraction = 0;
  std::uint64_t seed = 0;
};

/// Counts of an event draw, summed over events: uniform detector pairs
/// drawn, those that were LORs (their ratio estimates the share of LORs
/// among all ordered detector pairs), and the random + scatter events.
struct tb_draw_counts {
  std::uint64_t pair_draws = 0, lor_draws = 0, randoms = 0;
  void add(const tb_draw_counts &o) {
    pair_draws += o.pair_draws;
    lor_draws += o.lor_draws;
    randoms += o.randoms;
  }
  /// Estimated number of LORs (unordered pairs) of a scanner of
  /// `num_detectors` detectors.
  double lors(double num_detectors) const {
    return pair_draws ? 0.5 * num_detectors * num_detectors * double(lor_draws) /
                            double(pair_draws)
                      : 0.0;
  }
};

namespace detail {

/// Parameters t in [lo, hi] of p + t d inside the quadric
/// `q2 t^2 + q1 t + q0 <= 0` (q2 > 0), intersected with [lo, hi].
RESPROJ_HD inline bool quadric_chord(double q2, double q1, double q0, double &lo,
                                     double &hi) {
  const double disc = q1 * q1 - 4 * q2 * q0;
  if (!(q2 > 0) || !(disc > 0))
    return false;
  const double r = sqrt(disc);
  lo = fmax(lo, (-q1 - r) / (2 * q2));
  hi = fmin(hi, (-q1 + r) / (2 * q2));
  return lo < hi;
}

/// The body's chord of the segment p + t d, t in [0, 1].
RESPROJ_HD inline bool body_chord(const tb_acquisition &m, const double p[3],
                                  const double d[3], double &t0, double &t1) {
  t0 = 0;
  t1 = 1;
  const double a2 = m.semi_axis0 * m.semi_axis0, b2 = m.semi_axis1 * m.semi_axis1;
  if (!quadric_chord(d[0] * d[0] / a2 + d[1] * d[1] / b2,
                     2 * (p[0] * d[0] / a2 + p[1] * d[1] / b2),
                     p[0] * p[0] / a2 + p[1] * p[1] / b2 - 1, t0, t1))
    return false;
  if (d[2] != 0) {
    double z0 = (-m.half_length - p[2]) / d[2], z1 = (m.half_length - p[2]) / d[2];
    if (z0 > z1) {
      const double z = z0;
      z0 = z1;
      z1 = z;
    }
    t0 = fmax(t0, z0);
    t1 = fmin(t1, z1);
  } else if (fabs(p[2]) > m.half_length) {
    return false;
  }
  return t0 < t1;
}

/// Sphere k's chord of the segment p + t d, t in [0, 1].
RESPROJ_HD inline bool sphere_chord(const tb_acquisition &m, int k, const double p[3],
                                    const double d[3], double &t0, double &t1) {
  double e[3], dd = 0, de = 0, ee = 0;
  for (int j = 0; j < 3; ++j) {
    e[j] = p[j] - m.sphere_centre[k][j];
    dd += d[j] * d[j];
    de += d[j] * e[j];
    ee += e[j] * e[j];
  }
  t0 = 0;
  t1 = 1;
  return quadric_chord(dd, 2 * de, ee - m.sphere_radius[k] * m.sphere_radius[k], t0, t1);
}

/// The phantom's activity at x.
RESPROJ_HD inline double activity_at(const tb_acquisition &m, const double x[3]) {
  const double u = x[0] / m.semi_axis0, v = x[1] / m.semi_axis1;
  if (u * u + v * v > 1 || fabs(x[2]) > m.half_length)
    return 0;
  for (int k = 0; k < m.num_spheres; ++k) {
    double r2 = 0;
    for (int j = 0; j < 3; ++j) {
      const double e = x[j] - m.sphere_centre[k][j];
      r2 += e * e;
    }
    if (r2 <= m.sphere_radius[k] * m.sphere_radius[k])
      return m.sphere_activity[k];
  }
  return m.background;
}

RESPROJ_HD inline void segment(const tb_acquisition &m, std::uint32_t a, std::uint32_t b,
                               double p[3], double d[3]) {
  for (int j = 0; j < 3; ++j) {
    p[j] = double(m.detectors[3 * std::size_t(a) + std::size_t(j)]);
    d[j] = double(m.detectors[3 * std::size_t(b) + std::size_t(j)]) - p[j];
  }
}

} // namespace detail

/// Whether detectors a and b form a LOR of the model: distinct transaxial
/// crystals, segment meeting the image box (float, as the projectors).
RESPROJ_HD inline bool tb_is_lor(const tb_acquisition &m, std::uint32_t a,
                                 std::uint32_t b) {
  if (a % m.crystals_per_ring == b % m.crystals_per_ring)
    return false;
  const float *pa = m.detectors + 3 * std::size_t(a),
              *pb = m.detectors + 3 * std::size_t(b);
  const float d[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
  float t0, t1;
  return resproj::math::clip_to_box(m.grid, pa, d, t0, t1);
}

/// `w(L)` of the LOR a -> b: the activity's line integral times the
/// attenuation factor, analytic (lengths in mm).
RESPROJ_HD inline double tb_true_weight(const tb_acquisition &m, std::uint32_t a,
                                        std::uint32_t b) {
  double p[3], d[3], t0, t1;
  detail::segment(m, a, b, p, d);
  if (!detail::body_chord(m, p, d, t0, t1))
    return 0;
  const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const double body = (t1 - t0) * length;
  double integral = m.background * body;
  for (int k = 0; k < m.num_spheres; ++k) {
    double s0, s1;
    if (detail::sphere_chord(m, k, p, d, s0, s1))
      integral += (m.sphere_activity[k] - m.background) * (s1 - s0) * length;
  }
  return fmax(integral, 0.0) * exp(-m.mu * body);
}

/// The TOF bin of a true event on the LOR a -> b (whose weight is > 0), or
/// -1 if its TOF difference falls outside the bins.
RESPROJ_HD inline int tb_draw_true_bin(const tb_acquisition &m, std::uint32_t a,
                                       std::uint32_t b, event_rng &r) {
  double p[3], d[3], t0, t1;
  detail::segment(m, a, b, p, d);
  if (!detail::body_chord(m, p, d, t0, t1))
    return -1;
  // Emission point: uniform on the chord, kept with activity / max.
  double t = 0;
  for (int tries = 0;; ++tries) {
    if (tries == 100000)
      return -1; // (a chord with almost no activity)
    t = t0 + r.uniform() * (t1 - t0);
    const double x[3] = {p[0] + t * d[0], p[1] + t * d[1], p[2] + t * d[2]};
    if (r.uniform() * m.max_activity < detail::activity_at(m, x))
      break;
  }
  const double length = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  double z;
  do { // Box-Muller, truncated
    z = sqrt(-2 * log(1 - r.uniform())) * cos(6.283185307179586 * r.uniform());
  } while (fabs(z) > m.num_sigmas);
  const double position = (t - 0.5) * length + m.sigma * z;
  const double j = floor(position / m.bin_width + 0.5 * m.num_bins);
  return j >= 0 && j < m.num_bins ? int(j) : -1;
}

/// Event i of the acquisition; adds to `c`.
RESPROJ_HD inline resproj::listmode_event
tb_draw_event(const tb_acquisition &m, std::uint64_t i, tb_draw_counts &c) {
  event_rng r(m.seed, i);
  const bool random = r.uniform() < m.random_fraction;
  c.randoms += random ? 1 : 0;
  for (;;) {
    const std::uint32_t a = r.below(m.num_detectors), b = r.below(m.num_detectors);
    ++c.pair_draws;
    if (!tb_is_lor(m, a, b))
      continue;
    ++c.lor_draws;
    if (random)
      return resproj::listmode_event::make(a, b, std::int16_t(r.below(m.num_bins)));
    if (r.uniform() * m.bound >= tb_true_weight(m, a, b))
      continue;
    const int bin = tb_draw_true_bin(m, a, b, r);
    if (bin >= 0)
      return resproj::listmode_event::make(a, b, std::int16_t(bin));
  }
}

/// The acquisition of `phantom` on the scanner whose detector table
/// (`num_detectors` xyz, index `ring * crystals_per_ring + crystal`) is at
/// `detectors` (host memory for `tb_draw_events`, device memory for the
/// GPU), image `g`, TOF `tof` (centre offset 0, no per-LOR arrays). The
/// phantom must have some activity on a LOR (otherwise no true event can
/// be drawn and the draw never ends).
/// @throws resproj::invalid_argument ("phantom") for more than 8 spheres, a
///         non-positive size, a negative activity or no positive one;
///         ("detectors") for a null table, fewer than 2 detectors or no
///         crystal per ring; ("tof") for non-TOF parameters, a centre
///         offset, per-LOR arrays or a non-positive truncation;
///         ("random_fraction") outside [0, 1).
inline tb_acquisition make_tb_acquisition(
    const tb_phantom &phantom, const float *detectors, std::uint32_t num_detectors,
    std::uint32_t crystals_per_ring, const resproj::image_geometry &g,
    const resproj::tof_params<float> &tof, double random_fraction, std::uint64_t seed) {
  if (phantom.spheres.size() > std::size_t(tb_acquisition::max_spheres) ||
      !(phantom.semi_axis0 > 0 && phantom.semi_axis1 > 0 && phantom.length > 0))
    resproj::detail::throw_invalid("phantom", "at most 8 spheres and positive sizes");
  bool some_activity = phantom.background > 0;
  for (const sphere &s : phantom.spheres) {
    if (!(s.activity >= 0))
      resproj::detail::throw_invalid("phantom", "activities must be >= 0");
    some_activity = some_activity || s.activity > 0;
  }
  if (!(phantom.background >= 0) || !some_activity)
    resproj::detail::throw_invalid("phantom", "activities must be >= 0, some > 0");
  if (detectors == nullptr || num_detectors < 2 || crystals_per_ring < 1)
    resproj::detail::throw_invalid(
        "detectors", "a table of at least 2 detectors and a ring size needed");
  if (tof.num_bins < 1 || !(tof.bin_width > 0) || !(tof.sigma > 0) ||
      !(tof.num_sigmas > 0) || tof.center_offset != 0 || !tof.sigmas.empty() ||
      !tof.center_offsets.empty())
    resproj::detail::throw_invalid("tof", "TOF bins, width, sigma and truncation needed; "
                                          "no centre offset or per-LOR arrays");
  if (!(random_fraction >= 0 && random_fraction < 1))
    resproj::detail::throw_invalid("random_fraction", "must be in [0, 1)");
  tb_acquisition m;
  m.detectors = detectors;
  m.num_detectors = num_detectors;
  m.crystals_per_ring = crystals_per_ring;
  m.grid = resproj::math::image_grid<float>::from(g);
  m.semi_axis0 = phantom.semi_axis0;
  m.semi_axis1 = phantom.semi_axis1;
  m.half_length = 0.5 * phantom.length;
  m.background = phantom.background;
  m.mu = phantom.water_mu;
  m.max_activity = phantom.background;
  m.num_spheres = int(phantom.spheres.size());
  double hot_excess = 0, hot_diameter = 0; // bound below
  for (int k = 0; k < m.num_spheres; ++k) {
    const sphere &s = phantom.spheres[std::size_t(k)];
    for (int j = 0; j < 3; ++j)
      m.sphere_centre[k][j] = s.centre[std::size_t(j)];
    m.sphere_radius[k] = 0.5 * s.diameter;
    m.sphere_activity[k] = s.activity;
    m.max_activity = std::max(m.max_activity, s.activity);
    if (s.activity > phantom.background) {
      hot_excess = std::max(hot_excess, s.activity - phantom.background);
      hot_diameter += s.diameter;
    }
  }
  // w(L) <= (bg l + excess min(l, sum of hot diameters)) exp(-mu l) for a
  // body chord l (the spheres lie inside the body, each chord at most its
  // diameter): its maximum over l up to the body's longest chord, scanned
  // finely, with a margin. Valid for any sphere positions inside the body,
  // hence loose for tb's (a chord through a sphere there is at least about
  // 215 mm long): the largest w of tb's LORs is about 0.28 of it, which
  // costs draws, not accuracy.
  const double longest =
      std::hypot(2 * std::max(m.semi_axis0, m.semi_axis1), phantom.length);
  for (double l = 0; l <= longest + 1; l += 0.01)
    m.bound =
        std::max(m.bound, (m.background * l + hot_excess * std::min(l, hot_diameter)) *
                              std::exp(-m.mu * l));
  m.bound *= 1.001;
  m.bin_width = tof.bin_width;
  m.sigma = tof.sigma;
  m.num_sigmas = tof.num_sigmas;
  m.num_bins = tof.num_bins;
  m.random_fraction = random_fraction;
  m.seed = seed;
  return m;
}

/// Draws events `[first, first + out.size())` of `m` (host detector table)
/// into `out` on `threads` host threads (0: all), the same events whatever
/// the thread count. Returns the draw counts.
inline tb_draw_counts tb_draw_events(const tb_acquisition &m, std::uint64_t first,
                                     resproj::span<resproj::listmode_event> out,
                                     unsigned threads = 0) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t block = 16384, n = out.size();
  const std::uint64_t tasks = (n + block - 1) / block;
  std::vector<tb_draw_counts> per_task(tasks);
  resproj::run_parallel_tasks(
      tasks,
      unsigned(std::min<std::uint64_t>(threads, std::max<std::uint64_t>(tasks, 1))),
      nullptr, [&](unsigned, std::uint64_t t, const auto &) {
        for (std::uint64_t i = t * block; i < std::min(n, (t + 1) * block); ++i)
          out[i] = tb_draw_event(m, first + i, per_task[t]);
      });
  tb_draw_counts c;
  for (const auto &p : per_task)
    c.add(p);
  return c;
}

} // namespace resproj_examples
