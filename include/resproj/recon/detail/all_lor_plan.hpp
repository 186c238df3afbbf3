/// @file
/// @brief The host-side plan of an all-LOR sensitivity sum
/// (docs/all-lor-sensitivity.md), shared by the CPU and GPU backends: the
/// padded grid and attenuation tables, the scanner's ring families, the
/// mirror flips used and the crystal pairs and ring families left to walk.
/// Standard library only.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/recon/detail/mirror_symmetry.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// What an all-LOR sensitivity computation walked.
struct all_lor_sensitivity_stats {
  std::uint64_t lors = 0;              ///< LORs summed over (missing ones included)
  std::uint64_t families = 0;          ///< axial families walked
  int mirror_flips = 0;                ///< image axes whose mirror flip was used
  std::uint64_t attenuation_walks = 0; ///< forward walks through mu
  std::uint64_t scatter_walks = 0;     ///< footprints added
};

namespace detail {

/// `run[r]`: how many rings r, r + 1, ... are translates of each other by
/// one voxel along the scanner axis (ring spacing equal to the voxel size
/// to 1e-6 of it); 1 where ring r + 1 is not.
inline std::vector<int> ring_runs(const std::vector<double> &ring_z, double voxel) {
  std::vector<int> run(ring_z.size(), 1);
  for (std::size_t r = ring_z.size() - 1; r-- > 0;)
    if (std::fabs(ring_z[r + 1] - ring_z[r] - voxel) <= 1e-6 * voxel)
      run[r] = run[r + 1] + 1;
  return run;
}

/// Calls `f(r1, r2, K)` for every axial family of ring pairs: (r1, r2)
/// starts one unless (r1 - 1, r2 - 1) precedes it; K = its members.
template <class F> void for_each_family(const std::vector<int> &run, F &&f) {
  const int nr = int(run.size());
  for (int r1 = 0; r1 < nr; ++r1)
    for (int r2 = 0; r2 < nr; ++r2)
      if (r1 == 0 || r2 == 0 || run[std::size_t(r1 - 1)] == 1 ||
          run[std::size_t(r2 - 1)] == 1)
        f(r1, r2, std::min(run[std::size_t(r1)], run[std::size_t(r2)]));
}

/// End points of member k of the family of transaxial crystals (c1, c2)
/// starting at rings (r1, r2), from ring-major crystal centres.
struct family_ends {
  const float *centres;
  std::size_t crystals_per_ring;
  int c1, c2, r1, r2;
  RESPROJ_HD void operator()(int k, float *a, float *b) const noexcept {
    const float *pa =
        centres + 3 * (std::size_t(r1 + k) * crystals_per_ring + std::size_t(c1));
    const float *pb =
        centres + 3 * (std::size_t(r2 + k) * crystals_per_ring + std::size_t(c2));
    for (int i = 0; i < 3; ++i) {
      a[i] = pa[i];
      b[i] = pb[i];
    }
  }
};

/// The padded grid and attenuation tables of `math::family_grid`.
struct padded_attenuation {
  image_geometry gp;
  std::vector<float> mu; ///< on gp, zero in the padding (empty: no mu)
  std::vector<unsigned char> support;
  std::vector<std::int32_t> run_first, run_last;
  /// Box on gp of the nonzero mu voxels, unbounded along the axis: it
  /// holds every support column.
  math::index_box support_columns;
};

/// Calls `f(original offset, padded offset)` for every voxel of `g`, whose
/// padded grid has `pad` more slices on both sides along `ax`.
template <class F>
void for_each_voxel_padded(const image_geometry &g, int ax, int pad, F &&f) {
  const auto &n = g.shape();
  std::array<std::int64_t, 3> np = n;
  np[std::size_t(ax)] += 2 * pad;
  std::int64_t o = 0;
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
      const std::int64_t row =
          ((i0 + (ax == 0 ? pad : 0)) * np[1] + i1 + (ax == 1 ? pad : 0)) * np[2] +
          (ax == 2 ? pad : 0);
      for (std::int64_t i2 = 0; i2 < n[2]; ++i2, ++o)
        f(o, row + i2);
    }
}

