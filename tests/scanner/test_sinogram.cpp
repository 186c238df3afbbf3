// Tests of sinogram descriptions: bin <-> detector pair maps (both ways),
// the device-usable sinogram_geometry and sinogram_lookup_view (exercised on
// the host), maximum ring difference, subsets and chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/expect.hpp"
#include "resproj/scanner/dmi.hpp"

namespace rs = resproj::scanner;

namespace {

using resproj_test::expect_invalid;

// Checks bin (p, v, r): layout and geometry give the same detector pair,
// and the lookup maps it (and its reverse) back to the bin.
void check_round_trip(const rs::sinogram_layout &l, const rs::sinogram_geometry &g,
                      const rs::sinogram_lookup &lk, int p, int v, int r) {
  const auto d = l.detector_pair(p, v, r);
  int da, db;
  g.detector_pair(p, v, r, da, db);
  ASSERT_EQ(da, d.first);
  ASSERT_EQ(db, d.second);
  const auto c = l.crystal_pair(v, r);
  const auto rings = l.planes[std::size_t(p)];
  ASSERT_EQ(d.first, rings.first * l.crystals_per_ring + c.first);
  ASSERT_EQ(d.second, rings.second * l.crystals_per_ring + c.second);
  const auto f = lk.find(da, db);
  ASSERT_TRUE(f.has_value()) << p << " " << v << " " << r;
  EXPECT_EQ(f->plane, p);
  EXPECT_EQ(f->view, v);
  EXPECT_EQ(f->radial, r);
  EXPECT_FALSE(f->swapped);
  EXPECT_EQ(lk.view().bin_index(p, v, r), l.bin_index(p, v, r));
  // The reversed pair is the same LOR: the same bin, flagged as swapped.
  const auto b = lk.find(db, da);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->plane, p);
  EXPECT_EQ(b->view, v);
  EXPECT_EQ(b->radial, r);
  EXPECT_TRUE(b->swapped);
  int pp, vv, rr;
  g.bin_coordinates(g.bin_index(p, v, r), pp, vv, rr);
  ASSERT_EQ(pp, p);
  ASSERT_EQ(vv, v);
  ASSERT_EQ(rr, r);
  ASSERT_EQ(g.bin_index(p, v, r), l.bin_index(p, v, r));
}

} // namespace

TEST(SinogramMaps, EveryBinOfSmallScannerRoundTrips) {
  const auto s = rs::small_test_scanner();
  for (int trim : {2, 5, 20})
    for (int max_d : {-1, 0, 2}) {
      const auto l = rs::span1_sinogram(s, trim, max_d);
      const auto table = l.plane_table();
      const auto g = l.geometry(table.data());
      const rs::sinogram_lookup lk(l);
      ASSERT_EQ(g.num_bins(), l.num_bins());
      for (int p = 0; p < l.num_planes(); ++p)
        for (int v = 0; v < l.num_views; ++v)
          for (int r = 0; r < l.num_radial; ++r)
            check_round_trip(l, g, lk, p, v, r);
      // Exactly the ordered detector pairs of the bins (both orientations)
      // are found; every other pair is "not in this sinogram".
      const int nd = int(s.num_crystals());
      std::int64_t found = 0;
      for (int a = 0; a < nd; ++a)
        for (int b = 0; b < nd; ++b) {
          const auto f = lk.find(a, b);
          if (!f)
            continue;
          ++found;
          const auto d = l.detector_pair(f->plane, f->view, f->radial);
          ASSERT_EQ(f->swapped ? std::make_pair(d.second, d.first) : d,
                    std::make_pair(a, b));
        }
      EXPECT_EQ(found, 2 * l.num_bins()) << "trim " << trim << " max_d " << max_d;
    }
}

TEST(SinogramMaps, UntrimmedLookupFindsAnEquivalentBin) {
  // With radial_trim < 2 a few bins share a crystal pair (and one per view
  // is degenerate); the lookup still returns a bin joining the same pair.
  const auto s = rs::small_test_scanner();
  const auto l = rs::span1_sinogram(s, 0);
  const rs::sinogram_lookup lk(l);
  for (int p = 0; p < l.num_planes(); ++p)
    for (int v = 0; v < l.num_views; ++v)
      for (int r = 0; r < l.num_radial; ++r) {
        const auto d = l.detector_pair(p, v, r);
        const auto f = lk.find(d.first, d.second);
        ASSERT_TRUE(f.has_value());
        const auto e = l.detector_pair(f->plane, f->view, f->radial);
        ASSERT_EQ(f->swapped ? std::make_pair(e.second, e.first) : e, d);
      }
}

