// GPU OSEM backends of the examples (examples/common/osem_gpu.cuh) against
// the CPU backends on the small problem of tests/recon: same algorithm,
// same data, images equal to float accumulation order.
#include <gtest/gtest.h>

#include <vector>

#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
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
  resproj::cpu::back<float>(
      {sens.data(), p.sc.image}, p.sc.source(0),
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

  // Reorder each subset once for locality: the image must not change.
  gpu::device_buffer<std::uint32_t> perm(lm.count(), s);
  ex::order_subsets(p.sc.image, lm.offset, det, pairs, bins, m, a, perm, s);
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

  ex::gpu_listmode_backend gb(p.sc, lm.offset, det, pairs, bins, m, a, tof, dsens,
                              p.ones(), s);
  ex::osem(gb, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(gb.image(), cb.x, 16), 1e-4);
}
