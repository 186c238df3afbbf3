// GPU OSEM backends of the examples (examples/common/osem_gpu.cuh) against
// the CPU backends on the small problem of tests/recon: same algorithm,
// same data, images equal to float accumulation order; the list-mode file
// loader (file -> device -> grouped, validated events) against the host one.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "listmode_io.hpp"
#include "osem_gpu.cuh"
#include "recon/osem_problem.hpp"
#include "resproj/gpu/gpu.cuh"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
using resproj_test::osem_problem;

TEST(GpuOsem, SinogramMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(4);
  ex::sinogram_data noisy = p.model;
  ex::add_poisson_noise(noisy, 5);
  ex::cpu_sinogram_backend cb(p.sc, noisy, p.ones());
  ex::osem(cb, 2);
  gpu::stream s;
  ex::gpu_sinogram_backend gb(p.sc, noisy, p.ones(), s);
  ex::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
}

TEST(GpuOsem, TofListmodeMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(1);
  resproj::tof_params<float> tof;
  tof.num_bins = 9;
  tof.bin_width = 12.f;
  tof.sigma = 10.f;
  auto lm = ex::draw_events(p.sc, p.model, p.x_true, tof, 50000, 3);
  ex::listmode_corrections(p.sc, p.corr, tof, lm);
  ex::group_by_subset(lm, 5);
  std::vector<float> sens(p.x_true.size(), 0.f);
  resproj::cpu::back(resproj::op::non_tof{}, {sens.data(), p.sc.image}, p.sc.source(0),
                     resproj::span<const float>(p.model.m.data(), p.model.m.size()));
  ex::cpu_listmode_backend cb(p.sc, lm, tof, sens, p.ones());
  ex::osem(cb, 2);

  gpu::stream s;
  auto det = gpu::make_device_buffer(
      resproj::span<const float>(p.sc.detectors.data(), p.sc.detectors.size()), s);
  auto pairs = gpu::make_device_buffer(
      resproj::span<const std::int32_t>(lm.pairs.data(), lm.pairs.size()), s);
  auto bins = gpu::make_device_buffer(
      resproj::span<const std::int16_t>(lm.bins.data(), lm.bins.size()), s);
  auto a =
      gpu::make_device_buffer(resproj::span<const float>(lm.a.data(), lm.a.size()), s);
  // Corrections and sensitivity computed on the GPU, compared with the CPU's.
  gpu::device_image<float> mu(p.sc.image, s), dsens(p.sc.image, s);
  mu.upload(resproj::span<const float>(p.corr.mu.data(), p.corr.mu.size()), s);
  auto eff = gpu::make_device_buffer(
      resproj::span<const float>(p.corr.efficiency.data(), p.corr.efficiency.size()), s);
  gpu::device_buffer<float> m(lm.count(), s), work(p.sc.subset_count(0), s);
  ex::gpu_event_corrections(det, pairs, mu, eff, p.corr.scale, m, s);
  ex::device_scan ds(p.sc, s);
  ex::gpu_sensitivity(p.sc, ds, mu, eff, p.corr.scale, work, {&dsens}, s);
  std::vector<float> hm(lm.count()), hsens(sens.size());
  m.copy_to_host(resproj::span<float>(hm.data(), hm.size()), s);
  dsens.download(resproj::span<float>(hsens.data(), hsens.size()), s);
  s.synchronize();
  EXPECT_LT(resproj_test_gpu::relative_error(hm, lm.m, 0), 1e-5);
  EXPECT_LT(resproj_test_gpu::relative_error(hsens, sens, 0), 1e-5);

  // Reorder each subset once for locality (TOF key), then the corrections
  // of the reordered events: the image must not change.
  gpu::device_buffer<std::uint32_t> perm(lm.count(), s);
  ex::order_subsets(p.sc.image, tof, lm.offset, det, pairs, bins, perm, s);
  ex::gpu_event_corrections(det, pairs, mu, eff, p.corr.scale, m, s);
  std::vector<std::uint32_t> hperm(lm.count());
  perm.copy_to_host(resproj::span<std::uint32_t>(hperm.data(), hperm.size()), s);
  s.synchronize();
  for (std::size_t k = 0; k + 1 < lm.offset.size(); ++k) {
    std::vector<char> seen(lm.offset[k + 1] - lm.offset[k], 0);
    for (std::size_t j = lm.offset[k]; j < lm.offset[k + 1]; ++j) {
      ASSERT_LT(hperm[j], seen.size());
      seen[hperm[j]] = 1;
    }
    for (char c : seen)
      ASSERT_TRUE(c) << "not a permutation of subset " << k;
  }

  // The reordered events declare their order: the projections pick the
  // kernels for sorted events themselves.
  ex::gpu_listmode_backend gb(p.sc, lm.offset, det, pairs, bins, m, a, tof, dsens,
                              p.ones(), s, resproj::lor_layout::sorted_events());
  EXPECT_EQ(gb.lors(0).layout, resproj::lor_layout::sorted_events());
  ex::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
}

