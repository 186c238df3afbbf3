/// @file
/// @brief The projection contract of docs/projection.md as one GoogleTest
/// typed test suite, `Contract`, instantiated for every executor and
/// precision (test_contract_cpu.cpp, test_contract_gpu.cu,
/// test_contract_compiled.cpp).
///
/// The type parameter is an executor adapter `E` (executors_*.hpp): host
/// arrays in, host arrays out, whatever the executor needs in between.
///
///     struct E {
///       using value_type = T;                  // float or double
///       static constexpr bool supports_tof;    // the TOF operations are run
///       static constexpr bool ordered_sums;    // a LOR's sinogram and
///                                              // list-mode values are summed
///                                              // in one order (no atomics)
///       static std::string unavailable();      // why it cannot run, or ""
///       static std::string out_name();         // argument named for a too
///       static std::string values_name();      // small out / values
///       template <class Op> static void forward(const Op &, image_view<const T>,
///                                               lor_view<const T>, span<T>);
///       template <class Op> static void back(const Op &, image_view<T>,
///                                            lor_view<const T>, span<const T>);
///     };
///
/// The operation's per-LOR arrays (bins, TOF sigmas and centre offsets) are
/// host arrays; `back` adds into the host image (accumulates). A call that
/// throws leaves the executor's copy of the output (or image) in the host
/// array, so that "nothing written" is checked where the executor writes.
///
/// Each typed test runs one check, `check_<name>(executor<T>)`: the adapter
/// seen through function pointers, so that a check is compiled once per
/// precision however many executors a translation unit instantiates.
///
/// The checks, for `op::non_tof`, `op::tof_sinogram` and
/// `op::tof_listmode`: adjointness, analytic chord lengths on a uniform
/// image, agreement with the float64 references (common/reference.hpp,
/// common/tof_reference.hpp) within the bounds of "Accuracy", list-mode ==
/// TOF sinogram at the same bin, TOF bins summing to the non-TOF value, and
/// a too small output or values rejected before anything is written.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/compare.hpp"
#include "common/expect.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/reference.hpp"
#include "common/tof_reference.hpp"
#include "common/tof_setup.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"

