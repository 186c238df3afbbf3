// The list-mode simulation of the total-body problem (tb_simulation.hpp):
// event i depends only on the seed and i (not on the thread count or the
// range drawn); every event is a LOR of the scanner (distinct transaxial
// crystals, segment meeting the image box) with a TOF bin in range; the
// share of randoms, which lie on uniform LORs with uniform bins; the bound
// on the true weight w(L); w(L) against brute-force line integrals through
// the phantom; the trues against the model, computed here independently:
// their LORs (density w(L) times the chance that the TOF difference falls
// in the bins, by importance sampling over uniform LORs) and their TOF
// bins (each LOR's bin distribution for an emission density equal to the
// activity and Gaussian noise truncated at num_sigmas); bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/expect.hpp"
#include "resproj/scanner/tb.hpp"
#include "tb_phantom.hpp"
#include "tb_simulation.hpp"

namespace ex = resproj_examples;
using resproj::listmode_event;

namespace {

struct setup {
  resproj::scanner::polygon_scanner sc = resproj::scanner::tb();
  std::vector<float> det = sc.detector_centres();
  resproj::image_geometry g = resproj::scanner::tb_image_geometry();
  resproj::tof_params<float> tof = resproj::scanner::tb_tof<float>();
  ex::tb_phantom phantom = ex::tb_phantom::make();

