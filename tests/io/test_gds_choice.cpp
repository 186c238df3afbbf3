// Host side of the GPUDirect Storage choice: which mode tries
// cuFile, and that loading libcufile where it is missing or unusable
// reports a reason instead of failing (CI has no GDS).
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "resproj/gpu/detail/cufile.hpp"

namespace {

namespace gpu = resproj::gpu;

TEST(GdsChoice, Modes) {
  using gpu::gds_mode;
  using gpu::detail::should_try_gds;
  EXPECT_FALSE(should_try_gds(gds_mode::bounce, false));
  EXPECT_FALSE(should_try_gds(gds_mode::bounce, true));
  EXPECT_TRUE(should_try_gds(gds_mode::require, false));
  EXPECT_TRUE(should_try_gds(gds_mode::require, true));
  EXPECT_FALSE(should_try_gds(gds_mode::automatic, false));
  EXPECT_TRUE(should_try_gds(gds_mode::automatic, true));
  EXPECT_STREQ(gpu::io_method_name(gpu::io_method::gds), "gds");
  EXPECT_STREQ(gpu::io_method_name(gpu::io_method::bounce), "bounce");
  EXPECT_STREQ(gpu::io_method_name(gpu::io_method::none), "none");
}

TEST(GdsChoice, LoaderReportsInsteadOfFailing) {
  const auto &a = gpu::detail::cufile::api::get();
  EXPECT_EQ(&a, &gpu::detail::cufile::api::get()); // loaded once
  if (a.usable()) {
    EXPECT_NE(a.read, nullptr);
    EXPECT_NE(a.write, nullptr);
    EXPECT_NE(a.buf_register, nullptr);
  } else {
    EXPECT_FALSE(a.problem.empty());
    std::cout << "[ info ] cuFile not usable here: " << a.problem << "\n";
  }
  (void)gpu::detail::nvidia_fs_loaded(); // must not throw
}

} // namespace
