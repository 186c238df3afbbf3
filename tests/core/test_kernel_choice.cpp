// The kernel-choice table: for every reference layout, the automatic choice
// is the one docs/kernel-choices.md records. Plain C++: runs without a GPU.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "resproj/core/errors.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
using gpu::direction;
using gpu::operation_kind;

constexpr int h200_multiprocessors = 132;

// The dmi sinogram: 272 views, 415 radial bins, 1296 planes; a subset is
// 8 views (1 of 34).
constexpr std::size_t radial = 415, planes = 1296;
constexpr std::size_t subset_lors = 8 * radial * planes; // dmi-subset
constexpr std::size_t full_lors = 272 * radial * planes; // dmi-full
constexpr std::size_t listmode_events = 10'000'000;      // dmi-tof-lm

gpu::kernel_choice choose(operation_kind o, direction d, rp::lor_layout l, std::size_t n,
                          bool is_float = true, const gpu::tuning &t = {}) {
  return gpu::choose_kernel(o, d, l, n, is_float, h200_multiprocessors, t);
}

// What the table records for one call (docs/kernel-choices.md).
struct expected {
  int lanes;
  std::size_t rows;
  bool fast_erfc, sample_first, vector_atomics, lockstep;
};

void expect_choice(const gpu::kernel_choice &c, const expected &e,
                   const std::string &what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(c.threads_per_lor, e.lanes);
  EXPECT_EQ(c.rows, e.rows);
  EXPECT_EQ(c.fast_erfc, e.fast_erfc);
  EXPECT_EQ(c.sample_first, e.sample_first);
  EXPECT_EQ(c.vector_atomics, e.vector_atomics);
  EXPECT_EQ(c.lockstep, e.lockstep);
  EXPECT_EQ(c.block_size, 256);
  EXPECT_TRUE(c.check_pointers);
  EXPECT_FALSE(c.wide_index);
  EXPECT_FALSE(c.stencil);
  EXPECT_NE(std::string(c.measured_in), "");
}

TEST(KernelChoice, ReferenceSinogramsTakeLanesAlongPlanes) {
  const auto sino = rp::lor_layout::sinogram(8, radial);
  const auto full = rp::lor_layout::sinogram(272, radial);
  for (direction d : {direction::forward, direction::back}) {
    expect_choice(choose(operation_kind::non_tof, d, sino, subset_lors),
                  {1, planes, false, false, false, false}, "dmi-subset");
    expect_choice(choose(operation_kind::non_tof, d, full, full_lors),
                  {1, planes, false, false, false, false}, "dmi-full");
  }
}

TEST(KernelChoice, NonTofSinogramsGoByTransaxialBins) {
  const auto sino = rp::lor_layout::sinogram(8, radial);
  for (direction d : {direction::forward, direction::back})
    EXPECT_TRUE(choose(operation_kind::non_tof, d, sino, subset_lors).transaxial_bins);
  // Too few planes, not whole planes, no layout, forced lanes, other
  // operations: per LOR.
  EXPECT_FALSE(choose(operation_kind::non_tof, direction::back, sino, 30 * 8 * radial)
                   .transaxial_bins);
  EXPECT_TRUE(choose(operation_kind::non_tof, direction::back, sino, 301 * 8 * radial)
                  .transaxial_bins);
  EXPECT_FALSE(choose(operation_kind::non_tof, direction::back, sino, subset_lors - 1)
                   .transaxial_bins);
  EXPECT_FALSE(
      choose(operation_kind::non_tof, direction::back, rp::lor_layout{}, subset_lors)
          .transaxial_bins);
  gpu::tuning one;
  one.threads_per_lor = 1;
  EXPECT_FALSE(
      choose(operation_kind::non_tof, direction::back, sino, subset_lors, true, one)
          .transaxial_bins);
  EXPECT_FALSE(choose(operation_kind::tof_sinogram, direction::back, sino, subset_lors)
                   .transaxial_bins);
}