  std::uint32_t num_detectors() const { return std::uint32_t(det.size() / 3); }
  ex::tb_acquisition make(double random_fraction, std::uint64_t seed) const {
    return ex::make_tb_acquisition(phantom, det.data(), num_detectors(),
                                   std::uint32_t(sc.crystals_per_ring()), g, tof,
                                   random_fraction, seed);
  }
  // Detector a's centre p and b - a in d, in double.
  void segment(std::uint32_t a, std::uint32_t b, double p[3], double d[3]) const {
    for (std::size_t k = 0; k < 3; ++k) {
      p[k] = det[3 * std::size_t(a) + k];
      d[k] = double(det[3 * std::size_t(b) + k]) - p[k];
    }
  }
};

const setup &tb() {
  static const setup s;
  return s;
}

std::vector<listmode_event> draw(const ex::tb_acquisition &m, std::uint64_t first,
                                 std::size_t n, unsigned threads,
                                 ex::tb_draw_counts *counts = nullptr) {
  std::vector<listmode_event> out(n);
  const auto c = ex::tb_draw_events(m, first, {out.data(), n}, threads);
  if (counts)
    *counts = c;
  return out;
}

bool same(const listmode_event &x, const listmode_event &y) {
  return x.detector_a() == y.detector_a() && x.detector_b() == y.detector_b() &&
         x.tof_bin() == y.tof_bin();
}

// Whether p + t d, t in [0, 1], meets the image box grown by `margin`.
bool meets_box(const resproj::image_geometry &g, const double p[3], const double d[3],
               double margin) {
  double lo = 0, hi = 1;
  for (int k = 0; k < 3; ++k) {
    const double b0 = g.box_min(k) - margin, b1 = g.box_max(k) + margin;
    if (d[k] == 0) {
      if (p[k] < b0 || p[k] > b1)
        return false;
      continue;
    }
    const double u = (b0 - p[k]) / d[k], v = (b1 - p[k]) / d[k];
    lo = std::max(lo, std::min(u, v));
    hi = std::min(hi, std::max(u, v));
  }
  return lo <= hi;
}

// The body's chord [t0, t1] of p + t d, t in [0, 1].
bool body_chord(const ex::tb_phantom &ph, const double p[3], const double d[3],
                double &t0, double &t1) {
  const double a2 = ph.semi_axis0 * ph.semi_axis0, b2 = ph.semi_axis1 * ph.semi_axis1;
  const double q2 = d[0] * d[0] / a2 + d[1] * d[1] / b2;
  const double q1 = 2 * (p[0] * d[0] / a2 + p[1] * d[1] / b2);
  const double q0 = p[0] * p[0] / a2 + p[1] * p[1] / b2 - 1;
  const double disc = q1 * q1 - 4 * q2 * q0;
  if (!(disc > 0))
    return false;
  t0 = std::max(0.0, (-q1 - std::sqrt(disc)) / (2 * q2));
  t1 = std::min(1.0, (-q1 + std::sqrt(disc)) / (2 * q2));
  const double h = 0.5 * ph.length;
  const double u = (-h - p[2]) / d[2], v = (h - p[2]) / d[2]; // d[2] == 0: +-inf
  t0 = std::max(t0, std::min(u, v));
  t1 = std::min(t1, std::max(u, v));
  return t0 < t1;
}

// The model along the LOR p -> p + d, sampled every ~`step` mm over the body
// chord: the activity's integral, its part whose TOF difference (signed
// distance from the midpoint towards the end, plus Gaussian noise truncated
// at num_sigmas) falls in the bins, and, if `per_bin`, that part per bin.
struct lor_model {
  double activity = 0, recorded = 0;
  std::vector<double> bins;
};
lor_model model_of(const setup &s, const double p[3], const double d[3], double step,
                   bool per_bin) {
  lor_model r;
  double t0, t1;
  if (!body_chord(s.phantom, p, d, t0, t1))
    return r;
  const double sigma = s.tof.sigma, k = s.tof.num_sigmas, w = s.tof.bin_width;
  const int n = s.tof.num_bins;
  const double half = 0.5 * n * w; // the bins cover [-half, half)
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  auto cdf = [&](double y) { // CDF of the truncated noise
    const double z = std::clamp(y / sigma, -k, k);
    return (phi(z) - phi(-k)) / (phi(k) - phi(-k));
  };
  const double length = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const int steps = std::max(1, int(std::ceil((t1 - t0) * length / step)));
  r.bins.assign(std::size_t(n), 0.0);
  for (int i = 0; i < steps; ++i) {
    const double t = t0 + (i + 0.5) * (t1 - t0) / steps;
    const double x[3] = {p[0] + t * d[0], p[1] + t * d[1], p[2] + t * d[2]};
    const double rho = s.phantom.activity(x) * (t1 - t0) * length / steps;
    const double pos = (t - 0.5) * length;
    r.activity += rho;
    if (!per_bin) {
      r.recorded +=
          rho *
          (std::abs(pos) + k * sigma <= half ? 1 : cdf(half - pos) - cdf(-half - pos));
      continue;
    }
    const int lo = std::max(0, int(std::floor((pos - k * sigma + half) / w)));
    const int hi = std::min(n - 1, int(std::floor((pos + k * sigma + half) / w)));
    for (int j = lo; j <= hi; ++j) {
      const double q = rho * (cdf((j + 1) * w - half - pos) - cdf(j * w - half - pos));
      r.bins[std::size_t(j)] += q;
      r.recorded += q;
    }
  }
  return r;
}

// The detector b beyond `x` seen from detector a whose centre lies nearest
// the line from a through x.
std::uint32_t through(const setup &s, std::uint32_t a, const double x[3]) {
  const float *pa = &s.det[3 * std::size_t(a)];
  const double u[3] = {x[0] - pa[0], x[1] - pa[1], x[2] - pa[2]};
  const double uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
  std::uint32_t best = 0;
  double best_miss = 1e300;
  for (std::uint32_t b = 0; b < s.num_detectors(); ++b) {
    const float *pb = &s.det[3 * std::size_t(b)];
    const double v[3] = {pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
    const double vu = v[0] * u[0] + v[1] * u[1] + v[2] * u[2];
    const double miss = v[0] * v[0] + v[1] * v[1] + v[2] * v[2] - vu * vu / uu;
    if (vu > uu && miss < best_miss) {
      best_miss = miss;
      best = b;
    }
  }
  return best;
}

// Distance of x from the line through detectors a and b, and (in `along`)
// x's signed position along it from the midpoint towards b.
double distance(const setup &s, std::uint32_t a, std::uint32_t b, const double x[3],
                double *along = nullptr) {
  double p[3], d[3], e[3], dd = 0, de = 0, ee = 0;
  s.segment(a, b, p, d);
  for (int k = 0; k < 3; ++k) {
    e[k] = x[k] - p[k] - 0.5 * d[k];
    dd += d[k] * d[k];
    de += d[k] * e[k];
    ee += e[k] * e[k];
  }
  if (along)
    *along = de / std::sqrt(dd);
  return std::sqrt(std::max(0.0, ee - de * de / dd));
}

// Statistics of the LOR a -> b: midpoint z > 0; transaxial distance from
// the axis < 60 mm; axial extent > 600 mm.
void lor_stats(const setup &s, std::uint32_t a, std::uint32_t b, double f[3]) {
  double p[3], d[3];
  s.segment(a, b, p, d);
  f[0] = p[2] + 0.5 * d[2] > 0;
  f[1] = std::abs(p[0] * d[1] - p[1] * d[0]) < 60 * std::hypot(d[0], d[1]);
  f[2] = std::abs(d[2]) > 600;
}

// The trues shared by the model tests.
const std::vector<listmode_event> &trues(ex::tb_draw_counts *counts = nullptr) {
  static ex::tb_draw_counts c;
  static const auto events = draw(tb().make(0.0, 77), 5000, 40000, 0, &c);
  if (counts)
    *counts = c;
  return events;
}

} // namespace

TEST(TbSimulation, EventsDependOnlyOnSeedAndIndex) {
  const auto &s = tb();
  const auto m = s.make(0.3, 12345);
  const std::uint64_t first = 1000003;
  ex::tb_draw_counts c1, c3, head, tail;
  const auto one = draw(m, first, 40000, 1, &c1); // three blocks
  const auto three = draw(m, first, 40000, 3, &c3);
  const auto a = draw(m, first, 20000, 1, &head);
  const auto b = draw(m, first + 20000, 20000, 2, &tail);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < one.size(); ++i)
    differ += !same(one[i], three[i]) + !same(one[i], i < 20000 ? a[i] : b[i - 20000]);
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(c1.pair_draws, c3.pair_draws);
  EXPECT_EQ(c1.lor_draws, c3.lor_draws);
  EXPECT_EQ(c1.randoms, c3.randoms);
  EXPECT_EQ(head.pair_draws + tail.pair_draws, c1.pair_draws);
  EXPECT_EQ(head.lor_draws + tail.lor_draws, c1.lor_draws);
  EXPECT_EQ(head.randoms + tail.randoms, c1.randoms);
  const auto other = draw(s.make(0.3, 12346), first, 20000, 0);
  std::size_t equal = 0;
  for (std::size_t i = 0; i < other.size(); ++i)
    equal += same(other[i], one[i]);
  EXPECT_LT(equal, 20u);
}

