// The reconstruction layer (recon/) on a small scanner, CPU backend:
// likelihood and error monotonicity, one-subset OSEM == MLEM, sinogram ==
// list-mode reconstruction of the same events, the EM formulas, the
// sensitivity image, bad input; the host list-mode reader, subset offsets
// and the phase table. The data come from the examples' simulation
// (examples/common), used here as a fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "common/files.hpp"
#include "phantom.hpp"
#include "recon/osem_problem.hpp"
#include "resproj/recon/cpu_osem.hpp"
#include "resproj/recon/phase_timing.hpp"
#include "synthetic.hpp"

namespace ex = resproj_examples;
namespace rs = resproj::scanner;
namespace recon = resproj::recon;
using resproj_test::expect_invalid;
using resproj_test::osem_problem;

namespace {

double error_to(const std::vector<float> &x, const std::vector<float> &ref) {
  double e = 0, n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    e += double(x[i] - ref[i]) * (x[i] - ref[i]);
    n += double(ref[i]) * ref[i];
  }
  return std::sqrt(e / n);
}

double rel_diff(const std::vector<float> &a, const std::vector<float> &b) {
  double e = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    e += double(a[i] - b[i]) * (a[i] - b[i]);
    n += double(b[i]) * b[i];
  }
  return std::sqrt(e / n);
}

} // namespace

TEST(Osem, ModelIsConsistent) {
  osem_problem p(1);
  double total = 0, bg = 0;
  for (std::size_t i = 0; i < p.model.y.size(); ++i) {
    total += p.model.y[i];
    bg += p.model.a[i];
  }
  EXPECT_NEAR(total, 1e5, 1.0);
  EXPECT_NEAR(bg / total, 0.3, 1e-4);
  for (float m : p.model.m)
    ASSERT_GT(m, 0.f);
}

TEST(Osem, MlemIncreasesLikelihoodAndApproachesPhantom) {
  osem_problem p(1);
  recon::cpu_sinogram_backend b(p.sc, p.model, p.ones());
  double L = recon::poisson_log_likelihood(p.sc, p.model, b.x);
  double err = error_to(b.x, p.x_true);
  for (int it = 0; it < 8; ++it) {
    recon::osem(b, 1);
    const double L1 = recon::poisson_log_likelihood(p.sc, p.model, b.x);
    const double err1 = error_to(b.x, p.x_true);
    EXPECT_GT(L1, L) << "iteration " << it;
    EXPECT_LT(err1, err) << "iteration " << it;
    L = L1;
    err = err1;
  }
}

TEST(Osem, OneSubsetEqualsMlem) {
  osem_problem p(1);
  recon::cpu_sinogram_backend b(p.sc, p.model, p.ones());
  recon::osem(b, 3);
  // MLEM written out directly over the whole sinogram.
  const auto src = p.sc.source(0);
  const std::size_t n = src.count, nv = p.x_true.size();
  std::vector<float> x(nv, 1.f), sens(nv, 0.f), g(nv), q(n), r(n);
  resproj::cpu::back(resproj::op::non_tof{}, {sens.data(), p.sc.image}, src,
                     resproj::span<const float>(p.model.m.data(), n));
  for (int it = 0; it < 3; ++it) {
    resproj::cpu::forward(resproj::op::non_tof{}, {x.data(), p.sc.image}, src,
                          resproj::span<float>(q.data(), n));
    for (std::size_t i = 0; i < n; ++i) {
      const double e = double(p.model.m[i]) * q[i] + p.model.a[i];
      r[i] = float(p.model.m[i] * p.model.y[i] / e);
    }
    std::fill(g.begin(), g.end(), 0.f);
    resproj::cpu::back(resproj::op::non_tof{}, {g.data(), p.sc.image}, src,
                       resproj::span<const float>(r.data(), n));
    for (std::size_t j = 0; j < nv; ++j)
      x[j] = sens[j] > 0 ? x[j] * g[j] / sens[j] : 0.f;
  }
  EXPECT_LT(rel_diff(b.x, x), 1e-5);
}

