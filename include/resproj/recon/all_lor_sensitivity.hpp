/// @file
/// @brief The sensitivity image with attenuation over every LOR of a
/// polygon scanner, on the CPU: `s = sum_L a_L exp(-(A mu)_L)` over all
/// unordered detector pairs of distinct transaxial crystals, every ring
/// difference (docs/all-lor-sensitivity.md). `all_lor_sensitivity` walks
/// one footprint per axial LOR family (math/axial_family.hpp);
/// `all_lor_sensitivity_brute_force` walks every LOR, the reference it is
/// tested against. Standard library only.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
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
  void operator()(int k, float *a, float *b) const noexcept {
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
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1)
      for (std::int64_t i2 = 0; i2 < n[2]; ++i2, ++o) {
        std::array<std::int64_t, 3> i{i0, i1, i2};
        i[std::size_t(ax)] += pad;
        f(o, (i[0] * np[1] + i[1]) * np[2] + i[2]);
      }
}

inline padded_attenuation pad_attenuation(const image_geometry &g, int ax, int pad,
                                          span<const float> mu) {
  padded_attenuation p{g, {}, {}, {}, {}};
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
  const auto grid = math::image_grid<float>::from(p.gp);
  math::family_grid<float> f;
  f.gp = grid;
  f.ax = ax;
  const std::int64_t slices = shape[std::size_t(ax)];
  p.support.assign(std::size_t(p.gp.num_voxels() / slices), 0);
  std::vector<std::vector<float>> slice;
  slice.resize(std::size_t(slices));
  for (auto &s : slice)
    s.reserve(p.support.size());
  for (std::int64_t o = 0; o < p.gp.num_voxels(); ++o) {
    slice[std::size_t(f.slice_of(o))].push_back(
        p.mu[std::size_t(o)]); // column order per slice
    if (p.mu[std::size_t(o)] != 0.f)
      p.support[std::size_t(f.column_of(o))] = 1;
  }
  p.run_first.assign(std::size_t(slices), 0);
  p.run_last.assign(std::size_t(slices), std::int32_t(slices - 1));
  for (std::int64_t j = 1; j < slices; ++j) {
    const auto &a = slice[std::size_t(j - 1)], &b = slice[std::size_t(j)];
    const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    p.run_first[std::size_t(j)] =
        same ? p.run_first[std::size_t(j - 1)] : std::int32_t(j);
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

/// Runs `body(worker, c1)` for every transaxial crystal c1 on `threads`
/// workers (0: the hardware's), each with its own zeroed double image of
/// `voxels` voxels; returns the images' sum.
template <class Body>
std::vector<double> over_crystals(int crystals, unsigned threads, std::int64_t voxels,
                                  Body &&body) {
  const unsigned workers =
      std::max(1u, std::min(threads != 0 ? threads : std::thread::hardware_concurrency(),
                            unsigned(crystals)));
  std::vector<std::vector<double>> images(workers);
  run_parallel_tasks(std::uint64_t(crystals), workers, nullptr,
                     [&](unsigned w, std::uint64_t c1, const std::atomic<bool> &) {
                       if (images[w].empty())
                         images[w].assign(std::size_t(voxels), 0.0);
                       body(w, int(c1), images[w].data());
                     });
  std::vector<double> sum(std::size_t(voxels), 0.0);
  for (const auto &im : images)
    for (std::size_t i = 0; i < im.size(); ++i)
      sum[i] += im[i];
  return sum;
}

} // namespace detail

/// Sensitivity image `sum_L a_L exp(-(A mu)_L)` over every LOR of `s`: all
/// unordered pairs of detectors of distinct transaxial crystals, at every
/// ring difference (pairs of one transaxial crystal, parallel to the axis,
/// are not LORs), end points at the crystal centres
/// (`detector_centres()`), Joseph non-TOF projection in float.
///
/// LORs whose rings both step by one voxel along the scanner axis form
/// axial families; one footprint per family is added at the members where
/// the attenuation weight changes to a difference image in double, and a
/// prefix sum along the axis gives the image (docs/all-lor-sensitivity.md).
/// Mirror flips of image axes that map the crystals, the rings, the
/// (centred) grid and `mu` (bitwise) onto themselves, with no detector
/// exactly on a plane along the axis, are used: only one family of each
/// orbit is walked, and flipped copies of the image add the others.
/// Equal to `all_lor_sensitivity_brute_force` up to rounding (float
/// coordinates of the translated members; double accumulation).
/// Host memory: one double image (padded by 2 slices at both ends along the
/// axis) per worker thread.
///
/// @param s       the scanner; every ring inside the image box along its axis
/// @param g       the image geometry
/// @param mu      attenuation per voxel (1/length unit), `g.num_voxels()`
///                values, or empty for no attenuation
/// @param threads worker threads (0: the hardware's)
/// @param stats   if not null, receives what was walked
/// @throws invalid_argument naming "g" (not valid in float, or a ring
///         outside the box along the axis) or "mu" (size, null, a value not
///         finite and >= 0). Synchronous.
inline std::vector<float>
all_lor_sensitivity(const scanner::polygon_scanner &s, const image_geometry &g,
                    span<const float> mu, unsigned threads = 0,
                    all_lor_sensitivity_stats *stats = nullptr) {
  detail::check_all_lor_inputs(s, g, mu);
  const int ax = s.axis(), pad = 2;
  const detail::padded_attenuation p = detail::pad_attenuation(g, ax, pad, mu);
  math::family_grid<float> f;
  f.gp = math::image_grid<float>::from(p.gp);
  f.ax = ax;
  f.pad = pad;
  if (!mu.empty()) {
    f.mu = p.mu.data();
    f.support = p.support.data();
    f.run_first = p.run_first.data();
    f.run_last = p.run_last.data();
  }
  const std::vector<float> centres = s.detector_centres();
  const detail::mirror_symmetry sym =
      detail::find_mirror_symmetry(s, g, p.gp, mu, centres);
  const std::vector<int> run =
      detail::ring_runs(s.ring_z(), g.voxel_size()[std::size_t(ax)]);
  const int nc = s.crystals_per_ring(), nr = s.num_rings();
  std::vector<all_lor_sensitivity_stats> worker_stats(
      std::max(1u, threads != 0 ? threads : std::thread::hardware_concurrency()));
  std::vector<double> diff = detail::over_crystals(
      nc, threads, p.gp.num_voxels(), [&](unsigned w, int c1, double *image) {
        all_lor_sensitivity_stats &st = worker_stats[w];
        for (int c2 = c1 + 1; c2 < nc; ++c2) {
          // Only the smallest pair of its orbit under the transaxial flips,
          // weighted by 1 / (flips that keep it).
          int keep = 0;
          bool smallest = true;
          for (const std::vector<int> &m : sym.crystal_maps) {
            const int a = std::min(m[std::size_t(c1)], m[std::size_t(c2)]);
            const int b = std::max(m[std::size_t(c1)], m[std::size_t(c2)]);
            smallest = smallest && (a > c1 || (a == c1 && b >= c2));
            keep += a == c1 && b == c2 ? 1 : 0;
          }
          if (!smallest)
            continue;
          detail::for_each_family(run, [&](int r1, int r2, int K) {
            double scale = 1.0 / double(keep);
            if (sym.axial) {
              // The axial flip maps the family to the one starting at the
              // mirrors of its last rings: only the smaller one is summed
              // (half of a family that is its own mirror).
              const int m1 = nr - r1 - K, m2 = nr - r2 - K;
              if (m1 < r1 || (m1 == r1 && m2 < r2))
                return;
              if (m1 == r1 && m2 == r2)
                scale *= 0.5;
            }
            const detail::family_ends end{
                centres.data(), std::size_t(nc), c1, c2, r1, r2};
            const math::family_work wk = math::back_project_family<float, double>(
                f, K, end, image, [scale](double *v, double x) { *v += scale * x; });
            ++st.families;
            st.attenuation_walks += wk.attenuation_walks;
            st.scatter_walks += wk.scatter_walks;
          });
        }
      });
  // Prefix sums along the axis turn the difference image into the image.
  const std::int64_t stride = f.gp.stride[ax];
  for (std::int64_t o = 0; o < p.gp.num_voxels(); ++o)
    if (f.slice_of(o) > 0)
      diff[std::size_t(o)] += diff[std::size_t(o - stride)];
  std::vector<double> image(std::size_t(g.num_voxels()));
  detail::for_each_voxel_padded(g, ax, pad, [&](std::int64_t o, std::int64_t op) {
    image[std::size_t(o)] = diff[std::size_t(op)];
  });
  diff = std::vector<double>();
  // The flipped copies give the LORs that were left out.
  for (int k = 0; k < 3; ++k)
    if (sym.flip[k])
      detail::add_mirror_image(image, g, k);
  if (stats != nullptr) {
    *stats = {};
    stats->lors = std::uint64_t(nc) * std::uint64_t(nc - 1) / 2 * std::uint64_t(nr) *
                  std::uint64_t(nr);
    stats->mirror_flips = sym.num_flips();
    for (const auto &st : worker_stats) {
      stats->families += st.families;
      stats->attenuation_walks += st.attenuation_walks;
      stats->scatter_walks += st.scatter_walks;
    }
  }
  return std::vector<float>(image.begin(), image.end());
}

/// `all_lor_sensitivity` computed LOR by LOR: every LOR's attenuation
/// walked and its weight back-projected (in double). The reference for
/// tests; takes every LOR's two walks.
/// @throws invalid_argument as `all_lor_sensitivity`. Synchronous.
inline std::vector<float>
all_lor_sensitivity_brute_force(const scanner::polygon_scanner &s,
                                const image_geometry &g, span<const float> mu,
                                unsigned threads = 0) {
  detail::check_all_lor_inputs(s, g, mu);
  const auto grid = math::image_grid<float>::from(g);
  const std::vector<float> centres = s.detector_centres();
  const int nc = s.crystals_per_ring(), nr = s.num_rings();
  std::vector<double> sum = detail::over_crystals(
      nc, threads, g.num_voxels(), [&](unsigned, int c1, double *image) {
        for (int c2 = c1 + 1; c2 < nc; ++c2)
          for (int r1 = 0; r1 < nr; ++r1)
            for (int r2 = 0; r2 < nr; ++r2) {
              float a[3], b[3];
              detail::family_ends{centres.data(), std::size_t(nc), c1, c2, r1, r2}(0, a,
                                                                                   b);
              const math::joseph_ray<float> r = math::make_joseph_ray(grid, a, b);
              if (r.empty())
                continue;
              const double w = mu.empty() ? 1.0
                                          : std::exp(-double(math::forward_planes(
                                                mu.data(), r, r.first_plane, 1)));
              const double v = w * double(r.step);
              for (std::int64_t q = r.first_plane; q <= r.last_plane; ++q) {
                const auto st = math::stencil_at<std::int64_t>(r, q);
                for (int i = 0; i < 4; ++i)
                  if (st.weight[i] != 0.f)
                    image[st.offset[i]] += v * double(st.weight[i]);
              }
            }
      });
  return std::vector<float>(sum.begin(), sum.end());
}

} // namespace recon
RESPROJ_NAMESPACE_END