TEST(TbSimulation, EventsAreLorsWithBinsInRange) {
  const auto &s = tb();
  const auto m = s.make(0.3, 99);
  const auto events = draw(m, 0, 40000, 0);
  std::size_t bad = 0;
  for (const auto &e : events) {
    const std::uint32_t a = e.detector_a(), b = e.detector_b();
    if (a >= s.num_detectors() || b >= s.num_detectors() || a % 840 == b % 840 ||
        e.tof_bin() < 0 || e.tof_bin() >= s.tof.num_bins) {
      ++bad;
      continue;
    }
    double p[3], d[3];
    s.segment(a, b, p, d);
    bad += !ex::tb_is_lor(m, a, b) || !meets_box(s.g, p, d, 1e-3);
  }
  EXPECT_EQ(bad, 0u);
  // tb_is_lor agrees with a slab test in double (up to a hair's breadth).
  std::size_t lors = 0, wrong = 0;
  for (std::uint64_t i = 0; i < 100000; ++i) {
    ex::event_rng r(4, i);
    const std::uint32_t a = r.below(s.num_detectors()), b = r.below(s.num_detectors());
    double p[3], d[3];
    s.segment(a, b, p, d);
    const bool lor = ex::tb_is_lor(m, a, b), distinct = a % 840 != b % 840;
    lors += lor;
    wrong += lor ? !(distinct && meets_box(s.g, p, d, 1e-3))
                 : distinct && meets_box(s.g, p, d, -1e-3);
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_GT(lors, 50000u); // both outcomes occur
  EXPECT_LT(lors, 99000u);
}

TEST(TbSimulation, Randoms) {
  const auto &s = tb();
  ex::tb_draw_counts c;
  const std::size_t n = 41000;
  draw(s.make(0.3, 5), 0, n, 0, &c);
  EXPECT_NEAR(double(c.randoms) / n, 0.3, 5 * std::sqrt(0.3 * 0.7 / n));
  trues(&c);
  EXPECT_EQ(c.randoms, 0u);
  // With 99.9% randoms: uniform TOF bins (chi-square, 40 degrees of
  // freedom) and uniform LORs (statistics against uniform pairs that are
  // LORs, give or take the 0.1% trues).
  const auto m = s.make(0.999, 5);
  const auto ev = draw(m, 0, n, 0);
  std::vector<double> bins(std::size_t(s.tof.num_bins));
  double got[3] = {}, want[3] = {}, f[3], lors = 0;
  for (const auto &e : ev) {
    bins[std::size_t(e.tof_bin())] += 1;
    lor_stats(s, e.detector_a(), e.detector_b(), f);
    for (int k = 0; k < 3; ++k)
      got[k] += f[k] / n;
  }
  double chi2 = 0;
  const double e = double(n) / s.tof.num_bins;
  for (const double b : bins)
    chi2 += (b - e) * (b - e) / e;
  EXPECT_LT(chi2, 40 + 5 * std::sqrt(80.0));
  for (std::uint64_t i = 0; i < 100000; ++i) {
    ex::event_rng r(12, i);
    const std::uint32_t a = r.below(s.num_detectors()), b = r.below(s.num_detectors());
    if (!ex::tb_is_lor(m, a, b))
      continue;
    lor_stats(s, a, b, f);
    lors += 1;
    for (int k = 0; k < 3; ++k)
      want[k] += f[k];
  }
  for (int k = 0; k < 3; ++k) {
    const double p = want[k] / lors;
    EXPECT_NEAR(got[k], p, 5 * std::sqrt(p * (1 - p) * (1 / lors + 1.0 / n)) + 0.001)
        << "statistic " << k;
  }
}

TEST(TbSimulation, BoundHoldsAndIsNotLoose) {
  const auto &s = tb();
  const auto m = s.make(0.0, 1);
  double most = 0;
  std::size_t above = 0;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    ex::event_rng r(6, i);
    const std::uint32_t a = r.below(s.num_detectors()), b = r.below(s.num_detectors());
    if (!ex::tb_is_lor(m, a, b))
      continue;
    const double w = ex::tb_true_weight(m, a, b);
    above += !(w <= m.bound);
    most = std::max(most, w);
  }
  EXPECT_EQ(above, 0u);
  EXPECT_GT(most, 0.2 * m.bound);
}