namespace resproj_contract {

namespace rt = resproj_test;
namespace rp = resproj;
namespace op = resproj::op;
using vec3 = std::array<double, 3>;

template <class T> constexpr bool is_float() { return std::is_same<T, float>::value; }

// ------------------------------------------------------------- calls --

/// Runs `call()`, then `finish()` also when `call` throws (then rethrows):
/// executors copy their output back either way.
template <class Call, class Finish> void call_then(Call &&call, Finish &&finish) {
  try {
    call();
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

/// An executor adapter seen through function pointers (see the file
/// comment). The TOF entries are null unless `supports_tof`.
template <class T> struct executor {
  template <class Op>
  using forward_fn = void (*)(const Op &, rp::image_view<const T>, rp::lor_view<const T>,
                              rp::span<T>);
  template <class Op>
  using back_fn = void (*)(const Op &, rp::image_view<T>, rp::lor_view<const T>,
                           rp::span<const T>);

  bool supports_tof = false;
  bool ordered_sums = false;
  std::string out_name, values_name;
  forward_fn<op::non_tof> forward_non_tof = nullptr;
  back_fn<op::non_tof> back_non_tof = nullptr;
  forward_fn<op::tof_sinogram<T>> forward_sinogram = nullptr;
  back_fn<op::tof_sinogram<T>> back_sinogram = nullptr;
  forward_fn<op::tof_listmode<T>> forward_listmode = nullptr;
  back_fn<op::tof_listmode<T>> back_listmode = nullptr;

  void forward(const op::non_tof &o, rp::image_view<const T> image,
               rp::lor_view<const T> lors, rp::span<T> out) const {
    forward_non_tof(o, image, lors, out);
  }
  void forward(const op::tof_sinogram<T> &o, rp::image_view<const T> image,
               rp::lor_view<const T> lors, rp::span<T> out) const {
    forward_sinogram(o, image, lors, out);
  }
  void forward(const op::tof_listmode<T> &o, rp::image_view<const T> image,
               rp::lor_view<const T> lors, rp::span<T> out) const {
    forward_listmode(o, image, lors, out);
  }
  void back(const op::non_tof &o, rp::image_view<T> image, rp::lor_view<const T> lors,
            rp::span<const T> values) const {
    back_non_tof(o, image, lors, values);
  }
  void back(const op::tof_sinogram<T> &o, rp::image_view<T> image,
            rp::lor_view<const T> lors, rp::span<const T> values) const {
    back_sinogram(o, image, lors, values);
  }
  void back(const op::tof_listmode<T> &o, rp::image_view<T> image,
            rp::lor_view<const T> lors, rp::span<const T> values) const {
    back_listmode(o, image, lors, values);
  }
};

template <class E> executor<typename E::value_type> executor_of() {
  using T = typename E::value_type;
  executor<T> x;
  x.supports_tof = E::supports_tof;
  x.ordered_sums = E::ordered_sums;
  x.out_name = E::out_name();
  x.values_name = E::values_name();
  x.forward_non_tof = &E::template forward<op::non_tof>;
  x.back_non_tof = &E::template back<op::non_tof>;
  if constexpr (E::supports_tof) {
    x.forward_sinogram = &E::template forward<op::tof_sinogram<T>>;
    x.back_sinogram = &E::template back<op::tof_sinogram<T>>;
    x.forward_listmode = &E::template forward<op::tof_listmode<T>>;
    x.back_listmode = &E::template back<op::tof_listmode<T>>;
  }
  return x;
}

/// Forward projection; the output starts at -1, so outputs left unwritten
/// show.
template <class T, class Op>
std::vector<T> forward(const executor<T> &ex, const Op &o, const rt::grid &g,
                       const std::vector<T> &image, const rt::lor_set<T> &lors) {
  std::vector<T> out(lors.size() * o.values_per_lor(), T(-1));
  ex.forward(o, rt::cimage_of(image, g), rt::view_of(lors), rt::span_of(out));
  return out;
}

/// Back projection into a zero image.
template <class T, class Op>
std::vector<T> back(const executor<T> &ex, const Op &o, const rt::grid &g,
                    const rt::lor_set<T> &lors, const std::vector<T> &values) {
  std::vector<T> image(std::size_t(g.num_voxels()), T(0));
  ex.back(o, rt::image_of(image, g), rt::view_of(lors), rt::cspan_of(values));
  return image;
}

// --------------------------------------------------------- LOR sets --

enum class lor_kind { outside, anywhere, scanner, degenerate };

inline const char *name_of(lor_kind k) {
  switch (k) {
  case lor_kind::outside:
    return "outside";
  case lor_kind::anywhere:
    return "anywhere";
  case lor_kind::scanner:
    return "scanner";
  default:
    return "degenerate";
  }
}

struct named_grid {
  std::string name;
  rt::grid g;
};

// ------------------------------------------------------------- TOF --

using resproj_test::params_of;
using resproj_test::rounded;

using resproj_test::max_position;
using resproj_test::randomise_per_lor;

/// `n` bins uniform in [-outside, num_bins + outside).
inline std::vector<std::int16_t> random_bins(std::size_t n, int num_bins,
                                             std::uint64_t seed, int outside = 0) {
  rt::rng r(seed);
  std::vector<std::int16_t> b(n);
  for (auto &v : b)
    v = std::int16_t(int(r.below(std::uint64_t(num_bins + 2 * outside))) - outside);
  return b;
}

/// The grid of the TOF checks taken from the CPU TOF tests.
inline rt::grid tof_grid() { return rt::grid::centred({24, 20, 12}, {2.0, 2.5, 4.0}); }

/// A TOF problem: grid, LORs and parameters (with per-LOR arrays when the
/// setup has them).
template <class T> struct tof_problem {
  std::string name;
  rt::grid g;
  rt::lor_set<T> lors;
  rt::ref::tof_setup setup;
};

/// TOF problems for adjointness: per-LOR sigmas and offsets with 17 bins,
/// fine bins (windows of about 180 bins) with per-LOR arrays, and scalar
/// parameters with an offset on an image one voxel thick.
template <class T> std::vector<tof_problem<T>> tof_adjoint_problems() {
  std::vector<tof_problem<T>> p(3);
  p[0].name = "17 bins, per-LOR sigma and offset";
  p[0].g = tof_grid();
  p[0].lors = rt::outside_lors<T>(p[0].g, 10000, 51);
  p[0].lors.append(rt::anywhere_lors<T>(p[0].g, 10000, 52));
  p[0].setup.bin_width = 6;
  p[0].setup.num_bins = 17;
  p[0].setup.num_sigmas = 3;
  randomise_per_lor(p[0].setup, p[0].lors.size(), 54, 2, 25, 20);

  p[1].name = "240 fine bins, per-LOR sigma and offset";
  p[1].g = rt::grid::centred({20, 20, 20}, {2.0, 2.0, 2.0});
  p[1].lors = rt::outside_lors<T>(p[1].g, 1000, 58);
  p[1].lors.append(rt::anywhere_lors<T>(p[1].g, 1000, 59));
  p[1].setup.bin_width = 0.5;
  p[1].setup.num_bins = 240;
  p[1].setup.num_sigmas = 3;
  randomise_per_lor(p[1].setup, p[1].lors.size(), 60, 7.5, 22.5, 0.5);

  p[2].name = "5 bins, scalar sigma and offset, 1 x 40 x 40";
  p[2].g = rt::grid::centred({1, 40, 40}, {4.0, 1.0, 1.0});
  p[2].lors = rt::outside_lors<T>(p[2].g, 2000, 61);
  p[2].lors.append(rt::anywhere_lors<T>(p[2].g, 1000, 62));
  p[2].setup.bin_width = 10;
  p[2].setup.num_bins = 5;
  p[2].setup.sigma = 8;
  p[2].setup.center_offset = -2;
  p[2].setup.num_sigmas = 2;
  return p;
}

// -------------------------------------------------------- analytic --

/// Relative tolerance of an analytic value computed in T.
template <class T> double analytic_tol() { return is_float<T>() ? 2e-6 : 1e-13; }

/// 6 x 5 x 4 voxels of 2 x 1 x 4, box [-5,7] x [2,7] x [8,24] (off-centre).
inline rt::grid analytic_grid() {
  rt::grid g;
  g.shape = {6, 5, 4};
  g.voxel_size = {2.0, 1.0, 4.0};
  g.origin = {-4.0, 2.5, 10.0};
  return g;
}

/// World point of fractional voxel index (f0, f1, f2).
inline vec3 at(const rt::grid &g, double f0, double f1, double f2) {
  return {g.origin[0] + f0 * g.voxel_size[0], g.origin[1] + f1 * g.voxel_size[1],
          g.origin[2] + f2 * g.voxel_size[2]};
}

/// Point with fractional index f_d along d, f_u / f_v along the other two.
inline vec3 at_axis(const rt::grid &g, int d, double fd, double fu, double fv) {
  const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
  double f[3];
  f[d] = fd;
  f[u] = fu;
  f[v] = fv;
  return at(g, f[0], f[1], f[2]);
}

/// |b - a| / |b_d - a_d| of the LOR as the projector sees it (rounded to T).
template <class T> double inv_cos(const vec3 &a, const vec3 &b, int d) {
  double l2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double dk = double(T(b[std::size_t(k)])) - double(T(a[std::size_t(k)]));
    l2 += dk * dk;
  }
  return std::sqrt(l2) /
         std::fabs(double(T(b[std::size_t(d)])) - double(T(a[std::size_t(d)])));
}

/// LORs with the value each must project to through a uniform image of
/// value 1, projected in one call.
template <class T> struct analytic_cases {
  rt::lor_set<T> lors;
  std::vector<double> expected;
  std::vector<std::string> what;
  std::vector<double> tol; ///< relative

  void add(const vec3 &a, const vec3 &b, double value, const std::string &description,
           double rel_tol = analytic_tol<T>()) {
    lors.push(a, b);
    expected.push_back(value);
    what.push_back(description);
    tol.push_back(rel_tol);
  }
  /// a -> b and b -> a.
  void add_both(const vec3 &a, const vec3 &b, double value,
                const std::string &description) {
    add(a, b, value, description);
    add(b, a, value, description + ", reversed");
  }

  void check(const executor<T> &ex, const rt::grid &g) const {
    ASSERT_FALSE(lors.empty());
    const std::vector<T> ones(std::size_t(g.num_voxels()), T(1));
    const auto out = forward(ex, op::non_tof{}, g, ones, lors);
    for (std::size_t i = 0; i < lors.size(); ++i) {
      if (expected[i] == 0.0) {
        EXPECT_EQ(out[i], T(0)) << what[i];
      } else {
        EXPECT_NEAR(double(out[i]), expected[i], tol[i] * std::fabs(expected[i]))
            << what[i];
      }
    }
  }
};

inline std::string axis_case(const char *what, int d, double fu, double fv) {
  return std::string(what) + ", axis " + std::to_string(d) + " at lateral (" +
         std::to_string(fu) + ", " + std::to_string(fv) + ")";
}

// ----------------------------------------------------------- checks --

// <A x, y> == <x, A^T y> on random data (docs/projection.md "Back
// projection", "TOF back projections"), within bounds<T>::adjoint.
// Non-TOF: five grids (anisotropic, thin in one axis, off-centre, one
// voxel) and four kinds of LOR sets (both ends outside, ends anywhere, a
// small scanner, degenerate), and one call of 3e4 LORs. TOF sinogram and
// list-mode: per-LOR sigmas and offsets, fine bins (wide windows), scalar
// parameters; list-mode bins include bins outside [0, N - 1].
template <class T> void check_adjointness(const executor<T> &ex) {
  rt::grid off;
  off.shape = {11, 9, 13};
  off.voxel_size = {2.34, 1.7, 3.1};
  off.origin = {-9.3, 4.1, -20.7};
  const std::vector<named_grid> grids = {
      {"20x13x7 (2,1,4)", rt::grid::centred({20, 13, 7}, {2.0, 1.0, 4.0})},
      {"1x16x12 (3,2,2) thin in 0", rt::grid::centred({1, 16, 12}, {3.0, 2.0, 2.0})},
      {"15x15x1 (1,1,2.5) thin in 2",
       rt::grid::centred({15, 15, 1}, {1.0, 1.0, 2.5}, {2, 1, 0})},
      {"off-centre 11x9x13", off},
      {"1x1x1", rt::grid::centred({1, 1, 1}, {1.5, 2.0, 1.0})},
  };
  std::uint64_t seed = 0;
  for (const auto &ng : grids) {
    for (lor_kind kind : {lor_kind::outside, lor_kind::anywhere, lor_kind::scanner,
                          lor_kind::degenerate}) {
      for (int rep = 0; rep < 3; ++rep) {
        ++seed;
        const auto &g = ng.g;
        rt::lor_set<T> lors;
        if (kind == lor_kind::outside) {
          lors = rt::outside_lors<T>(g, 4000, seed);
        } else if (kind == lor_kind::anywhere) {
          lors = rt::anywhere_lors<T>(g, 4000, seed);
        } else if (kind == lor_kind::scanner) {
          rt::scanner_params p;
          p.detectors_per_ring = 32;
          p.rings = 4;
          lors = rt::scanner_lors<T>(g, p, 4000, seed);
        } else {
          lors = rt::degenerate_lors<T>(g);
        }
        const auto x = rt::random_values<T>(std::size_t(g.num_voxels()), 100 + seed);
        const auto y = rt::random_values<T>(lors.size(), 200 + seed);
        const auto ax = forward(ex, op::non_tof{}, g, x, lors);
        const auto aty = back(ex, op::non_tof{}, g, lors, y);
        const double lhs = rt::dot(ax, y), rhs = rt::dot(x, aty);
        ASSERT_GT(lhs, 0.0) << ng.name << ", " << name_of(kind)
                            << ": no LOR hits the image";
        EXPECT_LT(rt::adjoint_mismatch(lhs, rhs), rt::bounds<T>::adjoint)
            << "non-TOF, " << ng.name << ", " << name_of(kind) << " LORs, seed " << seed
            << ": <Ax,y> = " << lhs << ", <x,A^T y> = " << rhs;
        if (kind == lor_kind::degenerate)
          break; // one fixed set
      }
    }
  }
  {
    // One larger call (the GPU executors pick fewer lanes per LOR for it).
    const rt::grid g = rt::grid::centred({16, 24, 12}, {2.0, 1.0, 4.0});
    auto lors = rt::outside_lors<T>(g, 24000, 71);
    lors.append(rt::anywhere_lors<T>(g, 6000, 72));
    const auto x = rt::random_values<T>(std::size_t(g.num_voxels()), 73);
    const auto y = rt::random_values<T>(lors.size(), 74);
    const double lhs = rt::dot(forward(ex, op::non_tof{}, g, x, lors), y);
    const double rhs = rt::dot(x, back(ex, op::non_tof{}, g, lors, y));
    EXPECT_LT(rt::adjoint_mismatch(lhs, rhs), rt::bounds<T>::adjoint)
        << "non-TOF, 30000 LORs: <Ax,y> = " << lhs << ", <x,A^T y> = " << rhs;
  }

  if (ex.supports_tof) {
    std::uint64_t tof_seed = 53;
    for (const auto &p : tof_adjoint_problems<T>()) {
      SCOPED_TRACE(p.name);
      tof_seed += 10;
      std::vector<T> sig, off_lor;
      const auto tof = params_of<T>(p.setup, sig, off_lor);
      const std::size_t n = p.lors.size(), nb = std::size_t(tof.num_bins);
      const auto x = rt::random_values<T>(std::size_t(p.g.num_voxels()), tof_seed);
      const auto y = rt::random_values<T>(n * nb, tof_seed + 2);
      const op::tof_sinogram<T> sino(tof);
      const auto ax = forward(ex, sino, p.g, x, p.lors);
      const auto aty = back(ex, sino, p.g, p.lors, y);
      const double lhs = rt::dot(ax, y), rhs = rt::dot(x, aty);
      ASSERT_GT(lhs, 0.0);
      EXPECT_LT(rt::adjoint_mismatch(lhs, rhs), rt::bounds<T>::adjoint)
          << "TOF sinogram: <Ax,y> = " << lhs << ", <x,A^T y> = " << rhs;

      const auto bins = random_bins(n, tof.num_bins, tof_seed + 3, 1);
      const auto y_lm = rt::random_values<T>(n, tof_seed + 4);
      const op::tof_listmode<T> lm(tof, rt::cspan_of(bins));
      const auto ax_lm = forward(ex, lm, p.g, x, p.lors);
      const auto aty_lm = back(ex, lm, p.g, p.lors, y_lm);
      const double lhs_lm = rt::dot(ax_lm, y_lm), rhs_lm = rt::dot(x, aty_lm);
      ASSERT_GT(lhs_lm, 0.0);
      EXPECT_LT(rt::adjoint_mismatch(lhs_lm, rhs_lm), rt::bounds<T>::adjoint)
          << "TOF list-mode: <Ax,y> = " << lhs_lm << ", <x,A^T y> = " << rhs_lm;
    }
  }
}

// Uniform image of value 1 (docs/projection.md, "Consequences"): along each
// axis with both ends outside, exactly the chord n_d s_d for any lateral
// position whose interpolation stays inside, in both directions; oblique
// in one and two angles (diagonals), entering and leaving through the
// faces of the principal axis: n_d s_d / |cos theta_d|.
template <class T> void check_analytic_chord_lengths(const executor<T> &ex) {
  const rt::grid g = analytic_grid();
  analytic_cases<T> c;
  for (int d = 0; d < 3; ++d) {
    const int u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
    const double chord = double(g.shape[std::size_t(d)]) * g.voxel_size[std::size_t(d)];
    const double lateral[][2] = {
        {0, 0},      // voxel centre, corner voxel
        {1, 2},      // voxel centre
        {1.5, 0.5},  // voxel edges
        {0.3, 1.75}, // arbitrary
        {double(g.shape[std::size_t(u)] - 1), double(g.shape[std::size_t(v)] - 1)}};
    for (const auto &l : lateral)
      for (double margin : {0.001, 0.75, 13.0}) {
        const vec3 a = at_axis(g, d, -0.5 - margin, l[0], l[1]);
        const vec3 b =
            at_axis(g, d, double(g.shape[std::size_t(d)]) - 0.5 + 2 * margin, l[0], l[1]);
        c.add_both(a, b, chord,
                   axis_case("along the axis", d, l[0], l[1]) + ", margin " +
                       std::to_string(margin));
      }
  }
  // (axis, lateral slopes in voxel indices per plane); the lateral index
  // stays within [0, n - 1] over the whole box for these slopes.
  struct {
    int d;
    double ku, kv;
  } oblique[] = {{0, 0.5, 0.0},  {0, 0.0, 0.25},  {0, 0.5, 0.25},    {0, -0.5, 0.25},
                 {1, 0.25, 0.0}, {1, 0.0, 0.125}, {1, 0.25, -0.125}, {2, 1.0, 0.0},
                 {2, 0.0, 1.0},  {2, -1.0, 1.0}};
  for (const auto &o : oblique) {
    const int d = o.d, u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
    const double pc = 0.5 * double(g.shape[std::size_t(d)] - 1);
    const double uc = 0.5 * double(g.shape[std::size_t(u)] - 1);
    const double vc = 0.5 * double(g.shape[std::size_t(v)] - 1);
    auto point = [&](double fd) {
      return at_axis(g, d, fd, uc + o.ku * (fd - pc), vc + o.kv * (fd - pc));
    };
    const vec3 a = point(-3.25), b = point(double(g.shape[std::size_t(d)]) + 1.75);
    const double expected = double(g.shape[std::size_t(d)]) *
                            g.voxel_size[std::size_t(d)] * inv_cos<T>(a, b, d);
    c.add_both(a, b, expected,
               "oblique, axis " + std::to_string(d) + " slopes " + std::to_string(o.ku) +
                   ", " + std::to_string(o.kv));
  }
  c.check(ex, g);
}

// The closed box (docs/projection.md, "Lines of response"): along an axis
// exactly in a face of the box, the samples interpolate with the zero
// outside: half the chord; on an edge a quarter; just outside a face
// exactly 0; oblique in a face, half of n_d s_d / |cos theta_d|. In the
// outer half voxel the value is the chord times the in-image weight.
template <class T> void check_analytic_box_faces_and_edges(const executor<T> &ex) {
  const rt::grid g = analytic_grid();
  analytic_cases<T> c;
  for (int d = 0; d < 3; ++d) {
    const std::size_t du = std::size_t(d == 0 ? 1 : 0), dv = std::size_t(d == 2 ? 1 : 2);
    const double nd = double(g.shape[std::size_t(d)]);
    const double chord = nd * g.voxel_size[std::size_t(d)];
    const double lo_u = -0.5, hi_u = double(g.shape[du]) - 0.5;
    const double lo_v = -0.5, hi_v = double(g.shape[dv]) - 0.5;
    const double mid_u = 1.25, mid_v = 1.0;
    struct {
      double fu, fv, fraction;
    } faces[] = {{lo_u, mid_v, 0.5}, {hi_u, mid_v, 0.5}, {mid_u, lo_v, 0.5},
                 {mid_u, hi_v, 0.5}, {lo_u, lo_v, 0.25}, {hi_u, hi_v, 0.25},
                 {lo_u, hi_v, 0.25}, {hi_u, lo_v, 0.25}};
    for (const auto &f : faces)
      c.add_both(at_axis(g, d, -2.5, f.fu, f.fv), at_axis(g, d, nd + 1, f.fu, f.fv),
                 f.fraction * chord, axis_case("on a face or edge", d, f.fu, f.fv));
    // Outside a face by 1/64 voxel: misses, exactly 0.
    c.add(at_axis(g, d, -2.5, lo_u - 1.0 / 64, mid_v),
          at_axis(g, d, nd + 1, lo_u - 1.0 / 64, mid_v), 0.0,
          axis_case("just outside a face", d, lo_u - 1.0 / 64, mid_v));
    c.add(at_axis(g, d, -2.5, mid_u, hi_v + 1.0 / 64),
          at_axis(g, d, nd + 1, mid_u, hi_v + 1.0 / 64), 0.0,
          axis_case("just outside a face", d, mid_u, hi_v + 1.0 / 64));
    // In the outer half voxel: the chord times the in-image weight.
    const double nu = double(g.shape[du]), nv = double(g.shape[dv]);
    struct {
      double fu, fv, weight;
    } outer[] = {{-0.25, 1, 0.75},
                 {1, -0.375, 0.625},
                 {nu - 1 + 0.125, 1, 0.875},
                 {-0.25, nv - 1 + 0.25, 0.75 * 0.75}};
    for (const auto &o : outer)
      c.add(at_axis(g, d, -3, o.fu, o.fv), at_axis(g, d, nd + 2, o.fu, o.fv),
            o.weight * chord, axis_case("in the outer half voxel", d, o.fu, o.fv));
  }
  // Oblique, lying in the face x0 = box_min0 (principal axis 1, |d1| = 7 >
  // |d2| = 6): half of n1 * s1 / |cos theta_1|, as axis 2 stays inside.
  const vec3 a = at(g, -0.5, -1.5, 0.75), b = at(g, -0.5, 5.5, 2.25);
  c.add(a, b, 0.5 * double(g.shape[1]) * g.voxel_size[1] * inv_cos<T>(a, b, 1),
        "oblique in the face x0 = box_min0");
  c.check(ex, g);
}

// LORs that contribute nothing (docs/projection.md): missing the box,
// touching it in one point only, zero length (inside, on a plane centre,
// on a face, on a corner, outside) project to exactly 0, and their back
// projection leaves the image bitwise as it was.
template <class T> void check_analytic_misses_and_zero_length(const executor<T> &ex) {
  const rt::grid g = analytic_grid();
  rt::lor_set<T> lors;
  lors.push(at(g, -3, 2, 1), at(g, -0.75, 2, 1));     // stops before the box
  lors.push(at(g, 9, 2, 1), at(g, 6.5, 2, 1));        // from the far side
  lors.push(at(g, -3, -0.75, 1), at(g, 9, -0.75, 1)); // parallel, beside
  lors.push(at(g, -3, 2, 4), at(g, 9, 2, 3.75));      // above, oblique
  lors.push(at(g, -4, 1, 1), at(g, 1, -4, 1));        // passes a corner
  lors.push(at(g, -20, 30, -5), at(g, 30, -20, -5));
  lors.push(at(g, -3, 2, 1), at(g, -0.5, 2, 1));             // ends on the face
  lors.push(at(g, -2, -1.5, -1.5), at(g, -0.5, -0.5, -0.5)); // ends on a corner
  lors.push(at(g, 7.5, 5.5, 4.5), at(g, 5.5, 3.5, 3.5));     // starts on a corner
  for (const vec3 &p : {at(g, 2.3, 1.7, 0.4), at(g, 2, 2, 1), at(g, -0.5, 2, 1),
                        at(g, 5.5, 4.5, 3.5), at(g, 30, -2, 1)})
    lors.push(p, p);
  auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 5, 0.5, 1.5);
  const auto out = forward(ex, op::non_tof{}, g, image, lors);
  for (std::size_t i = 0; i < lors.size(); ++i)
    EXPECT_EQ(out[i], T(0)) << "LOR " << i;
  const auto before = image;
  const std::vector<T> values(lors.size(), T(1));
  ex.back(op::non_tof{}, rt::image_of(image, g), rt::view_of(lors), rt::cspan_of(values));
  EXPECT_TRUE(rt::bitwise_equal(image, before));
}

// Forward projection of a positive random image agrees with the float64
// reference (docs/projection.md "Accuracy"): decision flips on at most 1e-4
// of the LORs, the rest within bounds<T>::norm; the back projection of
// random values (flipped LORs given 0) agrees to the same bound. Three
// grids (dyadic, off-centre, one voxel thick) and three LOR sets of 5e4
// LORs each, then every pair of a small scanner around an off-centre image.
template <class T> void check_agrees_with_reference(const executor<T> &ex) {
  rt::grid off;
  off.shape = {17, 23, 9};
  off.voxel_size = {2.34, 1.7, 3.1};
  off.origin = {-19.3, -17.1, 5.7};
  const std::vector<named_grid> grids = {
      {"dyadic 24x20x12 (2,1,4)", rt::grid::centred({24, 20, 12}, {2.0, 1.0, 4.0})},
      {"off-centre 17x23x9 (2.34,1.7,3.1)", off},
      {"thin 32x28x1 (2,2,2.5)", rt::grid::centred({32, 28, 1}, {2.0, 2.0, 2.5})},
  };
  const std::size_t n = 50000;
  for (lor_kind kind : {lor_kind::outside, lor_kind::anywhere, lor_kind::scanner}) {
    std::uint64_t seed = 1000;
    for (const auto &ng : grids) {
      ++seed;
      SCOPED_TRACE(ng.name + ", " + name_of(kind) + " LORs");
      const rt::grid &g = ng.g;
      rt::lor_set<T> lors;
      if (kind == lor_kind::outside) {
        lors = rt::outside_lors<T>(g, n, seed);
      } else if (kind == lor_kind::anywhere) {
        lors = rt::anywhere_lors<T>(g, n, seed);
      } else {
        rt::scanner_params p;
        p.detectors_per_ring = 64;
        p.rings = 8;
        lors = rt::scanner_lors<T>(g, p, n, seed);
      }
      const auto image =
          rt::random_values<T>(std::size_t(g.num_voxels()), seed + 7, 0.5, 1.5);
      const auto out = forward(ex, op::non_tof{}, g, image, lors);
      const auto ref = rt::ref::forward(g, image.data(), lors);
      const auto cmp = rt::compare_lors(out, ref);
      EXPECT_TRUE(rt::within_bounds(cmp, rt::bounds<T>::norm))
          << rt::describe_flips(cmp, lors, out.data(), ref.data());
      rt::note("forward, " + ng.name + ", " + name_of(kind) + ": " + cmp.summary());

      auto values = rt::random_values<T>(lors.size(), seed + 11, 0.0, 2.0);
      for (std::size_t i : cmp.flipped)
        values[i] = T(0);
      const auto bp = back(ex, op::non_tof{}, g, lors, values);
      const auto ref_back = rt::ref::back(g, lors, values.data());
      EXPECT_LT(rt::rel_norm_diff(bp, ref_back), rt::bounds<T>::norm);
    }
  }

  // All pairs of a small scanner around an off-centre image.
  const rt::grid g = rt::grid::centred({20, 20, 10}, {2.0, 2.0, 2.5}, {3.0, -5.0, 1.25});
  rt::scanner_params p;
  p.detectors_per_ring = 48;
  p.rings = 4;
  const auto lors = rt::scanner_lors<T>(g, p); // 18336 LORs
  const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 5, 0.5, 1.5);
  const auto out = forward(ex, op::non_tof{}, g, image, lors);
  const auto ref = rt::ref::forward(g, image.data(), lors);
  const auto cmp = rt::compare_lors(out, ref);
  EXPECT_TRUE(rt::within_bounds(cmp, rt::bounds<T>::norm))
      << "all pairs of a small scanner: "
      << rt::describe_flips(cmp, lors, out.data(), ref.data());
}

