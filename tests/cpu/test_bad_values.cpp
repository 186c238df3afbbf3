// Values inside otherwise well-formed arguments (docs/projection.md):
// - LORs with a non-finite end-point coordinate (NaN, +-inf) project to
//   exactly 0 and back-project nothing, for every operation and LOR source;
// - per-LOR TOF sigmas / centre offsets that are not finite (sigmas also
//   <= 0), image geometries not representable in the call's value type, and
//   detector indices outside the table are rejected with
//   resproj::invalid_argument naming the argument (and the first bad
//   element), before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/expect.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/scanner/listmode.hpp"

namespace rp = resproj;
namespace rt = resproj_test;
namespace cpu = resproj::cpu;
namespace op = resproj::op;

namespace {

template <class T> class BadValues : public ::testing::Test {
protected:
  rt::grid g = rt::grid::centred({8, 7, 6}, {2.0, 1.0, 3.0});
  std::vector<T> image = rt::random_values<T>(std::size_t(g.num_voxels()), 10, 0.5, 1.5);
  static constexpr T sentinel() { return T(-7.25); }

  static rp::tof_params<T> tof() {
    rp::tof_params<T> t;
    t.bin_width = T(5);
    t.num_bins = 7;
    t.sigma = T(10);
    t.num_sigmas = T(3);
    return t;
  }
};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BadValues, value_types);

using resproj_test::bitwise_equal;
using resproj_test::throws_naming;

/// LORs through the image along each principal axis, and copies of them
/// with one end-point coordinate (or more) replaced by NaN, +inf or -inf.
template <class T> struct mixed_lors {
  rt::lor_set<T> valid, bad, mixed;
  std::vector<bool> is_bad; ///< per LOR of `mixed`

  mixed_lors() {
    const double bases[][6] = {
        {-40, -1.3, 2.1, 40, 0.7, -1.9}, // axis 0
        {1.1, -30, -2.2, -0.6, 30, 3.4}, // axis 1
        {-2.5, 0.9, -40, 3.1, -1.2, 40}, // axis 2
        {-20, -18, -15, 21, 17, 16},     // oblique
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const auto &b : bases) {
      valid.push(b, b + 3);
      add(b, false);
      for (double v : {nan, inf, -inf}) {
        for (int c = 0; c < 6; ++c) { // one coordinate of either end
          double e[6];
          std::copy(b, b + 6, e);
          e[c] = v;
          push_bad(e);
        }
        for (int k = 0; k < 3; ++k) { // both ends on the same axis
          double e[6];
          std::copy(b, b + 6, e);
          e[k] = e[k + 3] = v;
          push_bad(e);
        }
        const double all[6] = {v, v, v, v, v, v};
        push_bad(all);
      }
    }
  }
  void push_bad(const double e[6]) {
    bad.push(e, e + 3);
    add(e, true);
  }
  void add(const double e[6], bool b) {
    mixed.push(e, e + 3);
    is_bad.push_back(b);
  }
};