TEST(TbSimulation, TrueWeightEqualsLineIntegrals) {
  const auto &s = tb();
  const auto m = s.make(0.0, 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lors;
  // LORs through each sphere's centre (to a detector's width) ...
  for (const auto &sp : s.phantom.spheres)
    for (std::size_t i = 0, want = lors.size() + 4; lors.size() < want; ++i) {
      ex::event_rng r(7, i + 1000 * std::uint64_t(sp.diameter));
      const std::uint32_t a = r.below(s.num_detectors());
      if (std::abs(s.det[3 * std::size_t(a) + 2] - sp.centre[2]) > 300)
        continue;
      const std::uint32_t b = through(s, a, sp.centre.data());
      ASSERT_LT(distance(s, a, b, sp.centre.data()), 0.25 * sp.diameter);
      lors.emplace_back(a, b);
    }
  // ... and uniform LORs that cross the body.
  for (std::uint64_t i = 0; lors.size() < 50; ++i) {
    ex::event_rng r(8, i);
    const std::uint32_t a = r.below(s.num_detectors()), b = r.below(s.num_detectors());
    if (ex::tb_is_lor(m, a, b) && ex::tb_true_weight(m, a, b) > 0)
      lors.emplace_back(a, b);
  }
  // Midpoint rule: each jump of the integrand costs at most jump x step / 2
  // (activity: <= 14 jumps of <= 4; mu: 2 jumps of water_mu); twice that.
  const int steps = 200000;
  for (const auto &[a, b] : lors) {
    double p[3], d[3];
    s.segment(a, b, p, d);
    const double h = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) / steps;
    double act = 0, mu = 0;
    for (int i = 0; i < steps; ++i) {
      const double t = (i + 0.5) / steps;
      const double x[3] = {p[0] + t * d[0], p[1] + t * d[1], p[2] + t * d[2]};
      act += s.phantom.activity(x) * h;
      mu += s.phantom.mu(x) * h;
    }
    const double tol = 2 * std::exp(-mu) * (28 * h + act * s.phantom.water_mu * h);
    EXPECT_NEAR(ex::tb_true_weight(m, a, b), act * std::exp(-mu), tol)
        << "LOR " << a << " " << b;
  }
}