inline padded_attenuation pad_attenuation(const image_geometry &g, int ax, int pad,
                                          span<const float> mu) {
  padded_attenuation p{g, {}, {}, {}, {}, {}};
  std::array<std::int64_t, 3> shape = g.shape();
  std::array<double, 3> origin = g.origin();
  shape[std::size_t(ax)] += 2 * pad;
  origin[std::size_t(ax)] -= double(pad) * g.voxel_size()[std::size_t(ax)];
  p.gp = image_geometry(shape, g.voxel_size(), origin);
  if (mu.empty())
    return p;
  p.mu.assign(std::size_t(p.gp.num_voxels()), 0.f);
  for_each_voxel_padded(g, ax, pad, [&](std::int64_t o, std::int64_t op) {
    p.mu[std::size_t(op)] = mu[std::size_t(o)];
  });
  // One pass over the columns along ax: the support, and whether slice j
  // equals slice j - 1 bitwise.
  const std::int64_t slices = shape[std::size_t(ax)];
  const std::int64_t stride = ax == 2 ? 1 : ax == 1 ? shape[2] : shape[1] * shape[2];
  const std::int64_t columns = p.gp.num_voxels() / slices;
  p.support.assign(std::size_t(columns), 0);
  std::vector<unsigned char> differs(std::size_t(slices), 0);
  for (std::int64_t c = 0; c < columns; ++c) {
    const float *col = p.mu.data() + (c / stride) * stride * slices + c % stride;
    std::uint32_t previous;
    std::memcpy(&previous, col, sizeof previous);
    bool nonzero = col[0] != 0.f;
    for (std::int64_t j = 1; j < slices; ++j) {
      std::uint32_t bits;
      std::memcpy(&bits, col + j * stride, sizeof bits);
      differs[std::size_t(j)] |= bits != previous ? 1 : 0;
      nonzero = nonzero || col[j * stride] != 0.f;
      previous = bits;
    }
    p.support[std::size_t(c)] = nonzero ? 1 : 0;
  }
  const std::int64_t padded_shape[3] = {shape[0], shape[1], shape[2]};
  const math::index_box nonzero = math::nonzero_box(p.mu.data(), padded_shape);
  for (int k = 0; k < 3; ++k)
    if (k != ax) {
      p.support_columns.lo[k] = nonzero.lo[k];
      p.support_columns.hi[k] = nonzero.hi[k];
    }
  p.run_first.assign(std::size_t(slices), 0);
  p.run_last.assign(std::size_t(slices), std::int32_t(slices - 1));
  for (std::int64_t j = 1; j < slices; ++j) {
    p.run_first[std::size_t(j)] =
        differs[std::size_t(j)] == 0 ? p.run_first[std::size_t(j - 1)] : std::int32_t(j);
  }
  for (std::int64_t j = slices - 1; j-- > 0;)
    p.run_last[std::size_t(j)] =
        p.run_first[std::size_t(j + 1)] == p.run_first[std::size_t(j)]
            ? p.run_last[std::size_t(j + 1)]
            : std::int32_t(j);
  return p;
}

inline void check_all_lor_inputs(const scanner::polygon_scanner &s,
                                 const image_geometry &g, span<const float> mu) {
  resproj::detail::check_geometry_in<float>(g, "g");
  if (!mu.empty() && mu.size() != std::size_t(g.num_voxels()))
    resproj::detail::throw_invalid(
        "mu", "must hold one value per voxel (" + std::to_string(g.num_voxels()) +
                  ") or none, got " + std::to_string(mu.size()));
  if (!mu.empty() && mu.data() == nullptr)
    resproj::detail::throw_invalid("mu", "null pointer with a nonzero size");
  for (std::size_t i = 0; i < mu.size(); ++i)
    if (!std::isfinite(mu[i]) || mu[i] < 0.f)
      resproj::detail::throw_invalid("mu", "value " + std::to_string(i) +
                                               " is not finite and >= 0");
  const int ax = s.axis();
  for (std::size_t r = 0; r < s.ring_z().size(); ++r) {
    const double z = s.ring_z()[r];
    if (!(z > g.box_min(ax) && z < g.box_max(ax)))
      resproj::detail::throw_invalid(
          "g", "ring " + std::to_string(r) +
                   " lies outside the image box along the scanner axis: an all-LOR "
                   "sensitivity image covers every ring");
  }
}

/// A transaxial crystal pair summed (the smallest of its orbit under the
/// transaxial flips) with its weight, 1 / (flips that keep it).
struct crystal_pair {
  std::int32_t c1, c2;
  double scale;
};

/// An axial family of ring pairs summed: first rings (r1, r2), K members,
/// and its weight under the axial flip (1, or 0.5 for a family that is its
/// own mirror).
struct ring_family {
  std::int32_t r1, r2, K;
  double scale;
};

