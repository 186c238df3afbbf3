// The host copy pool used by the GPU streaming projector (plain C++).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "resproj/gpu/detail/parallel_copy.hpp"

namespace {

TEST(ParallelCopier, CopiesEveryByteForManySizes) {
  for (unsigned workers : {0u, 1u, 3u}) {
    resproj::gpu::detail::parallel_copier copier(workers);
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000),
                          std::size_t(1) << 20, (std::size_t(3) << 20) + 7}) {
      std::vector<std::uint8_t> src(n), dst(n + 16, 0xAB);
      std::iota(src.begin(), src.end(), std::uint8_t(1));
      copier.copy(dst.data(), src.data(), n);
      EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << n << " " << workers;
      for (std::size_t i = n; i < dst.size(); ++i)
        ASSERT_EQ(dst[i], 0xAB) << "wrote past the end";
    }
  }
}

TEST(ParallelCopier, ReusableManyTimes) {
  resproj::gpu::detail::parallel_copier copier(2);
  std::vector<float> src(600000), dst(600000);
  for (int round = 0; round < 50; ++round) {
    std::fill(src.begin(), src.end(), float(round));
    copier.copy(dst.data(), src.data(), src.size() * sizeof(float));
    ASSERT_EQ(dst.front(), float(round));
    ASSERT_EQ(dst.back(), float(round));
  }
}

TEST(ParallelCopier, ConcurrentCallersAreSerialised) {
  resproj::gpu::detail::parallel_copier copier(2);
  auto caller = [&](std::uint8_t value) {
    std::vector<std::uint8_t> src((std::size_t(3) << 20) + 5, value), dst(src.size());
    for (int round = 0; round < 20; ++round) {
      copier.copy(dst.data(), src.data(), src.size());
      ASSERT_EQ(dst, src);
      std::fill(dst.begin(), dst.end(), std::uint8_t(0));
    }
  };
  std::thread a(caller, std::uint8_t(1)), b(caller, std::uint8_t(2));
  a.join();
  b.join();
}

} // namespace