TEST(TbSimulation, TrueLorsFollowTheModel) {
  const auto &s = tb();
  const auto m = s.make(0.0, 1);
  // Expectations by importance sampling over uniform ordered pairs:
  // weight w(L) x (share of L's emissions whose TOF difference is binned).
  double sw = 0, swf[3] = {}, f[3];
  std::vector<double> w_of, f_of;
  for (std::uint64_t i = 0; i < 300000; ++i) {
    ex::event_rng r(9, i);
    const std::uint32_t a = r.below(s.num_detectors()), b = r.below(s.num_detectors());
    if (a % 840 == b % 840)
      continue;
    double w = ex::tb_true_weight(m, a, b);
    if (!(w > 0))
      continue;
    double p[3], d[3];
    s.segment(a, b, p, d);
    const lor_model lm = model_of(s, p, d, 2.0, false);
    w *= lm.recorded / lm.activity;
    lor_stats(s, a, b, f);
    w_of.push_back(w);
    f_of.insert(f_of.end(), f, f + 3);
    sw += w;
    for (int k = 0; k < 3; ++k)
      swf[k] += w * f[k];
  }
  const auto &ev = trues();
  const double n = double(ev.size());
  double got[3] = {};
  for (const auto &e : ev) {
    lor_stats(s, e.detector_a(), e.detector_b(), f);
    for (int k = 0; k < 3; ++k)
      got[k] += f[k] / n;
  }
  for (int k = 0; k < 3; ++k) {
    const double want = swf[k] / sw;
    double var = 0; // of the ratio estimate (delta method)
    for (std::size_t i = 0; i < w_of.size(); ++i)
      var += std::pow(w_of[i] * (f_of[3 * i + std::size_t(k)] - want) / sw, 2);
    const double se = std::sqrt(var + want * (1 - want) / n);
    EXPECT_NEAR(got[k], want, 5 * se) << "statistic " << k;
    EXPECT_GT(want, 0.05); // every statistic is informative
    EXPECT_LT(want, 0.95);
  }
}

TEST(TbSimulation, TrueBinDrawsFollowTheKernel) {
  // tb_draw_true_bin on single LORs against the model's bin distribution
  // (chi-square; "outside the bins" is a category, those expecting < 5
  // draws are pooled): through the 22 mm hot sphere and the 37 mm cold one,
  // off the LORs' midpoints, and an oblique LOR whose body chord overhangs
  // the bins.
  const auto &s = tb();
  const auto m = s.make(0.0, 3);
  auto ring_start = [&s](double z) { // first detector of the ring nearest z
    std::uint32_t best = 0;
    for (std::uint32_t r = 0; r < s.num_detectors(); r += 840)
      if (std::abs(s.det[3 * std::size_t(r) + 2] - z) <
          std::abs(s.det[3 * std::size_t(best) + 2] - z))
        best = r;
    return best;
  };
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lors;
  for (const std::size_t k : {3, 5}) {
    const auto &sp = s.phantom.spheres[k];
    const std::uint32_t a = ring_start(sp.centre[2] - 100) + 300;
    const std::uint32_t b = through(s, a, sp.centre.data());
    double along;
    ASSERT_LT(distance(s, a, b, sp.centre.data(), &along), 0.25 * sp.diameter);
    ASSERT_GT(std::abs(along), s.tof.bin_width); // a flipped order shows
    lors.emplace_back(a, b);
  }
  const std::uint32_t first = ring_start(-1e4), last = ring_start(1e4);
  lors.emplace_back(first, last + 420); // crystal 0 and its opposite one
  const int n = s.tof.num_bins, draws = 40000;
  for (const auto &[a, b] : lors) {
    double p[3], d[3];
    s.segment(a, b, p, d);
    const lor_model lm = model_of(s, p, d, 0.25, true);
    std::vector<double> want(std::size_t(n) + 1), got(std::size_t(n) + 1);
    for (int j = 0; j < n; ++j)
      want[std::size_t(j)] = draws * lm.bins[std::size_t(j)] / lm.activity;
    want[std::size_t(n)] = draws * (1 - lm.recorded / lm.activity);
    for (int i = 0; i < draws; ++i) {
      ex::event_rng r(11, std::uint64_t(i));
      const int j = ex::tb_draw_true_bin(m, a, b, r);
      got[std::size_t(j < 0 ? n : j)] += 1;
    }
    double chi2 = 0, pool_want = 0, pool_got = 0;
    int df = 0;
    for (std::size_t c = 0; c < want.size(); ++c) {
      if (want[c] < 5) {
        pool_want += want[c];
        pool_got += got[c];
        continue;
      }
      chi2 += (got[c] - want[c]) * (got[c] - want[c]) / want[c];
      ++df;
    }
    chi2 += (pool_got - pool_want) * (pool_got - pool_want) / std::max(pool_want, 1.0);
    EXPECT_LT(chi2, df + 5 * std::sqrt(2.0 * df)) << "LOR " << a << " " << b;
  }
  // The oblique LOR does lose draws outside the bins.
  double p[3], d[3];
  s.segment(first, last + 420, p, d);
  const lor_model lm = model_of(s, p, d, 0.25, true);
  EXPECT_LT(lm.recorded, 0.95 * lm.activity);
}

