// The total-body acquisition drawn on the GPU and written to a list-mode
// file chunk by chunk (examples/common/tb_simulation_gpu.cuh): the file
// holds exactly the events and counts of the CPU's draw, whatever the
// chunk size.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "common/files.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/io/listmode_file.hpp"
#include "resproj/scanner/tb.hpp"
#include "tb_simulation_gpu.cuh"

namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;

TEST(GpuTbSimulation, FileHoldsTheCpuEvents) {
  RESPROJ_REQUIRE_GPU();
  const auto sc = rs::tb();
  const std::vector<float> det = sc.detector_centres();
  const auto g = rs::tb_image_geometry();
  const auto tof = rs::tb_tof<float>();
  const auto phantom = ex::tb_phantom::make();
  const auto nd = std::uint32_t(det.size() / 3),
             cpr = std::uint32_t(sc.crystals_per_ring());
  gpu::stream s;
  const auto ddet =
      gpu::make_device_buffer(resproj::span<const float>(det.data(), det.size()), s);
  const auto dm = ex::make_tb_acquisition(phantom, ddet.data(), nd, cpr, g, tof, 0.3, 11);
  const auto hm = ex::make_tb_acquisition(phantom, det.data(), nd, cpr, g, tof, 0.3, 11);
  const std::uint64_t n = 150001;
  std::vector<resproj::listmode_event> want(n);
  const ex::tb_draw_counts cpu =
      ex::tb_draw_events(hm, 0, resproj::span<resproj::listmode_event>(want.data(), n));
  resproj_test::temp_dir dir;
  for (const std::uint64_t chunk : {std::uint64_t(40000), n}) {
    const std::string path = dir.file("tb.lm");
    const ex::tb_draw_counts c = ex::tb_simulate_to_file(dm, n, path, chunk, s);
    EXPECT_EQ(c.pair_draws, cpu.pair_draws);
    EXPECT_EQ(c.lor_draws, cpu.lor_draws);
    EXPECT_EQ(c.randoms, cpu.randoms);
    const auto got = resproj::io::read_listmode_file(path);
    ASSERT_EQ(got.size(), n);
    std::uint64_t differ = 0;
    for (std::uint64_t i = 0; i < n; ++i)
      differ += got[i].detector_a() != want[i].detector_a() ||
                got[i].detector_b() != want[i].detector_b() ||
                got[i].tof_bin() != want[i].tof_bin();
    EXPECT_EQ(differ, 0u) << "chunk " << chunk;
  }
  resproj_test::expect_invalid(
      [&] { ex::tb_simulate_to_file(dm, n, dir.file("x.lm"), 0, s); }, "chunk");
}