TEST(Osem, SubsetsConvergeFaster) {
  osem_problem p1(1), p4(4);
  recon::cpu_sinogram_backend mlem(p1.sc, p1.model, p1.ones()),
      os(p4.sc, p4.model, p4.ones());
  recon::osem(mlem, 2);
  recon::osem(os, 2);
  EXPECT_GT(recon::poisson_log_likelihood(p1.sc, p1.model, os.x),
            recon::poisson_log_likelihood(p1.sc, p1.model, mlem.x));
}

TEST(Osem, SinogramAndListmodeAgree) {
  osem_problem p(1);
  const resproj::tof_params<float> non_tof{};
  auto lm = ex::draw_events(p.sc, p.model, p.x_true, non_tof, 20000, 7);
  recon::listmode_corrections(p.sc, p.corr, non_tof, lm);
  recon::group_by_subset(lm, 1);
  const auto hist = ex::histogram_events(p.sc, p.model, lm);
  double counts = 0;
  for (float v : hist.y)
    counts += v;
  ASSERT_EQ(counts, 20000.0);

  std::vector<float> sens(p.x_true.size(), 0.f);
  resproj::cpu::back(resproj::op::non_tof{}, {sens.data(), p.sc.image}, p.sc.source(0),
                     resproj::span<const float>(p.model.m.data(), p.model.m.size()));
  recon::cpu_sinogram_backend sb(p.sc, hist, p.ones());
  recon::cpu_listmode_backend lb(p.sc, lm, non_tof, sens, p.ones());
  recon::osem(sb, 3);
  recon::osem(lb, 3);
  EXPECT_LT(rel_diff(lb.x, sb.x), 1e-4);
}

TEST(Osem, TofListmodeReconstructs) {
  osem_problem p(1);
  resproj::tof_params<float> tof;
  tof.num_bins = 9;
  tof.bin_width = 12.f;
  tof.sigma = 10.f;
  auto lm = ex::draw_events(p.sc, p.model, p.x_true, tof, 100000, 3); // all the counts
  for (auto b : lm.bins)
    ASSERT_TRUE(b >= 0 && b < 9);
  recon::listmode_corrections(p.sc, p.corr, tof, lm);
  const auto perm = recon::group_by_subset(lm, 4);
  ASSERT_EQ(perm.size(), lm.count());
  EXPECT_EQ(perm[1], 4u);
  std::vector<float> sens(p.x_true.size(), 0.f);
  resproj::cpu::back(resproj::op::non_tof{}, {sens.data(), p.sc.image}, p.sc.source(0),
                     resproj::span<const float>(p.model.m.data(), p.model.m.size()));
  recon::cpu_listmode_backend b(p.sc, lm, tof, sens, p.ones());
  const double err0 = error_to(b.x, p.x_true);
  int reported = 0;
  recon::osem(b, 2, [&](const recon::osem_progress &pr) {
    ++reported;
    EXPECT_EQ(pr.num_subsets, 4);
    EXPECT_GE(pr.eta_s, 0.0);
  });
  EXPECT_EQ(reported, 8);
  EXPECT_LT(error_to(b.x, p.x_true), 0.6 * err0);
  const auto q = ex::measure_quality(p.phantom, p.sc.image, b.x);
  EXPECT_EQ(q.contrast_recovery.size(), 4u);
  EXPECT_GT(q.background_mean, 0.0);
}