TEST(KernelChoice, TofSinogramForwardKeepsMemoryOrderBackTakesPlanes) {
  const auto sino = rp::lor_layout::sinogram(8, radial);
  expect_choice(
      choose(operation_kind::tof_sinogram, direction::forward, sino, subset_lors),
      {8, 0, true, false, false, false}, "dmi-tof-subset forward");
  expect_choice(choose(operation_kind::tof_sinogram, direction::back, sino, subset_lors),
                {1, planes, true, false, false, false}, "dmi-tof-subset back");
  // Without a layout the back projection pairs its atomics.
  expect_choice(choose(operation_kind::tof_sinogram, direction::back, {}, subset_lors),
                {4, 0, true, false, true, false}, "tof sinogram back, unordered");
}

TEST(KernelChoice, ListModeDependsOnTheEventOrder) {
  const auto sorted = rp::lor_layout::sorted_events();
  expect_choice(
      choose(operation_kind::tof_listmode, direction::forward, {}, listmode_events),
      {2, 0, true, true, false, false}, "dmi-tof-lm forward, random");
  expect_choice(
      choose(operation_kind::tof_listmode, direction::back, {}, listmode_events),
      {2, 0, true, false, true, false}, "dmi-tof-lm back, random");
  expect_choice(
      choose(operation_kind::tof_listmode, direction::forward, sorted, listmode_events),
      {2, 0, true, true, false, false}, "dmi-tof-lm forward, sorted");
  expect_choice(
      choose(operation_kind::tof_listmode, direction::back, sorted, listmode_events),
      {1, 0, true, false, true, true}, "dmi-tof-lm back, sorted");
  // The per-event attenuation (non-TOF forward) of sorted events.
  expect_choice(
      choose(operation_kind::non_tof, direction::forward, sorted, 4 * listmode_events),
      {2, 0, false, false, false, false}, "dmi-lm-osem attenuation, sorted");
  expect_choice(choose(operation_kind::non_tof, direction::forward, {}, listmode_events),
                {4, 0, false, false, false, false}, "non-TOF forward, random");
  // An OSEM subset of the sorted events (1/34) still fills the GPU.
  expect_choice(
      choose(operation_kind::tof_listmode, direction::back, sorted, listmode_events / 34),
      {1, 0, true, false, true, true}, "dmi-lm-osem subset back");
}

TEST(KernelChoice, SmallChunksGetMoreLanes) {
  // About 512 threads per multiprocessor: 1e3 LORs 32 lanes, 1e4 LORs 8.
  EXPECT_EQ(choose(operation_kind::non_tof, direction::forward, {}, 1000).threads_per_lor,
            32);
  EXPECT_EQ(
      choose(operation_kind::non_tof, direction::forward, {}, 10000).threads_per_lor, 8);
  EXPECT_EQ(
      choose(operation_kind::non_tof, direction::forward, {}, 1000000).threads_per_lor,
      4);
  // Small sorted list-mode calls leave lock-step for lanes.
  const auto c = choose(operation_kind::tof_listmode, direction::back,
                        rp::lor_layout::sorted_events(), 10000);
  EXPECT_FALSE(c.lockstep);
  EXPECT_EQ(c.threads_per_lor, 8);
}

TEST(KernelChoice, PartialPlanesFallBackToMemoryOrder) {
  const auto sino = rp::lor_layout::sinogram(8, radial);
  // Not a whole number of planes: memory order, the unordered row.
  const auto c =
      choose(operation_kind::non_tof, direction::back, sino, 8 * radial * 100 + 7);
  EXPECT_EQ(c.rows, 0u);
  EXPECT_EQ(c.threads_per_lor, 4);
  // A chunk of 301 whole planes (the streamed dmi-subset) takes them as rows.
  EXPECT_EQ(choose(operation_kind::non_tof, direction::back, sino, 8 * radial * 301).rows,
            301u);
}