// Degenerate LORs (faces, edges, ties, plane centres, zero length) on grids
// exact in float: no decision may differ from the float64 reference, every
// LOR agrees to rounding, and LORs the reference gives 0 are exactly 0.
template <class T>
void check_agrees_with_reference_on_degenerate_lors(const executor<T> &ex) {
  const rt::grid gs[] = {
      rt::grid::centred({6, 5, 4}, {2.0, 1.0, 4.0}),
      rt::grid::centred({7, 1, 3}, {0.5, 2.0, 1.0}, {1.0, -2.0, 8.0}),
      rt::grid::centred({1, 1, 1}, {1.0, 1.0, 1.0}),
  };
  for (const auto &g : gs) {
    const auto lors = rt::degenerate_lors<T>(g);
    const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 99, 0.5, 1.5);
    const auto out = forward(ex, op::non_tof{}, g, image, lors);
    const auto ref = rt::ref::forward(g, image.data(), lors);
    for (std::size_t i = 0; i < lors.size(); ++i) {
      const auto a = lors.start(i), b = lors.end(i);
      const double tol = 1e-6 * (std::abs(ref[i]) + 1e-30) * (is_float<T>() ? 1.0 : 1e-8);
      EXPECT_NEAR(double(out[i]), ref[i], tol)
          << "LOR " << i << " (" << a[0] << ", " << a[1] << ", " << a[2] << ") -> ("
          << b[0] << ", " << b[1] << ", " << b[2] << ")";
      if (ref[i] == 0.0) { // misses, zero length, corner touch: exactly 0
        EXPECT_EQ(out[i], T(0)) << "LOR " << i;
      }
    }
  }
}