TEST(Osem, SensitivityFromCorrections) {
  osem_problem p(3);
  std::vector<float> ref(p.x_true.size(), 0.f);
  for (int s = 0; s < 3; ++s)
    resproj::cpu::back(
        resproj::op::non_tof{}, {ref.data(), p.sc.image}, p.sc.source(s),
        resproj::span<const float>(p.model.m.data() + p.model.offset[std::size_t(s)],
                                   p.sc.subset_count(s)));
  const auto sens = recon::sensitivity_image(p.sc, p.corr);
  EXPECT_LT(rel_diff(sens, ref), 1e-5);
  double total = 0;
  for (float v : sens)
    total += v;
  EXPECT_GT(total, 0.0);
  // The first subsets only (bench_osem's scaled CPU pipeline).
  std::vector<float> ref1(p.x_true.size(), 0.f);
  resproj::cpu::back(resproj::op::non_tof{}, {ref1.data(), p.sc.image}, p.sc.source(0),
                     resproj::span<const float>(p.model.m.data(), p.sc.subset_count(0)));
  EXPECT_LT(rel_diff(recon::sensitivity_image(p.sc, p.corr, 1), ref1), 1e-5);
  EXPECT_LT(rel_diff(recon::sensitivity_image(p.sc, p.corr, 7), ref), 1e-5);
}

// The host list-mode loader reads a prefix of the file when asked; the
// subset offsets of the GPU loader are those of group_by_subset.
TEST(Osem, ListmodeLoaderAndSubsetOffsets) {
  osem_problem p(3);
  const auto drawn = ex::draw_events(p.sc, p.model, p.x_true, {}, 1001, 4);
  resproj_test::temp_dir dir;
  const std::string path = dir.file("e.lm");
  const auto rec = rs::pack_events(
      resproj::span<const std::int32_t>(drawn.pairs.data(), drawn.pairs.size()),
      resproj::span<const std::int16_t>(drawn.bins.data(), drawn.bins.size()));
  resproj::io::write_listmode_file(
      path, resproj::span<const rs::listmode_event>(rec.data(), rec.size()));
  const auto nd = std::int64_t(p.sc.num_detectors());
  const auto all = recon::read_listmode_data(path, nd, 0);
  EXPECT_EQ(all.pairs, drawn.pairs);
  EXPECT_EQ(all.bins, drawn.bins);
  const auto head = recon::read_listmode_data(path, nd, 0, 10);
  ASSERT_EQ(head.count(), 10u);
  EXPECT_TRUE(std::equal(head.pairs.begin(), head.pairs.end(), drawn.pairs.begin()));
  resproj_test::expect_io_error(
      [&] { recon::read_listmode_data(dir.file("missing.lm"), nd, 0); }, {"missing.lm"});
  // Events outside the scanner (or, with TOF bins, outside the bins) are
  // rejected, naming the first.
  resproj_test::expect_io_error([&] { recon::read_listmode_data(path, 3, 0); },
                                {"e.lm", "outside the scanner"});
  {
    auto bins = drawn.bins;
    bins[5] = 4;
    const auto r2 = rs::pack_events(
        resproj::span<const std::int32_t>(drawn.pairs.data(), drawn.pairs.size()),
        resproj::span<const std::int16_t>(bins.data(), bins.size()));
    const std::string bad = dir.file("bad.lm");
    resproj::io::write_listmode_file(
        bad, resproj::span<const rs::listmode_event>(r2.data(), r2.size()));
    resproj_test::expect_io_error([&] { recon::read_listmode_data(bad, nd, 4); },
                                  {"bad.lm", "first: 5"});
    EXPECT_EQ(recon::read_listmode_data(bad, nd, 5).count(), drawn.count());
  }
  for (int S : {1, 3, 7, 34}) {
    recon::listmode_data g = all;
    recon::group_by_subset(g, S);
    const auto off = recon::subset_offsets(all.count(), S);
    ASSERT_EQ(off, g.offset);
    ASSERT_EQ(off.back(), all.count());
    for (std::size_t k = 0; k < std::size_t(S); ++k)
      for (std::size_t j = off[k]; j < off[k + 1]; ++j) {
        const std::size_t i = k + (j - off[k]) * std::size_t(S); // acquisition index
        ASSERT_LT(i, all.count());
        ASSERT_EQ(g.pairs[2 * j], all.pairs[2 * i]) << S << " subsets, event " << j;
        ASSERT_EQ(g.pairs[2 * j + 1], all.pairs[2 * i + 1]);
      }
  }
  expect_invalid([] { recon::subset_offsets(5, 0); }, "num_subsets");
}

