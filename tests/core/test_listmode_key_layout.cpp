// The list-mode order key layout picked for an image (axial slabs for
// images larger than a slab's voxel budget) and for the size of a call
// (coarser direction cells for fewer events), and the layout's validation.
// Plain C++: runs without a GPU; the key kernel's use of the layout is
// tested in tests/gpu/test_tof.cu (GpuTofOrder).

#include <cmath>
#include <cstddef>

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
  EXPECT_TRUE(gpu::listmode_tof_key::unsliced(g));
  EXPECT_FALSE(gpu::listmode_tof_key::unsliced(rp::scanner::tb_image_geometry()));
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

TEST(ListmodeKeyLayout, SmallerCallsGetCoarserDirectionCells) {
  const auto g = rp::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
  const auto cells = [](const gpu::listmode_tof_key &k) {
    return double(1 << (k.angle_bits + k.tilt_bits));
  };
  const gpu::listmode_tof_key plain;
  // 1e7 events fill the default's 256 direction cells: the defaults.
  const auto big = gpu::listmode_tof_key::for_image(g, 10000000);
  EXPECT_EQ(big.angle_bits, plain.angle_bits);
  EXPECT_EQ(big.tilt_bits, plain.tilt_bits);
  EXPECT_EQ(big.tilt_cell_degrees, plain.tilt_cell_degrees);
  // An OSEM subset of dmi-lm-osem (40 M / 34 events): 4 angle, 2 tilt bits
  // of 15 degrees, at least min_events_per_direction per cell.
  const auto sub = gpu::listmode_tof_key::for_image(g, 40000000 / 34);
  EXPECT_EQ(sub.angle_bits, 4);
  EXPECT_EQ(sub.tilt_bits, 2);
  EXPECT_EQ(sub.tilt_cell_degrees, 15.f);
  EXPECT_GE(1176470 / cells(sub), gpu::listmode_tof_key::min_events_per_direction);
  EXPECT_LT(1176470 / (2 * cells(sub)), gpu::listmode_tof_key::min_events_per_direction);
  // The cells shrink one bit at a time, angle first, and stop at 4 bits
  // together (3 angle, 1 tilt); the spatial bits never change.
  int last = 9;
  for (std::size_t n : {4200000, 2000000, 1000000, 500000, 1000, 0}) {
    const auto k = gpu::listmode_tof_key::for_image(g, n);
    const int d = k.angle_bits + k.tilt_bits;
    EXPECT_LE(d, last);
    EXPECT_GE(d, 4);
    EXPECT_GE(k.angle_bits, k.tilt_bits);
    EXPECT_LE(k.angle_bits, k.tilt_bits + 2);
    EXPECT_EQ(k.tilt_cell_degrees * float(1 << k.tilt_bits), 60.f);
    EXPECT_EQ(k.xy_bits, plain.xy_bits);
    EXPECT_EQ(k.z_bits, plain.z_bits);
    EXPECT_NO_THROW(gpu::detail::check_tof_key(k));
    last = d;
  }
  EXPECT_EQ(gpu::listmode_tof_key::for_image(g, 0).angle_bits, 3);
  EXPECT_EQ(gpu::listmode_tof_key::for_image(g, 0).tilt_bits, 1);
  // The sliced layout of a large image does not depend on the call's size.
  const auto tb = rp::scanner::tb_image_geometry();
  const auto k1 = gpu::listmode_tof_key::for_image(tb),
             k2 = gpu::listmode_tof_key::for_image(tb, 1000);
  EXPECT_EQ(k1.angle_bits, k2.angle_bits);
  EXPECT_EQ(k1.tilt_bits, k2.tilt_bits);
  EXPECT_EQ(k1.slab_bits, k2.slab_bits);
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