// TOF sinogram and list-mode, forward and back, with per-LOR sigma and
// offset arrays, against the float64 TOF reference: rows (sinogram) or
// events (list-mode) with decision flips at most 1e-4 (2e-4 for list-mode,
// where a window-edge flip moves one bin), the rest within 2e-5 (float) or
// 1e-12 (double); back projections of random values (flipped LORs given 0)
// to the same bound.
template <class T> void check_agrees_with_tof_reference(const executor<T> &ex) {
  const double bound = is_float<T>() ? 2e-5 : 1e-12;
  const rt::grid g = tof_grid();
  const std::size_t n = 10000;
  const auto lors = rt::outside_lors<T>(g, n, 61);
  const auto img = rt::random_values<T>(std::size_t(g.num_voxels()), 62, 0.5, 1.5);
  rt::ref::tof_setup s;
  s.bin_width = 8;
  s.num_bins = 15;
  s.num_sigmas = 3;
  randomise_per_lor(s, n, 63, 4, 20, 25);
  std::vector<T> sig, off;
  const auto tof = params_of<T>(s, sig, off);
  const auto rs = rounded<T>(s);
  const std::size_t nb = 15;

  const op::tof_sinogram<T> sino(tof);
  const auto out = forward(ex, sino, g, img, lors);
  const auto ref = rt::ref::forward_tof_sino(g, img.data(), lors, rs);
  const auto cmp = rt::compare_tof_rows(out, ref, nb);
  EXPECT_TRUE(rt::within_bounds(cmp, bound)) << "sinogram forward";
  rt::note("TOF sinogram forward: " + cmp.summary());

  auto y = rt::random_values<T>(n * nb, 64, 0.0, 1.0);
  for (const std::size_t i : cmp.flipped)
    std::fill(y.begin() + std::ptrdiff_t(i * nb),
              y.begin() + std::ptrdiff_t((i + 1) * nb), T(0));
  const auto bp = back(ex, sino, g, lors, y);
  const auto ref_back = rt::ref::back_tof_sino(g, lors, y.data(), rs);
  EXPECT_LT(rt::rel_norm_diff(bp, ref_back), bound) << "sinogram back";

  const auto bins = random_bins(n, s.num_bins, 65);
  const op::tof_listmode<T> lm(tof, rt::cspan_of(bins));
  const auto ev = forward(ex, lm, g, img, lors);
  const auto ref_ev = rt::ref::forward_tof_lm(g, img.data(), lors, bins.data(), rs);
  const auto cmp_lm = rt::compare_lors(ev, ref_ev);
  EXPECT_TRUE(rt::within_bounds(cmp_lm, bound, 2 * rt::flip_fraction))
      << "list-mode forward";
  auto y_lm = rt::random_values<T>(n, 66, 0.0, 1.0);
  for (const std::size_t i : cmp_lm.flipped)
    y_lm[i] = T(0);
  const auto bp_lm = back(ex, lm, g, lors, y_lm);
  const auto ref_back_lm = rt::ref::back_tof_lm(g, lors, bins.data(), y_lm.data(), rs);
  EXPECT_LT(rt::rel_norm_diff(bp_lm, ref_back_lm), bound) << "list-mode back";
}

