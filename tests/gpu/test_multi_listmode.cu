// List-mode OSEM on every visible GPU (recon/gpu_multi_listmode.cuh):
// shares of the subsets cover every event once; the reconstruction on all
// devices equals the single-device one to float accumulation order, at any
// device count (one device included); bad arguments are rejected.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "common/expect.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "recon/osem_problem.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/recon/gpu_multi_listmode.cuh"
#include "synthetic.hpp"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace recon = resproj::recon;
using resproj_test::expect_invalid;
using resproj_test::osem_problem;

TEST(MultiListmodeCpu, SharesCoverEverySubsetOnceInOrder) {
  const std::vector<std::size_t> offset = {0, 0, 1, 3, 10, 10, 1000};
  for (int D = 1; D <= 5; ++D) {
    std::vector<std::size_t> next(offset.begin(), offset.end() - 1); // per subset
    for (int d = 0; d < D; ++d) {
      const auto [first, share] = recon::device_share_of_subsets(offset, d, D);
      ASSERT_EQ(first.size() + 1, offset.size());
      ASSERT_EQ(share.size(), offset.size());
      EXPECT_EQ(share.front(), 0u);
      for (std::size_t k = 0; k + 1 < offset.size(); ++k) {
        EXPECT_EQ(first[k], next[k]) << D << " " << d << " " << k; // contiguous
        const std::size_t n = share[k + 1] - share[k];
        const std::size_t c = offset[k + 1] - offset[k];
        EXPECT_LE(n, c / std::size_t(D) + 1);
        next[k] += n;
      }
    }
    for (std::size_t k = 0; k + 1 < offset.size(); ++k)
      EXPECT_EQ(next[k], offset[k + 1]) << D << " " << k; // every event once
  }
  expect_invalid([] { (void)recon::device_share_of_subsets({0}, 0, 1); }, "offset");
  expect_invalid([] { (void)recon::device_share_of_subsets({0, 5, 4}, 0, 1); }, "offset");
  expect_invalid([] { (void)recon::device_share_of_subsets({0, 5}, 2, 2); }, "d");
  expect_invalid([] { (void)recon::device_share_of_subsets({0, 5}, 0, 0); }, "d");
}

namespace {

/// OSEM on the devices of `set` against `want`.
void expect_same_image(const recon::gpu_listmode_data &data, const gpu::device_set &set,
                       const std::vector<float> &x0, const std::vector<float> &want) {
  const gpu::stream_set streams(set);
  const recon::multi_device_listmode split(data, set, streams);
  EXPECT_EQ(split.count(), data.count());
  EXPECT_EQ(split.num_subsets(), data.events.num_subsets());
  recon::multi_device_listmode_backend b(split, x0, streams);
  recon::osem(b, 2);
  EXPECT_LT(resproj_test_gpu::relative_error(b.image(), want, 16), 1e-5)
      << set.size() << " device(s)";
}

} // namespace

TEST(MultiListmode, EveryDeviceEqualsOneDevice) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(5);
  for (const auto &tof : {resproj_test_gpu::small_tof(), resproj::tof_params<float>{}}) {
    auto lm = ex::draw_events(p.sc, p.model, p.x_true, tof, 30001, 5);
    recon::group_by_subset(lm, p.sc.num_subsets());
    gpu::stream s;
    const recon::device_sinogram_subsets ds(p.sc, s);
    const recon::gpu_listmode_data data(p.sc, ds, lm, p.corr, tof, s);
    auto one = data.backend(p.ones());
    recon::osem(one, 2);
    const std::vector<float> want = one.image();
    expect_same_image(data, gpu::device_set::all(), p.ones(), want);
    expect_same_image(data, gpu::device_set({gpu::current_device()}), p.ones(), want);
    if (gpu::device_count() > 1) // the data on device 0, the work elsewhere only
      expect_same_image(data, gpu::device_set({1}), p.ones(), want);
  }
}

TEST(MultiListmode, BadArgumentsAreRejected) {
  RESPROJ_REQUIRE_GPU();
  osem_problem p(5);
  auto lm =
      ex::draw_events(p.sc, p.model, p.x_true, resproj_test_gpu::small_tof(), 2001, 6);
  recon::group_by_subset(lm, p.sc.num_subsets());
  gpu::stream s;
  const recon::device_sinogram_subsets ds(p.sc, s);
  const recon::gpu_listmode_data data(p.sc, ds, lm, p.corr, resproj_test_gpu::small_tof(),
                                      s);
  const gpu::device_set set = gpu::device_set::all();
  const gpu::stream_set streams(set);
  expect_invalid(
      [&] { recon::multi_device_listmode(data, set, std::vector<gpu::stream_ref>{}); },
      "streams");
  const recon::multi_device_listmode split(data, set, streams);
  expect_invalid(
      [&] {
        recon::multi_device_listmode_backend(split, std::vector<float>(3, 1.f), streams);
      },
      "x0");
  expect_invalid(
      [&] {
        recon::multi_device_listmode_backend(split, p.ones(),
                                             std::vector<gpu::stream_ref>{});
      },
      "streams");
}
