// The reconstruction layer on the GPU (recon/*.cuh) against its CPU
// backends on the small problem of tests/recon: same algorithm, same data,
// images equal to float accumulation order; the EM steps, the corrections,
// the sensitivity image and the event grouping against their host
// versions; the list-mode file loader (file -> device -> grouped, validated
// events) against the host one; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "common/files.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "recon/osem_problem.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"
#include "resproj/scanner/sinogram_lookup.hpp"
#include "synthetic.hpp"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace recon = resproj::recon;
using resproj_test::expect_invalid;
using resproj_test::osem_problem;

namespace {
template <class T>
std::vector<T> to_host(const gpu::device_buffer<T> &b, gpu::stream_ref s) {
  std::vector<T> h(b.size());
  b.copy_to_host(resproj::span<T>(h.data(), h.size()), s);
  s.synchronize();
  return h;
}
template <class T>
std::vector<T> to_host(const gpu::device_image<T> &b, gpu::stream_ref s) {
  std::vector<T> h(b.size());
  b.download(resproj::span<T>(h.data(), h.size()), s);
  s.synchronize();
  return h;
}
template <class T>
gpu::device_buffer<T> to_device(const std::vector<T> &v, gpu::stream_ref s) {
  return gpu::make_device_buffer(resproj::span<const T>(v.data(), v.size()), s);
}
} // namespace

TEST(GpuOsem, SinogramMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(4);
  recon::sinogram_data noisy = p.model;
  ex::add_poisson_noise(noisy, 5);
  recon::cpu_sinogram_backend cb(p.sc, noisy, p.ones());
  recon::osem(cb, 2);
  gpu::stream s;
  recon::gpu_sinogram_backend gb(p.sc, noisy, p.ones(), s);
  recon::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
}

// The EM steps on the GPU give the host formulas' values exactly.
TEST(GpuOsem, EmStepsMatchFormulas) {
  RESPROJ_REQUIRE_GPU();
  gpu::stream s;
  const std::vector<float> q = {2.f, 0.f, 1.5f, -1.f, 3.f},
                           m = {3.f, 1.f, 0.5f, 1.f, 2.f},
                           a = {1.f, 0.f, 0.25f, 0.5f, 0.f},
                           y = {4.f, 1.f, 0.f, 1.f, 2.f};
  auto dq = to_device(q, s), dq2 = to_device(q, s);
  const auto dm = to_device(m, s), da = to_device(a, s), dy = to_device(y, s);
  recon::gpu_em_ratio(dq.span(), dm.cspan(), da.cspan(), s);
  recon::gpu_em_ratio(dq2.span(), dm.cspan(), da.cspan(), dy.cspan(), s);
  const auto r1 = to_host(dq, s), r2 = to_host(dq2, s);
  for (std::size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(r1[i], recon::em_ratio{}(q[i], m[i], a[i], 1.f)) << i;
    EXPECT_EQ(r2[i], recon::em_ratio{}(q[i], m[i], a[i], y[i])) << i;
  }
  const auto geom = resproj::image_geometry::centred({5, 1, 1}, {1.0, 1.0, 1.0});
  gpu::device_image<float> x(geom, s), g(geom, s), sens(geom, s);
  const std::vector<float> hx = {1.f, 2.f, 3.f, 4.f, 5.f},
                           hg = {2.f, 1.f, 0.5f, 3.f, 1.f},
                           hs = {4.f, 0.f, -1.f, 2.f, 8.f};
  x.upload(resproj::span<const float>(hx.data(), 5), s);
  g.upload(resproj::span<const float>(hg.data(), 5), s);
  sens.upload(resproj::span<const float>(hs.data(), 5), s);
  recon::gpu_em_update(x, g, sens, 0.25f, s);
  const auto rx = to_host(x, s);
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(rx[i], recon::em_update{}(hx[i], hg[i], hs[i] * 0.25f)) << i;
  // Sizes are checked before anything runs.
  expect_invalid(
      [&] { recon::gpu_em_ratio(dq.span(), dm.cspan().subspan(0, 4), da.cspan(), s); },
      "m");
  expect_invalid(
      [&] {
        recon::gpu_em_ratio(dq.span(), dm.cspan(), da.cspan(), dy.cspan().subspan(1, 4),
                            s);
      },
      "y");
  gpu::device_image<float> other(
      resproj::image_geometry::centred({4, 1, 1}, {1.0, 1.0, 1.0}), s);
  expect_invalid([&] { recon::gpu_em_update(x, other, sens, 1.f, s); }, "g");
  expect_invalid([&] { recon::gpu_em_update(x, g, other, 1.f, s); }, "sens");
  EXPECT_EQ(to_host(x, s), rx); // untouched by the rejected calls
}