TEST(SinogramMaps, DmiRandomSampleRoundTrips) {
  const auto l = rs::dmi_sinogram();
  const auto table = l.plane_table();
  const auto g = l.geometry(table.data());
  const rs::sinogram_lookup lk(l);
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int64_t> bin(0, l.num_bins() - 1);
  for (int i = 0; i < 20000; ++i) {
    int p, v, r;
    g.bin_coordinates(bin(rng), p, v, r);
    check_round_trip(l, g, lk, p, v, r);
    if (::testing::Test::HasFatalFailure())
      return;
  }
  // The last bin, and pairs outside the sinogram.
  check_round_trip(l, g, lk, 1295, 271, 414);
  EXPECT_FALSE(lk.find(0, 543).has_value()); // view 0, k = 0: trimmed
  EXPECT_FALSE(lk.find(0, 1).has_value());   // neighbours: trimmed
  EXPECT_FALSE(lk.find(0, 0).has_value());   // same crystal
  EXPECT_FALSE(lk.find(-1, 5).has_value());
  EXPECT_FALSE(lk.find(5, 544 * 36).has_value());
}

TEST(SinogramMaps, DmiCountsAndSpecExample) {
  const auto l = rs::dmi_sinogram();
  const auto table = l.plane_table();
  ASSERT_EQ(table.size(), 2u * 1296u);
  const auto g = l.geometry(table.data());
  EXPECT_EQ(g.num_bins(), std::int64_t(146292480));
  EXPECT_EQ(g.num_views, 272);
  EXPECT_EQ(g.num_radial, 415);
  EXPECT_EQ(g.num_planes, 1296);
  EXPECT_EQ(g.num_rings, 36);
  EXPECT_EQ(rs::subset_bin_count(l, rs::subset_views(l, 0, 34).size()),
            std::int64_t(4302720));
  EXPECT_EQ(rs::subset_bin_count(l, 272), std::int64_t(146292480));
  const std::pair<int, int> expect[] = {{32, 510}, {33, 510}, {33, 509}, {34, 509}};
  for (int r = 0; r < 4; ++r) {
    int a, b;
    g.crystal_pair(0, r, a, b);
    EXPECT_EQ(std::make_pair(a, b), expect[r]);
    // Plane 36 is rings (0, 1): detectors (c_a, 544 + c_b).
    int da, db;
    g.detector_pair(36, 0, r, da, db);
    EXPECT_EQ(da, expect[r].first);
    EXPECT_EQ(db, 544 + expect[r].second);
    const auto f = rs::sinogram_lookup(l).find(expect[r].first, 544 + expect[r].second);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->plane, 36);
    EXPECT_EQ(f->view, 0);
    EXPECT_EQ(f->radial, r);
  }
  int ra, rb;
  g.ring_pair(1295, ra, rb);
  EXPECT_EQ(std::make_pair(ra, rb), std::make_pair(35, 0));
}

TEST(SinogramMaps, GeometryMatchesSinogramLors) {
  const auto s = rs::small_test_scanner();
  const auto l = rs::span1_sinogram(s, 4);
  const auto table = l.plane_table();
  const auto g = l.geometry(table.data());
  const auto centres = s.detector_centres();
  std::vector<int> views(std::size_t(l.num_views));
  for (int v = 0; v < l.num_views; ++v)
    views[std::size_t(v)] = v;
  std::vector<float> st, en;
  rs::sinogram_lors(s, l, views, st, en);
  ASSERT_EQ(st.size(), 3 * std::size_t(g.num_bins()));
  for (std::int64_t i = 0; i < g.num_bins(); ++i) {
    int p, v, r, da, db;
    g.bin_coordinates(i, p, v, r);
    g.detector_pair(p, v, r, da, db);
    for (std::size_t k = 0; k < 3; ++k) {
      ASSERT_EQ(st[3 * std::size_t(i) + k], centres[3 * std::size_t(da) + k]) << i;
      ASSERT_EQ(en[3 * std::size_t(i) + k], centres[3 * std::size_t(db) + k]) << i;
    }
  }
}

TEST(SinogramPlanes, MaxRingDifference) {
  const auto s = rs::dmi();
  const auto full = rs::dmi_sinogram();
  EXPECT_EQ(full.max_ring_difference, 35);
  for (int d : {0, 1, 5, 35}) {
    const auto l = rs::span1_sinogram(s, 65, d);
    int expected = 36;
    for (int k = 1; k <= d; ++k)
      expected += 2 * (36 - k);
    ASSERT_EQ(l.num_planes(), expected) << d;
    EXPECT_EQ(l.max_ring_difference, d);
    // Same order as the full sinogram, cut after difference d.
    for (int p = 0; p < l.num_planes(); ++p)
      ASSERT_EQ(l.planes[std::size_t(p)], full.planes[std::size_t(p)]);
  }
  const auto l1 = rs::span1_sinogram(s, 65, 1);
  const rs::sinogram_lookup lk(l1);
  const auto c = l1.crystal_pair(0, 0);
  EXPECT_TRUE(lk.find(544 * 3 + c.first, 544 * 4 + c.second).has_value());
  EXPECT_FALSE(lk.find(544 * 3 + c.first, 544 * 5 + c.second).has_value());
}