// Non-finite end points: exactly 0 for every value of the LOR, nothing
// back-projected; the finite LORs of the same call are unaffected, bit for
// bit.
TYPED_TEST(BadValues, NonFiniteEndPointsContributeNothing) {
  using T = TypeParam;
  const auto &g = this->g;
  const mixed_lors<T> m;
  const std::size_t n = m.mixed.size(), nb = m.bad.size(), nv = m.valid.size();
  ASSERT_GT(nb, 100u);
  const auto image = rt::cimage_of(this->image, g);
  const auto tof = this->tof();
  const std::size_t N = std::size_t(tof.num_bins);
  const cpu::options serial{cpu::back_accumulation::atomic, 1};

  // Forward: every bad LOR gives exactly +0, the valid ones what they give
  // alone (the valid LORs are at the positions where is_bad is false).
  auto check_forward = [&](const auto &o, std::size_t per_lor, const char *what) {
    SCOPED_TRACE(what);
    std::vector<T> out(n * per_lor, this->sentinel()), alone(nv * per_lor);
    cpu::forward(o.first, image, rt::view_of(m.mixed), rt::span_of(out));
    cpu::forward(o.second, image, rt::view_of(m.valid), rt::span_of(alone));
    std::size_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < per_lor; ++j) {
        const T x = out[i * per_lor + j];
        if (m.is_bad[i]) {
          EXPECT_TRUE(x == T(0) && !std::signbit(x))
              << "LOR " << i << " value " << j << " is " << x << ", expected 0";
        } else {
          EXPECT_EQ(std::memcmp(&x, &alone[v * per_lor + j], sizeof(T)), 0)
              << "valid LOR " << i << " changed";
        }
        if (!m.is_bad[i] && j + 1 == per_lor)
          ++v;
      }
    double sum = 0;
    for (T x : alone)
      sum += double(x);
    EXPECT_GT(sum, 0.0);
  };
  std::vector<std::int16_t> bins_mixed(n, 3), bins_valid(nv, 3);
  check_forward(std::make_pair(op::non_tof{}, op::non_tof{}), 1, "non-TOF");
  check_forward(std::make_pair(op::tof_sinogram{tof}, op::tof_sinogram{tof}), N,
                "TOF sinogram");
  check_forward(std::make_pair(op::tof_listmode{tof, rt::cspan_of(bins_mixed)},
                               op::tof_listmode{tof, rt::cspan_of(bins_valid)}),
                1, "TOF list-mode");

  // Back: the bad LORs alone leave the image bitwise unchanged; with the
  // valid ones, the result is that of the valid ones alone.
  auto check_back = [&](const auto &o_bad, const auto &o_mixed, const auto &o_valid,
                        std::size_t per_lor, const char *what) {
    SCOPED_TRACE(what);
    const std::vector<T> ones(n * per_lor, T(1));
    for (auto acc :
         {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images}) {
      std::vector<T> img = this->image;
      cpu::back(o_bad, rt::image_of(img, g), rt::view_of(m.bad),
                rp::span<const T>(ones.data(), nb * per_lor), cpu::options{acc, 2});
      EXPECT_TRUE(bitwise_equal(img, this->image)) << "bad LORs changed the image";
    }
    std::vector<T> with(this->image.size(), T(0)), without = with;
    cpu::back(o_mixed, rt::image_of(with, g), rt::view_of(m.mixed),
              rp::span<const T>(ones.data(), n * per_lor), serial);
    cpu::back(o_valid, rt::image_of(without, g), rt::view_of(m.valid),
              rp::span<const T>(ones.data(), nv * per_lor), serial);
    EXPECT_TRUE(bitwise_equal(with, without)) << "bad LORs changed the back projection";
  };
  std::vector<std::int16_t> bins_bad(nb, 3);
  check_back(op::non_tof{}, op::non_tof{}, op::non_tof{}, 1, "non-TOF");
  check_back(op::tof_sinogram{tof}, op::tof_sinogram{tof}, op::tof_sinogram{tof}, N,
             "TOF sinogram");
  check_back(op::tof_listmode{tof, rt::cspan_of(bins_bad)},
             op::tof_listmode{tof, rt::cspan_of(bins_mixed)},
             op::tof_listmode{tof, rt::cspan_of(bins_valid)}, 1, "TOF list-mode");
}

// The same through a detector table with non-finite entries.
TYPED_TEST(BadValues, NonFiniteDetectorsContributeNothing) {
  using T = TypeParam;
  const auto &g = this->g;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> table = {-40, -1, 2, 40, 1, -2, nan, 0, 0, 0, inf, 0, 0, 0, -inf};
  const std::vector<std::int32_t> pairs = {0, 2, 3, 1, 0, 3, 4, 1, 2, 4};
  const std::size_t n = pairs.size() / 2;
  const rp::detector_pairs<T> lors(table.data(), table.size() / 3, pairs.data(), n);
  std::vector<T> out(n, this->sentinel());
  cpu::forward(op::non_tof{}, rt::cimage_of(this->image, g), lors, rt::span_of(out));
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_TRUE(out[i] == T(0) && !std::signbit(out[i])) << "LOR " << i << ": " << out[i];
  std::vector<T> img = this->image;
  const std::vector<T> ones(n, T(1));
  cpu::back(op::non_tof{}, rt::image_of(img, g), lors, rt::cspan_of(ones));
  EXPECT_TRUE(bitwise_equal(img, this->image));
}