/// Everything an all-LOR sum needs besides the image, computed on the host
/// for every backend: the padded grid and attenuation tables, the crystal
/// centres, the flips used and the pairs and families left to walk.
struct all_lor_plan {
  padded_attenuation p; ///< padded by `pad` = 2 slices along `ax`
  int ax = 2, pad = 2;
  std::vector<float> centres;
  mirror_symmetry sym;
  std::vector<crystal_pair> pairs; ///< ascending c1, then c2
  std::vector<std::size_t>
      pair_begin; ///< pairs of c1: [pair_begin[c1], pair_begin[c1 + 1])
  std::vector<ring_family> families;

  explicit all_lor_plan(padded_attenuation padded) : p(std::move(padded)) {}

  /// The family grid on `p`, pointing at the host tables (or at `mu`,
  /// `support`, `run_first`, `run_last` when given: their device copies).
  math::family_grid<float> grid(const float *mu = nullptr,
                                const unsigned char *support = nullptr,
                                const std::int32_t *run_first = nullptr,
                                const std::int32_t *run_last = nullptr) const {
    math::family_grid<float> f;
    f.gp = math::image_grid<float>::from(p.gp);
    f.ax = ax;
    f.pad = pad;
    if (!p.mu.empty()) {
      f.mu = mu != nullptr ? mu : p.mu.data();
      f.support = support != nullptr ? support : p.support.data();
      f.run_first = run_first != nullptr ? run_first : p.run_first.data();
      f.run_last = run_last != nullptr ? run_last : p.run_last.data();
      f.support_columns = p.support_columns;
    }
    return f;
  }
};

/// Checks the inputs and builds the plan of `all_lor_sensitivity`.
inline all_lor_plan make_all_lor_plan(const scanner::polygon_scanner &s,
                                      const image_geometry &g, span<const float> mu) {
  check_all_lor_inputs(s, g, mu);
  all_lor_plan plan(pad_attenuation(g, s.axis(), 2, mu));
  plan.ax = s.axis();
  plan.centres = s.detector_centres();
  plan.sym = find_mirror_symmetry(s, g, plan.p.gp, mu, plan.centres);
  const int nc = s.crystals_per_ring(), nr = s.num_rings();
  plan.pair_begin.assign(std::size_t(nc) + 1, 0);
  for (int c1 = 0; c1 < nc; ++c1) {
    plan.pair_begin[std::size_t(c1)] = plan.pairs.size();
    for (int c2 = c1 + 1; c2 < nc; ++c2) {
      // Only the smallest pair of its orbit under the transaxial flips,
      // weighted by 1 / (flips that keep it).
      int keep = 0;
      bool smallest = true;
      for (const std::vector<int> &m : plan.sym.crystal_maps) {
        const int a = std::min(m[std::size_t(c1)], m[std::size_t(c2)]);
        const int b = std::max(m[std::size_t(c1)], m[std::size_t(c2)]);
        smallest = smallest && (a > c1 || (a == c1 && b >= c2));
        keep += a == c1 && b == c2 ? 1 : 0;
      }
      if (smallest)
        plan.pairs.push_back({c1, c2, 1.0 / double(keep)});
    }
  }
  plan.pair_begin[std::size_t(nc)] = plan.pairs.size();
  const std::vector<int> run =
      ring_runs(s.ring_z(), g.voxel_size()[std::size_t(plan.ax)]);
  for_each_family(run, [&](int r1, int r2, int K) {
    double scale = 1.0;
    if (plan.sym.axial) {
      // The axial flip maps the family to the one starting at the mirrors
      // of its last rings: only the smaller one is summed (half of a
      // family that is its own mirror).
      const int m1 = nr - r1 - K, m2 = nr - r2 - K;
      if (m1 < r1 || (m1 == r1 && m2 < r2))
        return;
      if (m1 == r1 && m2 == r2)
        scale = 0.5;
    }
    plan.families.push_back({r1, r2, K, scale});
  });
  return plan;
}

/// Fills `stats` (if not null) for `plan` of scanner `s`.
inline void plan_stats(const all_lor_plan &plan, const scanner::polygon_scanner &s,
                       std::uint64_t attenuation_walks, std::uint64_t scatter_walks,
                       all_lor_sensitivity_stats *stats) {
  if (stats == nullptr)
    return;
  const std::uint64_t nc = std::uint64_t(s.crystals_per_ring()),
                      nr = std::uint64_t(s.num_rings());
  *stats = {};
  stats->lors = nc * (nc - 1) / 2 * nr * nr;
  stats->families = std::uint64_t(plan.pairs.size()) * plan.families.size();
  stats->mirror_flips = plan.sym.num_flips();
  stats->attenuation_walks = attenuation_walks;
  stats->scatter_walks = scatter_walks;
}

} // namespace detail
} // namespace recon
RESPROJ_NAMESPACE_END