TEST(KernelChoice, DoubleUsesNoFloatOnlyVariant) {
  const auto c = choose(operation_kind::tof_listmode, direction::forward, {},
                        listmode_events, /*is_float=*/false);
  EXPECT_FALSE(c.fast_erfc);
  EXPECT_TRUE(c.sample_first);
  EXPECT_FALSE(
      choose(operation_kind::tof_listmode, direction::back, {}, listmode_events, false)
          .vector_atomics);
}

TEST(KernelChoice, TuningOverridesAndIsChecked) {
  gpu::tuning t;
  t.threads_per_lor = 8;
  t.exact_erfc = true;
  t.block_size = 128;
  t.check_pointers = false;
  const auto c = choose(operation_kind::tof_listmode, direction::back,
                        rp::lor_layout::sorted_events(), listmode_events, true, t);
  EXPECT_EQ(c.threads_per_lor, 8);
  EXPECT_FALSE(c.lockstep);
  EXPECT_FALSE(c.fast_erfc);
  EXPECT_EQ(c.block_size, 128);
  EXPECT_FALSE(c.check_pointers);

  // The stencil workspace reaches TOF back projections only.
  gpu::tuning w;
  int dummy = 0;
  w.stencil.data = &dummy;
  EXPECT_TRUE(
      choose(operation_kind::tof_sinogram, direction::back, {}, 100, true, w).stencil);
  EXPECT_FALSE(
      choose(operation_kind::tof_sinogram, direction::forward, {}, 100, true, w).stencil);
  EXPECT_FALSE(
      choose(operation_kind::non_tof, direction::back, {}, 100, true, w).stencil);

  // Slab passes reach the per-event list-mode kernels only; one pass by
  // default.
  for (const auto d : {direction::forward, direction::back}) {
    EXPECT_EQ(choose(operation_kind::tof_listmode, d, {}, listmode_events).slabs, 1);
    gpu::tuning p;
    p.slabs = 6;
    EXPECT_EQ(choose(operation_kind::tof_listmode, d, {}, listmode_events, true, p).slabs,
              6);
    EXPECT_EQ(choose(operation_kind::tof_listmode, d, rp::lor_layout::sorted_events(),
                     listmode_events, true, p)
                  .slabs,
              d == direction::forward ? 6 : 1); // sorted back: lock-step, one pass
    EXPECT_EQ(choose(operation_kind::tof_sinogram, d, {}, 1000, true, p).slabs, 1);
    EXPECT_EQ(choose(operation_kind::non_tof, d, {}, 1000, true, p).slabs, 1);
  }

  const auto throws_naming = [](const gpu::tuning &bad, const std::string &name) {
    try {
      (void)gpu::choose_kernel(operation_kind::non_tof, direction::forward, {}, 100, true,
                               132, bad);
    } catch (const rp::invalid_argument &e) {
      return std::string(e.what()).find(name) != std::string::npos;
    }
    return false;
  };
  gpu::tuning b1;
  b1.block_size = 100;
  EXPECT_TRUE(throws_naming(b1, "tuning.block_size"));
  gpu::tuning b2;
  b2.threads_per_lor = 3;
  EXPECT_TRUE(throws_naming(b2, "tuning.threads_per_lor"));
  for (const int n : {-1, 65}) {
    gpu::tuning b3;
    b3.slabs = n;
    EXPECT_TRUE(throws_naming(b3, "tuning.slabs"));
  }
}