// Per-LOR TOF arrays on the CPU: every element the call uses is checked
// (sigma finite and > 0, offset finite) for both TOF operations, forward
// and back, and the first bad element is named.
TYPED_TEST(BadValues, PerLorTofValuesAreChecked) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto lors = rt::outside_lors<T>(g, 40, 3);
  const std::size_t n = lors.size(), N = 7;
  const auto view = rt::view_of(lors);
  const auto image = rt::cimage_of(this->image, g);
  const std::vector<std::int16_t> bins(n, 3);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> untouched_out(n * N, this->sentinel());
  const std::vector<T> untouched_img(this->image.size(), this->sentinel());
  const std::vector<T> values(n * N, T(1));

  auto expect = [&](const rp::tof_params<T> &tof, const std::string &name,
                    const std::string &index) {
    std::vector<T> out = untouched_out, img = untouched_img;
    const auto target = rt::image_of(img, g);
    const op::tof_sinogram<T> sino{tof};
    const op::tof_listmode<T> lm{tof, rt::cspan_of(bins)};
    EXPECT_TRUE(throws_naming([&] { cpu::forward(sino, image, view, rt::span_of(out)); },
                              name, {index}));
    EXPECT_TRUE(
        throws_naming([&] { cpu::forward(lm, image, view, rp::span<T>(out.data(), n)); },
                      name, {index}));
    EXPECT_TRUE(throws_naming(
        [&] { cpu::back(sino, target, view, rt::cspan_of(values)); }, name, {index}));
    EXPECT_TRUE(throws_naming(
        [&] { cpu::back(lm, target, view, rp::span<const T>(values.data(), n)); }, name,
        {index}));
    EXPECT_TRUE(bitwise_equal(out, untouched_out)) << "a rejected call wrote to out";
    EXPECT_TRUE(bitwise_equal(img, untouched_img)) << "a rejected call wrote the image";
  };

  std::vector<T> sigmas(n + 4, T(9)), offsets(n + 4, T(1.5));
  for (T bad : {T(0), T(-2), -T(0), nan, inf, -inf}) {
    SCOPED_TRACE("sigma " + std::to_string(double(bad)));
    auto s = sigmas;
    s[17] = bad;
    s[23] = bad;
    auto tof = this->tof();
    tof.sigmas = rp::span<const T>(s.data(), n);
    expect(tof, "tof.sigmas", "17");
  }
  for (T bad : {nan, inf, -inf}) {
    SCOPED_TRACE("offset " + std::to_string(double(bad)));
    auto o = offsets;
    o[29] = bad;
    auto tof = this->tof();
    tof.center_offsets = rp::span<const T>(o.data(), n);
    tof.sigmas = rp::span<const T>(sigmas.data(), n);
    expect(tof, "tof.center_offsets", "29");
  }

  // Elements past the call's LORs are not read; valid arrays project.
  auto s = sigmas;
  auto o = offsets;
  s[n] = nan;
  o[n + 1] = inf;
  auto tof = this->tof();
  tof.sigmas = rp::span<const T>(s.data(), s.size());
  tof.center_offsets = rp::span<const T>(o.data(), o.size());
  std::vector<T> out(n * N);
  EXPECT_NO_THROW(cpu::forward(op::tof_sinogram{tof}, image, view, rt::span_of(out)));
  std::vector<T> img(this->image.size(), T(0));
  EXPECT_NO_THROW(cpu::back(op::tof_listmode{tof, rt::cspan_of(bins)},
                            rt::image_of(img, g), view,
                            rp::span<const T>(values.data(), n)));
}

/// A geometry and the component a call in float must name.
struct geometry_case {
  std::array<std::int64_t, 3> shape;
  std::array<double, 3> voxel_size, origin;
  std::string component; ///< as named by a float call
  bool double_ok;        ///< representable in double
};