// Corrections, sensitivity, grouping and the one-time reorder on the GPU
// against the host versions; then TOF list-mode OSEM on the reordered
// events equals the CPU backend.
TEST(GpuOsem, TofListmodeMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(5);
  const auto tof = resproj_test_gpu::small_tof();
  auto lm = ex::draw_events(p.sc, p.model, p.x_true, tof, 50000, 3);
  const recon::listmode_data acquisition = lm;
  recon::listmode_corrections(p.sc, p.corr, tof, lm);
  recon::group_by_subset(lm, 5);
  const auto sens = recon::sensitivity_image(p.sc, p.corr);
  recon::cpu_listmode_backend cb(p.sc, lm, tof, sens, p.ones());
  recon::osem(cb, 2);

  gpu::stream s;
  const recon::device_sinogram_subsets ds(p.sc, s);
  const recon::device_corrections dc(p.corr, p.sc, s);
  // Grouping on the device equals grouping on the host.
  recon::device_events acq;
  acq.offset = {0, acquisition.count()};
  acq.pairs = to_device(acquisition.pairs, s);
  acq.bins = to_device(acquisition.bins, s);
  auto ev = recon::group_by_subset(acq, 5, s);
  ASSERT_EQ(ev.offset, lm.offset);
  EXPECT_EQ(to_host(ev.pairs, s), lm.pairs);
  EXPECT_EQ(to_host(ev.bins, s), lm.bins);
  // Corrections and sensitivity computed on the GPU, compared with the CPU's.
  gpu::device_buffer<float> m(lm.count(), s), a(lm.count(), s),
      work(p.sc.max_subset_count(), s);
  gpu::device_image<float> dsens(p.sc.image, s);
  recon::gpu_event_corrections(ds.detectors.cspan(), ev.all_pairs(), dc, tof.num_bins,
                               m.span(), a.span(), s);
  recon::gpu_sensitivity(p.sc, ds, dc, work.span(), dsens, s);
  EXPECT_LT(resproj_test_gpu::relative_error(to_host(m, s), lm.m, 0), 1e-5);
  EXPECT_EQ(to_host(a, s), lm.a);
  EXPECT_LT(resproj_test_gpu::relative_error(to_host(dsens, s), sens, 0), 1e-5);
  // The sensitivity keeps every bin's mu line integral; the events' corrections
  // read them (their LORs are sinogram bins, either direction) and equal the
  // per-event projections. Events off the sinogram (a pair in one crystal
  // position, here every 97th event) get their own projection.
  {
    gpu::device_buffer<float> integrals(std::size_t(p.sc.layout.num_bins()), s);
    integrals.fill(-1.f, s);
    recon::gpu_sensitivity(p.sc, ds, dc, work.span(), dsens.view(), s, -1,
                           integrals.span());
    auto h = to_host(integrals, s);
    EXPECT_TRUE(std::none_of(h.begin(), h.end(), [](float v) { return v < 0.f; }))
        << "every bin's integral written";
    EXPECT_LT(resproj_test_gpu::relative_error(to_host(dsens, s), sens, 0), 1e-5);
    auto pairs = to_host(ev.pairs, s);
    const int n = p.sc.scanner.crystals_per_ring();
    for (std::size_t i = 0; i < pairs.size() / 2; i += 97)
      pairs[2 * i + 1] = (pairs[2 * i] / n + 1) % p.sc.scanner.num_rings() * n +
                         pairs[2 * i] % n; // same crystal, another ring: no bin
    const auto dpairs = to_device(pairs, s);
    const resproj::scanner::sinogram_lookup lookup(p.sc.layout);
    const auto crystal_bins = to_device(lookup.crystal_table(), s);
    const auto ring_planes = to_device(lookup.ring_table(), s);
    gpu::device_buffer<float> m2(lm.count(), s), a2(lm.count(), s), m3(lm.count(), s);
    recon::gpu_event_corrections_from_sinogram(
        ds.detectors.cspan(), dpairs.cspan(),
        lookup.view(crystal_bins.data(), ring_planes.data()), integrals.cspan(), dc,
        tof.num_bins, m2.span(), a2.span(), s);
    recon::gpu_event_corrections(ds.detectors.cspan(), dpairs.cspan(), dc, tof.num_bins,
                                 m3.span(), a.span(), s);
    const auto got = to_host(m2, s), want = to_host(m3, s);
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst =
          std::max(worst, std::abs(double(got[i]) - want[i]) / std::abs(double(want[i])));
    EXPECT_LT(worst, 1e-5);
    EXPECT_EQ(to_host(a2, s), lm.a);
    expect_invalid(
        [&] {
          recon::gpu_sensitivity(p.sc, ds, dc, work.span(), dsens.view(), s, -1,
                                 integrals.span().subspan(1, integrals.size() - 1));
        },
        "line_integrals");
  }
  // One subset's sensitivity alone.
  const auto sens1 = recon::sensitivity_image(p.sc, p.corr, 1);
  recon::gpu_sensitivity(p.sc, ds, dc, work.span(), dsens, s, 0);
  EXPECT_LT(resproj_test_gpu::relative_error(to_host(dsens, s), sens1, 0), 1e-5);
  recon::gpu_sensitivity(p.sc, ds, dc, work.span(), dsens, s);

  // Reorder each subset once for locality (TOF key), then the corrections
  // of the reordered events: the image must not change.
  recon::gpu_order_subsets(p.sc.image, tof, ds.detectors.cspan(), ev, s);
  EXPECT_EQ(ev.layout, resproj::lor_layout::sorted_events());
  recon::gpu_event_corrections(ds.detectors.cspan(), ev.all_pairs(), dc, tof.num_bins,
                               m.span(), a.span(), s);
  const auto hperm = to_host(ev.permutation, s);
  for (int k = 0; k < ev.num_subsets(); ++k) {
    std::vector<char> seen(ev.count(k), 0);
    for (std::size_t j = ev.first(k); j < ev.first(k) + ev.count(k); ++j) {
      ASSERT_LT(hperm[j], seen.size());
      seen[hperm[j]] = 1;
    }
    for (char c : seen)
      ASSERT_TRUE(c) << "not a permutation of subset " << k;
  }
  // A key layout of more than 32 bits is refused before the events change.
  {
    resproj::gpu::listmode_tof_key wide;
    wide.xy_bits = 12;
    wide.z_bits = 12;
    const auto pairs_before = to_host(ev.pairs, s);
    expect_invalid(
        [&] {
          recon::gpu_order_subsets(p.sc.image, tof, ds.detectors.cspan(), ev, s, wide);
        },
        "key");
    EXPECT_EQ(to_host(ev.permutation, s), hperm);
    EXPECT_EQ(to_host(ev.pairs, s), pairs_before);
  }
  // The reordered events declare their order: the projections pick the
  // kernels for sorted events themselves.
  recon::gpu_listmode_backend gb(ev, ds.detectors.cspan(), m.cspan(), a.cspan(), tof,
                                 dsens, p.ones(), s);
  EXPECT_EQ(gb.lors(0).layout, resproj::lor_layout::sorted_events());
  // Sorted TOF events on an image the L2 holds: the backend back projects
  // through its own stencil workspace.
  EXPECT_TRUE(gb.stencil.has_value());
  EXPECT_TRUE(bool(gb.opt.stencil));
  recon::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
  // Without the workspace: the same reconstruction to float rounding.
  recon::gpu_listmode_backend direct(ev, ds.detectors.cspan(), m.cspan(), a.cspan(), tof,
                                     dsens, p.ones(), s);
  direct.opt.stencil = {};
  recon::osem(direct, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(direct.image(), gb.image(), 16), 1e-5);

  // Bad input names the argument.
  expect_invalid(
      [&] {
        recon::gpu_sensitivity(p.sc, ds, dc, work.span().subspan(1, work.size() - 1),
                               dsens, s);
      },
      "work");
  expect_invalid(
      [&] {
        recon::gpu_event_corrections(ds.detectors.cspan(), ev.all_pairs(), dc,
                                     tof.num_bins, m.span().subspan(1, m.size() - 1),
                                     a.span(), s);
      },
      "m");
  std::vector<float> host_m(m.size());
  expect_invalid(
      [&] {
        recon::gpu_event_corrections(
            ds.detectors.cspan(), ev.all_pairs(), dc, tof.num_bins,
            resproj::span<float>(host_m.data(), host_m.size()), a.span(), s);
      },
      "m");
  expect_invalid(
      [&] {
        recon::gpu_listmode_backend(ev, ds.detectors.cspan(),
                                    m.cspan().subspan(1, m.size() - 1), a.cspan(), tof,
                                    dsens, p.ones(), s);
      },
      "m");
  expect_invalid([&] { recon::group_by_subset(ev, 2, s); }, "acquisition");
  expect_invalid([&] { recon::group_by_subset(acq, 0, s); }, "num_subsets");
  auto bad = p.corr;
  bad.efficiency.pop_back();
  expect_invalid([&] { recon::device_corrections(bad, p.sc, s); }, "c.efficiency");
}