// The one loader: a list-mode file read into device memory, split,
// validated and grouped on the GPU, corrections and the sensitivity (whole
// sinogram) on the GPU, reordered; OSEM equals the CPU pipeline on the same
// file, and the phase table names every set-up phase.
TEST(GpuOsem, ListmodeFileLoaderMatchesCpu) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(4);
  resproj::tof_params<float> tof;
  tof.num_bins = 9;
  tof.bin_width = 12.f;
  tof.sigma = 10.f;
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
  auto lm = ex::load_events(path);
  ex::listmode_corrections(p.sc, p.corr, tof, lm);
  ex::group_by_subset(lm, p.sc.num_subsets());
  ex::cpu_listmode_backend cb(p.sc, lm, tof, ex::cpu_sensitivity(p.sc, p.corr), p.ones());
  ex::osem(cb, 2);

  gpu::stream s;
  ex::device_scan ds(p.sc, s);
  gpu::device_file_io io;
  ex::phase_table phases;
  const ex::gpu_listmode_problem prob(p.sc, ds, io, path, p.corr, tof, s, &phases);
  ASSERT_EQ(prob.offset, lm.offset);
  EXPECT_EQ(prob.events_layout, resproj::lor_layout::sorted_events()); // reordered
  // Grouping as on the host: the events of each subset are the same
  // multiset (the GPU reorders within a subset; compare sorted pair keys).
  std::vector<std::int32_t> hp(prob.pairs.size());
  prob.pairs.copy_to_host(resproj::span<std::int32_t>(hp.data(), hp.size()), s);
  s.synchronize();
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
  ex::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
  EXPECT_GT(phases.seconds("read"), 0.0);
  EXPECT_GT(phases.seconds("sens"), 0.0);
  EXPECT_GT(phases.total(), 0.0);
}

// A file with an event outside the scanner is rejected before any
// projection reads the detector table with it.
TEST(GpuOsem, ListmodeFileLoaderRejectsInvalidEvents) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(2);
  resproj::tof_params<float> tof;
  tof.num_bins = 9;
  tof.bin_width = 12.f;
  tof.sigma = 10.f;
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
  ex::device_scan ds(p.sc, s);
  gpu::device_file_io io;
  EXPECT_THROW(ex::gpu_listmode_problem(p.sc, ds, io, path, p.corr, tof, s),
               resproj::io_error);
  bins[1] = 9; // TOF bin out of range
  pairs[4] = 2;
  const auto records2 = resproj::scanner::pack_events(
      resproj::span<const std::int32_t>(pairs.data(), pairs.size()),
      resproj::span<const std::int16_t>(bins.data(), bins.size()));
  resproj::io::write_listmode_file(
      path, resproj::span<const resproj::scanner::listmode_event>(records2.data(),
                                                                  records2.size()));
  EXPECT_THROW(ex::gpu_listmode_problem(p.sc, ds, io, path, p.corr, tof, s),
               resproj::io_error);
}