const geometry_case geometry_cases[] = {
    {{4, 3, 2}, {1e300, 1, 1}, {0, 0, 0}, "image.geometry.voxel_size[0]", true},
    {{4, 3, 2}, {1, 1e-50, 1}, {0, 0, 0}, "image.geometry.voxel_size[1]", true},
    {{4, 3, 2}, {1, 1, 1e-40}, {0, 0, 0}, "image.geometry.voxel_size[2]", true},
    {{4, 3, 2}, {1, 1, 1e-310}, {0, 0, 0}, "image.geometry.voxel_size[2]", false},
    {{4, 3, 2}, {1, 1, 1}, {0, 3.5e38, 0}, "image.geometry.origin[1]", true},
    {{4, 3, 2}, {1, 1, 1}, {0, 0, -1e39}, "image.geometry.origin[2]", true},
    {{8, 3, 2}, {1e37, 1, 1}, {3.3e38, 0, 0}, "image.geometry.box_max[0]", true},
    {{8, 3, 2}, {1, 1, 1e37}, {0, 0, -3.39e38}, "image.geometry.box_min[2]", true},
    {{4, 3, 2}, {1e308, 1, 1}, {1.2e308, 0, 0}, "image.geometry.voxel_size[0]", false},
};

/// Forward and back projections in T over `geometry` (one LOR).
template <class T> void project_in(const rp::image_geometry &geometry) {
  std::vector<T> img(std::size_t(geometry.num_voxels()), T(1));
  const std::vector<T> a = {T(0.1), T(0.2), T(0.3)}, b = {T(0.4), T(0.5), T(0.6)};
  const rp::lor_view<const T> lors(a.data(), b.data(), 1);
  std::vector<T> out(1, T(-1));
  cpu::forward(op::non_tof{}, rp::image_view<const T>(img.data(), geometry), lors,
               rp::span<T>(out.data(), 1));
  cpu::back(op::non_tof{}, rp::image_view<T>(img.data(), geometry), lors,
            rp::span<const T>(out.data(), 1));
}

// An image geometry valid in double but not representable in float is
// rejected by float calls (naming the component) before anything is
// written, and accepted by double calls where double holds it.
TEST(BadValuesGeometry, MustBeRepresentableInTheValueType) {
  for (const auto &c : geometry_cases) {
    SCOPED_TRACE(c.component);
    const rp::image_geometry geometry(c.shape, c.voxel_size, c.origin);
    std::vector<float> img(std::size_t(geometry.num_voxels()), -7.25f);
    const auto untouched = img;
    const std::vector<float> a = {0.1f, 0.2f, 0.3f}, b = {0.4f, 0.5f, 0.6f};
    const rp::lor_view<const float> lors(a.data(), b.data(), 1);
    std::vector<float> out(1, -7.25f);
    const std::vector<float> values(1, 1.f);
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::forward(op::non_tof{}, rp::image_view<const float>(img.data(), geometry),
                       lors, rp::span<float>(out.data(), 1));
        },
        c.component));
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, rp::image_view<float>(img.data(), geometry), lors,
                    rp::span<const float>(values.data(), 1));
        },
        c.component));
    EXPECT_EQ(out[0], -7.25f);
    EXPECT_TRUE(bitwise_equal(img, untouched));
    if (c.double_ok)
      EXPECT_NO_THROW(project_in<double>(geometry));
    else
      EXPECT_THROW(project_in<double>(geometry), rp::invalid_argument);
  }
  // A box edge beyond double's range.
  const rp::image_geometry huge({4, 3, 2}, {1e308, 1, 1}, {1e308, 0, 0});
  EXPECT_TRUE(
      throws_naming([&] { project_in<double>(huge); }, "image.geometry.box_max[0]"));
  // Ordinary geometries are fine in both.
  const auto ordinary = rp::image_geometry::centred({8, 7, 6}, {2.0, 1.0, 3.0});
  EXPECT_NO_THROW(project_in<float>(ordinary));
  EXPECT_NO_THROW(project_in<double>(ordinary));
}