// A list-mode value equals the TOF sinogram value of its LOR at its bin,
// and 0 for a bin outside [0, N - 1] (docs/projection.md "TOF list-mode"):
// random LORs, bins, per-LOR sigmas and offsets. To float rounding: 2e-6
// (float) or 1e-14 (double) relative where the executor sums a LOR in one
// order, 1e-5 or 1e-13 where the order may differ (atomics, lanes).
template <class T>
void check_list_mode_equals_sinogram_at_the_same_bin(const executor<T> &ex) {
  const double tol =
      is_float<T>() ? (ex.ordered_sums ? 2e-6 : 1e-5) : (ex.ordered_sums ? 1e-14 : 1e-13);
  const rt::grid g = tof_grid();
  auto lors = rt::outside_lors<T>(g, 2000, 31);
  lors.append(rt::anywhere_lors<T>(g, 2000, 32));
  const auto img = rt::random_values<T>(std::size_t(g.num_voxels()), 33, 0.0, 1.0);
  rt::ref::tof_setup s;
  s.bin_width = 7;
  s.num_bins = 25;
  s.num_sigmas = 3;
  randomise_per_lor(s, lors.size(), 34, 2, 30, 20);
  std::vector<T> sig, off;
  const auto tof = params_of<T>(s, sig, off);
  const auto full = forward(ex, op::tof_sinogram<T>(tof), g, img, lors);
  const auto bins = random_bins(lors.size(), s.num_bins, 35, 2);
  const auto ev = forward(ex, op::tof_listmode<T>(tof, rt::cspan_of(bins)), g, img, lors);
  std::size_t exact = 0, nonzero = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const int j = bins[i];
    if (j < 0 || j >= s.num_bins) {
      ASSERT_EQ(ev[i], T(0)) << "event " << i << " bin " << j;
      continue;
    }
    const double want = double(full[i * 25 + std::size_t(j)]);
    ASSERT_NEAR(double(ev[i]), want, tol * std::fabs(want))
        << "event " << i << " bin " << j;
    exact += double(ev[i]) == want;
    nonzero += want != 0;
  }
  EXPECT_GT(nonzero, lors.size() / 4);
  rt::note("list-mode == sinogram bit for bit on " + std::to_string(exact) + " of " +
           std::to_string(lors.size()) + " events");
}