// Events in acquisition order on an image the L2 cannot hold run in slab
// passes (docs/kernel-choices.md, "Slab passes"): tb's image (157 MB)
// on a 50 MiB L2 takes 2 passes forward and 3 back with 8 lanes per event,
// the fastest measured; images the L2 holds, sorted events, calls that do
// not fill the GPU and other operations take one pass.
TEST(KernelChoice, SlabPassesForImagesLargerThanTheL2) {
  const std::size_t tb_image = std::size_t(240) * 240 * 682 * 4, l2 = 50u << 20;
  const std::size_t dmi_image = std::size_t(215) * 215 * 71 * 4;
  const auto lm = operation_kind::tof_listmode;
  auto with = [&](direction d, std::size_t image, rp::lor_layout l = {},
                  std::size_t n = listmode_events, const gpu::tuning &t = {}) {
    return gpu::choose_kernel(lm, d, l, n, true, h200_multiprocessors, t, image, l2);
  };
  const auto fwd = with(direction::forward, tb_image);
  EXPECT_EQ(fwd.slabs, 2);
  EXPECT_EQ(fwd.threads_per_lor, 2);
  const auto back = with(direction::back, tb_image);
  EXPECT_EQ(back.slabs, 3);
  EXPECT_EQ(back.threads_per_lor, 8);
  EXPECT_TRUE(back.vector_atomics);
  for (const auto d : {direction::forward, direction::back}) {
    SCOPED_TRACE(d == direction::forward ? "forward" : "back");
    EXPECT_EQ(with(d, dmi_image).slabs, 1);
    EXPECT_EQ(with(d, 2 * l2 - 4).slabs, 1);
    EXPECT_EQ(with(d, 2 * l2).slabs, d == direction::forward ? 1 : 2);
    EXPECT_EQ(with(d, tb_image, rp::lor_layout::sorted_events()).slabs, 1);
    EXPECT_EQ(with(d, tb_image, {}, 1000).slabs, 1);
    EXPECT_EQ(gpu::choose_kernel(lm, d, {}, listmode_events, true, h200_multiprocessors,
                                 {}, tb_image, 0)
                  .slabs,
              1); // L2 unknown
    EXPECT_EQ(gpu::choose_kernel(operation_kind::tof_sinogram, d, {}, listmode_events,
                                 true, h200_multiprocessors, {}, tb_image, l2)
                  .slabs,
              1);
    EXPECT_EQ(with(d, std::size_t(1) << 40).slabs, 64);
    // Overrides win: a pass count, or lanes (which keep the passes).
    gpu::tuning one;
    one.slabs = 1;
    EXPECT_EQ(with(d, tb_image, {}, listmode_events, one).slabs, 1);
    EXPECT_EQ(with(d, tb_image, {}, listmode_events, one).threads_per_lor, 2);
    gpu::tuning lanes;
    lanes.threads_per_lor = 4;
    EXPECT_EQ(with(d, tb_image, {}, listmode_events, lanes).threads_per_lor, 4);
  }
}

TEST(LorLayout, SourcesCarryTheirLayout) {
  EXPECT_EQ(rp::lor_layout{}.planes_in(1000), 0u);
  const auto sino = rp::lor_layout::sinogram(8, radial);
  EXPECT_EQ(sino.planes_in(8 * radial * 3), 3u);
  EXPECT_EQ(sino.planes_in(8 * radial), 0u); // one plane: nothing to spread
  EXPECT_EQ(sino.planes_in(8 * radial * 3 + 1), 0u);

  std::vector<float> starts(30), ends(30);
  const rp::lor_view<const float> plain(starts.data(), ends.data(), 10);
  EXPECT_EQ(plain.layout, rp::lor_layout{});
  const auto declared = plain.with_layout(sino);
  EXPECT_EQ(declared.layout, sino);
  EXPECT_EQ(declared.subview(2, 5).layout, sino);
  EXPECT_EQ(declared.normalized().layout, sino);

  const auto layout = rp::scanner::dmi_sinogram();
  const auto scanner = rp::scanner::dmi();
  const auto table = scanner.detector_centres();
  const auto subset = rp::scanner::subset_views(layout, 0, rp::scanner::dmi_num_subsets);
  const std::vector<std::int32_t> views(subset.begin(), subset.end());
  const auto plane_rings = layout.plane_table();
  const auto src = rp::scanner::make_sinogram_source<float>(
      table.data(), table.size() / 3, layout.geometry(plane_rings.data()), views.data(),
      int(views.size()), 0, layout.num_planes());
  EXPECT_EQ(src.layout, rp::lor_layout::sinogram(views.size(), radial));
  EXPECT_EQ(src.layout.planes_in(src.count), planes);
  EXPECT_EQ(src.subview(0, 8 * radial * 301).layout.planes_in(8 * radial * 301), 301u);
}

} // namespace