TEST(SinogramSubsets, PartitionTheSinogramExactly) {
  for (const auto &l :
       {rs::dmi_sinogram(), rs::span1_sinogram(rs::small_test_scanner(), 3)})
    for (int n : {1, 3, 7, 24, l.num_views}) {
      std::vector<int> count(std::size_t(l.num_views), 0);
      std::int64_t bins = 0;
      for (int s = 0; s < n; ++s) {
        const auto views = rs::subset_views(l, s, n);
        rs::check_views(l, views);
        for (int v : views) {
          ASSERT_EQ(v % n, s);
          ++count[std::size_t(v)];
        }
        bins += rs::subset_bin_count(l, views.size());
      }
      for (int c : count)
        ASSERT_EQ(c, 1) << "num_subsets " << n;
      EXPECT_EQ(bins, l.num_bins());
    }
}

TEST(SinogramSubsets, ChunksCoverAllPlanesOfTheirViews) {
  const auto l = rs::dmi_sinogram();
  const auto views = rs::subset_views(l, 0, 34); // 8 views
  const auto chunks = rs::view_chunks(l, views, 3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].views, (std::vector<int>{0, 34, 68}));
  EXPECT_EQ(chunks[1].views, (std::vector<int>{102, 136, 170}));
  EXPECT_EQ(chunks[2].views, (std::vector<int>{204, 238}));
  std::vector<int> joined;
  std::int64_t bins = 0;
  for (const auto &c : chunks) {
    EXPECT_EQ(c.first_plane, 0);
    EXPECT_EQ(c.num_planes, l.num_planes());
    joined.insert(joined.end(), c.views.begin(), c.views.end());
    bins += rs::subset_bin_count(l, c.views.size());
  }
  EXPECT_EQ(joined, views);
  EXPECT_EQ(bins, std::int64_t(4302720));
  // One view per chunk (STIR viewgrams) over every view.
  std::vector<int> all(272);
  for (int v = 0; v < 272; ++v)
    all[std::size_t(v)] = v;
  const auto single = rs::view_chunks(l, all, 1);
  ASSERT_EQ(single.size(), 272u);
  EXPECT_EQ(single[17].views, std::vector<int>{17});
  // A chunk's LORs are the corresponding slice of the subset's LORs.
  const auto s = rs::small_test_scanner();
  const auto ls = rs::span1_sinogram(s, 3);
  const auto cs = rs::view_chunks(ls, {2, 9}, 1);
  std::vector<float> a, b, a2, b2;
  rs::sinogram_lors(s, ls, cs[1].views, cs[1].first_plane, cs[1].num_planes, a, b);
  rs::sinogram_lors(s, ls, {9}, a2, b2);
  EXPECT_EQ(a, a2);
  EXPECT_EQ(b, b2);
}

TEST(SinogramValidation, RejectsBadInput) {
  const auto s = rs::dmi();
  const auto l = rs::dmi_sinogram();
  expect_invalid([&] { rs::span1_sinogram(s, 65, 36); }, "max_ring_difference");
  expect_invalid([&] { rs::span1_sinogram(s, 65, -2); }, "max_ring_difference");
  expect_invalid([&] { l.detector_pair(1296, 0, 0); }, "plane");
  expect_invalid([&] { l.detector_pair(-1, 0, 0); }, "plane");
  expect_invalid([&] { l.detector_pair(0, 272, 0); }, "view");
  expect_invalid([&] { l.detector_pair(0, 0, 415); }, "radial");
  expect_invalid([&] { l.bin_index(0, 0, -1); }, "radial");
  expect_invalid([&] { l.geometry(nullptr); }, "plane_rings");
  expect_invalid([&] { rs::check_views(l, {0, 272}); }, "views[1]");
  expect_invalid([&] { rs::check_views(l, {5, 3, 5}); }, "views[2]");
  expect_invalid([&] { rs::view_chunks(l, {0, 1}, 0); }, "views_per_chunk");
  expect_invalid([&] { rs::view_chunks(l, {-1}, 1); }, "views[0]");
  rs::sinogram_layout bad = l;
  bad.num_radial = 7;
  expect_invalid([&] { rs::sinogram_lookup{bad}; }, "layout");
}