// The TOF bins of a LOR sum to its non-TOF value when every sample's
// window lies inside [0, N - 1] (docs/projection.md "TOF sinogram"), within
// 2e-5 (float) or 1e-12 (double); with few bins the windows are cut and the
// sum is smaller (never larger).
template <class T> void check_tof_bins_sum_to_non_tof(const executor<T> &ex) {
  const double tol = is_float<T>() ? 2e-5 : 1e-12;
  const rt::grid g = tof_grid();
  const auto lors = rt::outside_lors<T>(g, 3000, 21);
  const auto img = rt::random_values<T>(std::size_t(g.num_voxels()), 22, 0.5, 1.5);
  const auto nontof = forward(ex, op::non_tof{}, g, img, lors);

  rt::ref::tof_setup s;
  s.bin_width = 6;
  s.num_sigmas = 3;
  randomise_per_lor(s, lors.size(), 23, 3, 7, 5);
  // Every window inside: (|s| + |delta|)/w + reach + 1 < (N - 1)/2.
  double need = 0;
  for (std::size_t i = 0; i < lors.size(); ++i)
    need = std::max(need, (max_position(g, lors, i) + std::fabs(s.center_offsets[i])) /
                                  s.bin_width +
                              s.num_sigmas * s.sigmas[i] / s.bin_width + 1);
  s.num_bins = 2 * int(std::ceil(need)) + 3;
  ASSERT_LT(need, (s.num_bins - 1) / 2.0);
  std::vector<T> sig, off;
  const auto out =
      forward(ex, op::tof_sinogram<T>(params_of<T>(s, sig, off)), g, img, lors);
  const std::size_t nb = std::size_t(s.num_bins);
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < nb; ++j)
      sum += double(out[i * nb + j]);
    nonzero += nontof[i] != T(0);
    ASSERT_NEAR(sum, double(nontof[i]), tol * std::fabs(double(nontof[i])))
        << "LOR " << i << ", " << nb << " bins";
  }
  EXPECT_GT(nonzero, lors.size() / 2);

  // Few bins: windows are cut, the sum is smaller.
  s.num_bins = 5;
  const auto cut =
      forward(ex, op::tof_sinogram<T>(params_of<T>(s, sig, off)), g, img, lors);
  std::size_t smaller = 0;
  for (std::size_t i = 0; i < lors.size(); ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < 5; ++j)
      sum += double(cut[i * 5 + j]);
    ASSERT_LE(sum, double(nontof[i]) * (1 + tol)) << "LOR " << i;
    smaller += sum < double(nontof[i]) * (1 - 1e-3);
  }
  EXPECT_GT(smaller, nonzero * 9 / 10);
}