// Detector indices are checked against the table on the CPU: the first bad
// event is named, nothing is written. (The table below is longer than the
// declared count, so an unchecked index would read valid memory.)
TYPED_TEST(BadValues, DetectorIndicesAreChecked) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto image = rt::cimage_of(this->image, g);
  std::vector<T> storage;
  for (int d = 0; d < 16; ++d) {
    const double phi = 0.7 * d;
    storage.push_back(T(40 * std::cos(phi)));
    storage.push_back(T(40 * std::sin(phi)));
    storage.push_back(T(d % 3 - 1));
  }
  const T *table = storage.data() + 3 * 2; // detectors 0..7 of the table
  const std::size_t num_detectors = 8;
  std::vector<std::int32_t> pairs;
  for (int i = 0; i < 12; ++i) {
    pairs.push_back(i % 8);
    pairs.push_back((i * 5 + 3) % 8);
  }
  const std::size_t n = pairs.size() / 2;
  const std::vector<T> untouched_out(n, this->sentinel());
  const std::vector<T> untouched_img(this->image.size(), this->sentinel());
  const std::vector<T> values(n, T(1));
  const std::vector<std::int16_t> bins(n, 3);
  const auto tof = this->tof();

  auto expect = [&](const auto &lors, const std::string &name, const std::string &event) {
    std::vector<T> out = untouched_out, img = untouched_img;
    const auto target = rt::image_of(img, g);
    bool ok =
        throws_naming([&] { cpu::forward(op::non_tof{}, image, lors, rt::span_of(out)); },
                      name, {event});
    EXPECT_TRUE(ok);
    if (ok) {
      EXPECT_TRUE(throws_naming(
          [&] {
            cpu::forward(op::tof_listmode{tof, rt::cspan_of(bins)}, image, lors,
                         rt::span_of(out));
          },
          name, {event}));
      EXPECT_TRUE(throws_naming(
          [&] { cpu::back(op::non_tof{}, target, lors, rt::cspan_of(values)); }, name,
          {event}));
    }
    EXPECT_TRUE(bitwise_equal(out, untouched_out)) << "a rejected call wrote to out";
    EXPECT_TRUE(bitwise_equal(img, untouched_img)) << "a rejected call wrote the image";
    return ok;
  };

  // Pairs: an index past the table (event 5), a negative one (event 7).
  {
    auto p = pairs;
    p[2 * 5 + 1] = 9;
    p[2 * 7] = -1;
    const rp::detector_pairs<T> lors(table, num_detectors, p.data(), n);
    ASSERT_TRUE(expect(lors, "lors.pairs", "event 5"));
    p[2 * 5 + 1] = 8;
    ASSERT_TRUE(expect(lors, "lors.pairs", "event 5"));
    p[2 * 5 + 1] = 7;
    ASSERT_TRUE(expect(lors, "lors.pairs", "event 7"));
    p[2 * 7] = std::numeric_limits<std::int32_t>::min();
    ASSERT_TRUE(expect(lors, "lors.pairs", "event 7"));
    p[2 * 7] = std::numeric_limits<std::int32_t>::max();
    ASSERT_TRUE(expect(lors, "lors.pairs", "event 7"));
  }
  // Records: the same, named "lors.events".
  std::vector<rp::scanner::listmode_event> events;
  for (std::size_t i = 0; i < n; ++i)
    events.push_back(rp::scanner::listmode_event::make(
        std::uint32_t(pairs[2 * i]), std::uint32_t(pairs[2 * i + 1]), 3));
  {
    auto e = events;
    e[3].set_detector_a(8);
    e[9].set_detector_b(10);
    const rp::scanner::listmode_records<T> lors(table, num_detectors, e.data(), n);
    ASSERT_TRUE(expect(lors, "lors.events", "event 3"));
    e[3].set_detector_a(0);
    ASSERT_TRUE(expect(lors, "lors.events", "event 9"));
    e[9].set_detector_b(0xffffffffu);
    ASSERT_TRUE(expect(lors, "lors.events", "event 9"));
  }

  // Valid indices (the last detector included) project as end points do.
  const rp::detector_pairs<T> good(table, num_detectors, pairs.data(), n);
  const rp::scanner::listmode_records<T> good_records(table, num_detectors, events.data(),
                                                      n);
  rt::lor_set<T> explicit_lors;
  for (std::size_t i = 0; i < n; ++i) {
    double a[3], b[3];
    for (int k = 0; k < 3; ++k) {
      a[k] = double(table[3 * pairs[2 * i] + k]);
      b[k] = double(table[3 * pairs[2 * i + 1] + k]);
    }
    explicit_lors.push(a, b);
  }
  std::vector<T> from_pairs(n), from_records(n), from_points(n);
  cpu::forward(op::non_tof{}, image, good, rt::span_of(from_pairs));
  cpu::forward(op::non_tof{}, image, good_records, rt::span_of(from_records));
  cpu::forward(op::non_tof{}, image, rt::view_of(explicit_lors),
               rt::span_of(from_points));
  EXPECT_EQ(from_pairs, from_points);
  EXPECT_EQ(from_records, from_points);
}

} // namespace