// The one loader: a list-mode file read into device memory, split,
// validated and grouped on the GPU, corrections and the sensitivity (whole
// sinogram) on the GPU, reordered; OSEM equals the CPU pipeline on the same
// file, and the phase table names every set-up phase.
TEST(GpuOsem, ListmodeFileLoaderMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(4);
  const auto tof = resproj_test_gpu::small_tof();
  const auto drawn = ex::draw_events(p.sc, p.model, p.x_true, tof, 40001, 7);
  resproj_test::temp_dir dir;
  const std::string path = dir.file("events.lm");
  const auto records = resproj::scanner::pack_events(
      resproj::span<const std::int32_t>(drawn.pairs.data(), drawn.pairs.size()),
      resproj::span<const std::int16_t>(drawn.bins.data(), drawn.bins.size()));
  resproj::io::write_listmode_file(
      path, resproj::span<const resproj::scanner::listmode_event>(records.data(),
                                                                  records.size()));
  // CPU: host loader, corrections, grouping, sensitivity.
  auto lm =
      recon::read_listmode_data(path, std::int64_t(p.sc.num_detectors()), tof.num_bins);
  recon::listmode_corrections(p.sc, p.corr, tof, lm);
  recon::group_by_subset(lm, p.sc.num_subsets());
  recon::cpu_listmode_backend cb(p.sc, lm, tof, recon::sensitivity_image(p.sc, p.corr),
                                 p.ones());
  recon::osem(cb, 2);

  gpu::stream s;
  recon::device_sinogram_subsets ds(p.sc, s);
  gpu::device_file_io io;
  recon::phase_table phases;
  const recon::gpu_listmode_data prob(p.sc, ds, io, path, p.corr, tof, s, &phases);
  ASSERT_EQ(prob.events.offset, lm.offset);
  EXPECT_EQ(prob.events.layout, resproj::lor_layout::sorted_events()); // reordered
  // Grouping as on the host: the events of each subset are the same
  // multiset (the GPU reorders within a subset; compare sorted pair keys).
  const auto hp = to_host(prob.events.pairs, s);
  for (std::size_t k = 0; k + 1 < lm.offset.size(); ++k) {
    std::vector<std::int64_t> g, c;
    for (std::size_t j = lm.offset[k]; j < lm.offset[k + 1]; ++j) {
      g.push_back(std::int64_t(hp[2 * j]) << 32 | std::uint32_t(hp[2 * j + 1]));
      c.push_back(std::int64_t(lm.pairs[2 * j]) << 32 |
                  std::uint32_t(lm.pairs[2 * j + 1]));
    }
    std::sort(g.begin(), g.end());
    std::sort(c.begin(), c.end());
    ASSERT_EQ(g, c) << "subset " << k;
  }
  auto gb = prob.backend(p.ones());
  recon::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
  EXPECT_GT(phases.seconds("read"), 0.0);
  EXPECT_GT(phases.seconds("group"), 0.0);
  EXPECT_GT(phases.seconds("corr"), 0.0);
  EXPECT_GT(phases.seconds("sens"), 0.0);
  EXPECT_GT(phases.total(), 0.0);
}