// `out` one element too small for the forward projection, or `values` one
// element too small for the back projection, of every operation: the call
// throws resproj::invalid_argument naming that argument (the executor's
// out_name, values_name) before anything is written: the output keeps its
// contents, the image is bitwise unchanged.
template <class T> void check_too_small_output_is_rejected(const executor<T> &ex) {
  const rt::grid g = tof_grid();
  const auto lors = rt::outside_lors<T>(g, 100, 91);
  const std::size_t n = lors.size();
  const auto image = rt::random_values<T>(std::size_t(g.num_voxels()), 92, 0.5, 1.5);
  auto check = [&](const auto &o, const char *what) {
    SCOPED_TRACE(what);
    const std::size_t m = n * o.values_per_lor();
    std::vector<T> out(m - 1, T(7.5));
    const auto out_before = out;
    EXPECT_TRUE(rt::throws_naming(
        [&] {
          ex.forward(o, rt::cimage_of(image, g), rt::view_of(lors), rt::span_of(out));
        },
        ex.out_name));
    EXPECT_TRUE(rt::bitwise_equal(out, out_before)) << "out written by a rejected call";

    auto img = image;
    const std::vector<T> values(m - 1, T(1));
    EXPECT_TRUE(rt::throws_naming(
        [&] {
          ex.back(o, rt::image_of(img, g), rt::view_of(lors), rt::cspan_of(values));
        },
        ex.values_name));
    EXPECT_TRUE(rt::bitwise_equal(img, image)) << "image written by a rejected call";
  };
  check(op::non_tof{}, "non-TOF");
  if (ex.supports_tof) {
    rt::ref::tof_setup s;
    s.bin_width = 5;
    s.num_bins = 7;
    s.num_sigmas = 3;
    randomise_per_lor(s, n, 93, 5, 15, 5);
    std::vector<T> sig, off;
    const auto tof = params_of<T>(s, sig, off);
    const auto bins = random_bins(n, s.num_bins, 94);
    check(op::tof_sinogram<T>(tof), "TOF sinogram");
    check(op::tof_listmode<T>(tof, rt::cspan_of(bins)), "TOF list-mode");
  }
}