// The phase table: the total leaves out overlapped phases; keys look up.
TEST(Osem, PhaseTable) {
  recon::phase_table t;
  t.add("read", "read", 0.25, 100, "events");
  t.add("sens", "sensitivity", 0.5, 10, "LORs", true);
  t.add("osem", "OSEM", 0.5);
  EXPECT_DOUBLE_EQ(t.total(), 0.75);
  EXPECT_DOUBLE_EQ(t.seconds("sens"), 0.5);
  EXPECT_DOUBLE_EQ(t.seconds("none"), 0.0);
}

TEST(Osem, BadInputThrows) {
  osem_problem p(2);
  recon::cpu_sinogram_backend b(p.sc, p.model, p.ones());
  expect_invalid([&] { recon::osem(b, -1); }, "iterations");
  expect_invalid(
      [&] { recon::cpu_sinogram_backend(p.sc, p.model, std::vector<float>(3)); }, "x0");
  recon::listmode_data lm;
  expect_invalid([&] { recon::group_by_subset(lm, 0); }, "num_subsets");
  expect_invalid([] { ex::nema_phantom::make(-1); }, "scale");
  lm.bins = {0, 1};
  lm.pairs = {0, 1};
  expect_invalid([&] { recon::group_by_subset(lm, 1); }, "d");
  expect_invalid([&] { recon::sinogram_subsets(p.sc.scanner, 8, 0, p.sc.image); },
                 "num_subsets");
  expect_invalid(
      [&] {
        recon::sinogram_subsets(p.sc.scanner, 8, p.sc.layout.num_views + 1, p.sc.image);
      },
      "num_subsets");
  auto wrong = p.model;
  wrong.offset.back() += 1;
  expect_invalid([&] { recon::sensitivity_images(p.sc, wrong); }, "d");
  recon::corrections c = p.corr;
  c.efficiency.pop_back();
  expect_invalid([&] { recon::sensitivity_image(p.sc, c); }, "c.efficiency");
  c = p.corr;
  c.mu.resize(3);
  expect_invalid([&] { recon::sensitivity_image(p.sc, c); }, "c.mu");
  auto lm2 = ex::draw_events(p.sc, p.model, p.x_true, {}, 10, 1);
  expect_invalid([&] { recon::listmode_corrections(p.sc, c, {}, lm2); }, "c.mu");
  expect_invalid([&] { recon::cpu_listmode_backend(p.sc, lm2, {}, p.ones(), p.ones()); },
                 "data");
}

// The EM formulas: the ratio and the update, with their zero rules.
TEST(Osem, EmFormulas) {
  const recon::em_ratio r;
  EXPECT_FLOAT_EQ(r(2.f, 3.f, 1.f, 4.f), 3.f * 4.f / (3.f * 2.f + 1.f));
  EXPECT_EQ(r(2.f, 3.f, 1.f, 0.f), 0.f);   // no counts
  EXPECT_EQ(r(0.f, 3.f, 0.f, 1.f), 0.f);   // no expectation
  EXPECT_EQ(r(-1.f, 1.f, 0.5f, 1.f), 0.f); // negative expectation
  EXPECT_DOUBLE_EQ(r(1.0, 2.0, 0.0, 1.0), 1.0);
  const recon::em_update u;
  EXPECT_FLOAT_EQ(u(2.f, 3.f, 4.f), 1.5f);
  EXPECT_EQ(u(2.f, 3.f, 0.f), 0.f);
  EXPECT_EQ(u(2.f, 3.f, -1.f), 0.f);
}