TEST(TbSimulation, TrueTofBinsFollowTheModel) {
  // Per event: the model's bin distribution on its LOR (mean mu, variance
  // v, fourth central moment m4); the standardised sums of (j - mu) and of
  // (j - mu)^2 - v must be O(1). A flipped bin order or an offset of half
  // a bin would move them by tens.
  const auto &s = tb();
  const auto &ev = trues();
  double s1 = 0, v1 = 0, s2 = 0, v2 = 0;
  for (std::size_t i = 0; i < 5000; ++i) {
    double p[3], d[3];
    s.segment(ev[i].detector_a(), ev[i].detector_b(), p, d);
    const lor_model lm = model_of(s, p, d, 2.0, true);
    ASSERT_GT(lm.recorded, 0);
    double mean = 0, var = 0, m4 = 0;
    for (int j = 0; j < s.tof.num_bins; ++j)
      mean += j * lm.bins[std::size_t(j)] / lm.recorded;
    for (int j = 0; j < s.tof.num_bins; ++j) {
      const double q = lm.bins[std::size_t(j)] / lm.recorded,
                   e2 = (j - mean) * (j - mean);
      var += q * e2;
      m4 += q * e2 * e2;
    }
    const double e = ev[i].tof_bin() - mean;
    s1 += e;
    v1 += var;
    s2 += e * e - var;
    v2 += m4 - var * var;
  }
  EXPECT_LT(std::abs(s1) / std::sqrt(v1), 5.0);
  EXPECT_LT(std::abs(s2) / std::sqrt(v2), 5.0);
}

TEST(TbSimulation, BadInput) {
  const auto &s = tb();
  using resproj_test::expect_invalid;
  expect_invalid([&] { s.make(1.0, 1); }, "random_fraction");
  expect_invalid([&] { s.make(-0.1, 1); }, "random_fraction");
  auto tof = s.tof;
  tof.num_bins = 0;
  expect_invalid(
      [&] {
        ex::make_tb_acquisition(s.phantom, s.det.data(), s.num_detectors(), 840, s.g, tof,
                                0.3, 1);
      },
      "tof");
  auto with = [&](const ex::tb_phantom &ph) {
    return [&s, ph] {
      ex::make_tb_acquisition(ph, s.det.data(), s.num_detectors(), 840, s.g, s.tof, 0.3,
                              1);
    };
  };
  auto ph = s.phantom;
  while (ph.spheres.size() < 9)
    ph.spheres.push_back(ph.spheres.front());
  expect_invalid(with(ph), "phantom");
  ph = s.phantom;
  ph.semi_axis1 = 0;
  expect_invalid(with(ph), "phantom");
  ph = s.phantom;
  ph.spheres[0].activity = -1;
  expect_invalid(with(ph), "phantom");
  ph = s.phantom;
  ph.background = 0;
  for (auto &sp : ph.spheres)
    sp.activity = 0;
  expect_invalid(with(ph), "phantom"); // no activity: no true event could be drawn
  for (const auto &bad : {std::make_pair(0, 1.0f), std::make_pair(1, 0.0f)}) {
    auto t = s.tof;
    if (bad.first == 0)
      t.center_offset = 5;
    else
      t.num_sigmas = bad.second;
    expect_invalid(
        [&] {
          ex::make_tb_acquisition(s.phantom, s.det.data(), s.num_detectors(), 840, s.g, t,
                                  0.3, 1);
        },
        "tof");
  }
  expect_invalid(
      [&] {
        ex::make_tb_acquisition(s.phantom, nullptr, s.num_detectors(), 840, s.g, s.tof,
                                0.3, 1);
      },
      "detectors");
  expect_invalid(
      [&] {
        ex::make_tb_acquisition(s.phantom, s.det.data(), s.num_detectors(), 0, s.g, s.tof,
                                0.3, 1);
      },
      "detectors");
}