// A file with an event outside the scanner is rejected before any
// projection reads the detector table with it.
TEST(GpuOsem, ListmodeFileLoaderRejectsInvalidEvents) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(2);
  const auto tof = resproj_test_gpu::small_tof();
  std::vector<std::int32_t> pairs = {0, 5, 1, 7, std::int32_t(p.sc.num_detectors()), 3};
  std::vector<std::int16_t> bins = {0, 4, 2};
  resproj_test::temp_dir dir;
  const auto records = resproj::scanner::pack_events(
      resproj::span<const std::int32_t>(pairs.data(), pairs.size()),
      resproj::span<const std::int16_t>(bins.data(), bins.size()));
  const std::string path = dir.file("bad.lm");
  resproj::io::write_listmode_file(
      path, resproj::span<const resproj::scanner::listmode_event>(records.data(),
                                                                  records.size()));
  gpu::stream s;
  recon::device_sinogram_subsets ds(p.sc, s);
  gpu::device_file_io io;
  EXPECT_THROW(recon::gpu_listmode_data(p.sc, ds, io, path, p.corr, tof, s),
               resproj::io_error);
  bins[1] = 9; // TOF bin out of range
  pairs[4] = 2;
  const auto records2 = resproj::scanner::pack_events(
      resproj::span<const std::int32_t>(pairs.data(), pairs.size()),
      resproj::span<const std::int16_t>(bins.data(), bins.size()));
  resproj::io::write_listmode_file(
      path, resproj::span<const resproj::scanner::listmode_event>(records2.data(),
                                                                  records2.size()));
  EXPECT_THROW(recon::gpu_listmode_data(p.sc, ds, io, path, p.corr, tof, s),
               resproj::io_error);
}
