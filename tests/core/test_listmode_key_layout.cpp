// The list-mode order key layout picked for an image (axial slabs for
// images larger than a slab's voxel budget) and the layout's validation.
// Plain C++: runs without a GPU; the key kernel's use of the layout is
// tested in tests/gpu/test_tof.cu (GpuTofOrder).

#include <cmath>

#include <gtest/gtest.h>

#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/gpu/listmode_key_layout.hpp"
#include "resproj/scanner/tb.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;

/// Voxels of one slab of `g` under `k`.
double slab_voxels(const rp::image_geometry &g, const gpu::listmode_tof_key &k) {
  const auto &n = g.shape();
  return double(n[0]) * double(n[1]) * double(n[2]) / double(1 << k.slab_bits);
}

TEST(ListmodeKeyLayout, NoSlabsForAnImageWithinTheBudget) {
  // dmi's 215 x 215 x 71 image: 3.3 M voxels, one slab; the layout is the
  // plain default.
  const auto g = rp::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
  const auto k = gpu::listmode_tof_key::for_image(g);
  const gpu::listmode_tof_key plain;
  EXPECT_EQ(k.slab_bits, 0);
  EXPECT_EQ(k.axis_bits, 0);
  EXPECT_EQ(k.angle_bits, plain.angle_bits);
  EXPECT_EQ(k.tilt_bits, plain.tilt_bits);
  EXPECT_EQ(k.xy_bits, plain.xy_bits);
  EXPECT_EQ(k.z_bits, plain.z_bits);
  EXPECT_EQ(k.bits(), 32);
}

TEST(ListmodeKeyLayout, FewestSlabsThatFitTheBudget) {
  // tb's 240 x 240 x 682 image: 39.3 M voxels; 64 slabs of 0.6 M voxels
  // fit 1 Mi, 32 slabs of 1.2 M do not. The sliced layout: coarser
  // direction with the principal-axis bit, finer axial cells.
  const auto g = rp::scanner::tb_image_geometry();
  auto k = gpu::listmode_tof_key::for_image(g);
  EXPECT_EQ(k.slab_bits, 6);
  EXPECT_EQ(k.axis_bits, 1);
  EXPECT_EQ(k.angle_bits, 4);
  EXPECT_EQ(k.tilt_bits, 1);
  EXPECT_EQ(k.z_bits, 8);
  EXPECT_LE(slab_voxels(g, k), gpu::listmode_tof_key::max_slab_voxels);
  k.slab_bits -= 1;
  EXPECT_GT(slab_voxels(g, k), gpu::listmode_tof_key::max_slab_voxels);
  EXPECT_EQ(k.bits(), 32); // slab bits are z bits moved up: no bits added
  EXPECT_NO_THROW(gpu::detail::check_tof_key(gpu::listmode_tof_key::for_image(g)));

  // Just over the unsliced limit (5.1 M voxels): 8 slabs of 0.64 M.
  const auto g5 = rp::image_geometry::centred({200, 200, 128}, {2, 2, 2});
  EXPECT_EQ(gpu::listmode_tof_key::for_image(g5).slab_bits, 3);
  // At it (4 Mi voxels): none.
  const auto g4 = rp::image_geometry::centred({128, 128, 256}, {2, 2, 2});
  EXPECT_EQ(gpu::listmode_tof_key::for_image(g4).slab_bits, 0);
}

TEST(ListmodeKeyLayout, SlabsNeverExceedTheAxialBits) {
  // Huge planes: even one plane per slab is over the budget; the slabs
  // stop at the axial cell's bits.
  const auto g = rp::image_geometry::centred({4096, 4096, 300}, {1, 1, 1});
  const auto k = gpu::listmode_tof_key::for_image(g);
  EXPECT_EQ(k.slab_bits, k.z_bits);
  EXPECT_NO_THROW(gpu::detail::check_tof_key(k));
}

TEST(ListmodeKeyLayout, ValidationNamesTheKey) {
  const auto rejects = [](const gpu::listmode_tof_key &k) {
    try {
      gpu::detail::check_tof_key(k);
    } catch (const rp::invalid_argument &e) {
      return e.argument() == "key";
    }
    return false;
  };
  gpu::listmode_tof_key k;
  EXPECT_FALSE(rejects(k));
  k.slab_bits = k.z_bits + 1;
  EXPECT_TRUE(rejects(k));
  k.slab_bits = -1;
  EXPECT_TRUE(rejects(k));
  k.slab_bits = k.z_bits;
  EXPECT_FALSE(rejects(k));
  k.xy_bits = 12; // 5 + 3 + 24 + 6 bits
  EXPECT_TRUE(rejects(k));
  k = gpu::listmode_tof_key{};
  k.tilt_cell_degrees = std::nanf("");
  EXPECT_TRUE(rejects(k));
  k = gpu::listmode_tof_key{};
  k.axis_bits = 1; // 33 bits
  EXPECT_EQ(k.bits(), 33);
  EXPECT_TRUE(rejects(k));
  k.tilt_bits = 2;
  EXPECT_FALSE(rejects(k));
  k.axis_bits = 2;
  EXPECT_TRUE(rejects(k));
  k.axis_bits = -1;
  EXPECT_TRUE(rejects(k));
}

} // namespace