// ------------------------------------------------------------ suite --

template <class E> class Contract : public ::testing::Test {
protected:
  void SetUp() override {
    const std::string why = E::unavailable();
    if (!why.empty())
      GTEST_SKIP() << why;
  }
};

TYPED_TEST_SUITE_P(Contract);

TYPED_TEST_P(Contract, Adjointness) { check_adjointness(executor_of<TypeParam>()); }
TYPED_TEST_P(Contract, AnalyticChordLengths) {
  check_analytic_chord_lengths(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, AnalyticBoxFacesAndEdges) {
  check_analytic_box_faces_and_edges(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, AnalyticMissesAndZeroLength) {
  check_analytic_misses_and_zero_length(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, AgreesWithReference) {
  check_agrees_with_reference(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, AgreesWithReferenceOnDegenerateLors) {
  check_agrees_with_reference_on_degenerate_lors(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, AgreesWithTofReference) {
  if (!TypeParam::supports_tof)
    GTEST_SKIP() << "the TOF operations are not instantiated for this executor";
  check_agrees_with_tof_reference(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, ListModeEqualsSinogramAtTheSameBin) {
  if (!TypeParam::supports_tof)
    GTEST_SKIP() << "the TOF operations are not instantiated for this executor";
  check_list_mode_equals_sinogram_at_the_same_bin(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, TofBinsSumToNonTof) {
  if (!TypeParam::supports_tof)
    GTEST_SKIP() << "the TOF operations are not instantiated for this executor";
  check_tof_bins_sum_to_non_tof(executor_of<TypeParam>());
}
TYPED_TEST_P(Contract, TooSmallOutputIsRejected) {
  check_too_small_output_is_rejected(executor_of<TypeParam>());
}

REGISTER_TYPED_TEST_SUITE_P(Contract, Adjointness, AnalyticChordLengths,
                            AnalyticBoxFacesAndEdges, AnalyticMissesAndZeroLength,
                            AgreesWithReference, AgreesWithReferenceOnDegenerateLors,
                            AgreesWithTofReference, ListModeEqualsSinogramAtTheSameBin,
                            TofBinsSumToNonTof, TooSmallOutputIsRejected);

} // namespace resproj_contract
