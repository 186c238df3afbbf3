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
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/thread_pool.hpp"
#include "resproj/math/axial_family.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/recon/detail/all_lor_plan.hpp"
#include "resproj/recon/detail/mirror_symmetry.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

namespace detail {

/// Runs `body(worker, c1)` for every transaxial crystal c1 on `threads`
/// workers (0: the hardware's), each with its own zeroed image of `voxels`
/// voxels in `Acc`; returns the images' sum in double.
template <class Acc = double, class Body>
std::vector<double> over_crystals(int crystals, unsigned threads, std::int64_t voxels,
                                  Body &&body) {
  const unsigned workers =
      std::max(1u, std::min(threads != 0 ? threads : std::thread::hardware_concurrency(),
                            unsigned(crystals)));
  std::vector<std::vector<Acc>> images(workers);
  run_parallel_tasks(std::uint64_t(crystals), workers, nullptr,
                     [&](unsigned w, std::uint64_t c1, const std::atomic<bool> &) {
                       if (images[w].empty())
                         images[w].assign(std::size_t(voxels), Acc(0));
                       body(w, int(c1), images[w].data());
                     });
  std::vector<double> sum(std::size_t(voxels), 0.0);
  for (const auto &im : images)
    for (std::size_t i = 0; i < im.size(); ++i)
      sum[i] += double(im[i]);
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
/// @tparam Acc    the difference image's type: double; float gives the
///                error of a float difference image (the GPU call's)
/// @param s       the scanner; every ring inside the image box along its axis
/// @param g       the image geometry
/// @param mu      attenuation per voxel (1/length unit), `g.num_voxels()`
///                values, or empty for no attenuation
/// @param threads worker threads (0: the hardware's)
/// @param stats   if not null, receives what was walked
/// @throws invalid_argument naming "g" (not valid in float, or a ring
///         outside the box along the axis) or "mu" (size, null, a value not
///         finite and >= 0). Synchronous.
template <class Acc = double>
std::vector<float> all_lor_sensitivity(const scanner::polygon_scanner &s,
                                       const image_geometry &g, span<const float> mu,
                                       unsigned threads = 0,
                                       all_lor_sensitivity_stats *stats = nullptr) {
  const detail::all_lor_plan plan = detail::make_all_lor_plan(s, g, mu);
  const math::family_grid<float> f = plan.grid();
  const int nc = s.crystals_per_ring();
  std::vector<all_lor_sensitivity_stats> worker_stats(
      std::max(1u, threads != 0 ? threads : std::thread::hardware_concurrency()));
  std::vector<double> diff = detail::over_crystals<Acc>(
      nc, threads, plan.p.gp.num_voxels(), [&](unsigned w, int c1, Acc *image) {
        all_lor_sensitivity_stats &st = worker_stats[w];
        for (std::size_t i = plan.pair_begin[std::size_t(c1)];
             i < plan.pair_begin[std::size_t(c1) + 1]; ++i) {
          const detail::crystal_pair &cp = plan.pairs[i];
          for (const detail::ring_family &rf : plan.families) {
            const Acc scale = Acc(cp.scale * rf.scale);
            const detail::family_ends end{
                plan.centres.data(), std::size_t(nc), cp.c1, cp.c2, rf.r1, rf.r2};
            const math::family_work wk = math::back_project_family<float, Acc>(
                f, rf.K, end, image, [scale](Acc *v, Acc x) { *v += scale * x; });
            st.attenuation_walks += wk.attenuation_walks;
            st.scatter_walks += wk.scatter_walks;
          }
        }
      });
  // Prefix sums along the axis turn the difference image into the image.
  const int ax = plan.ax;
  const std::int64_t stride = f.gp.stride[ax];
  for (std::int64_t o = 0; o < plan.p.gp.num_voxels(); ++o)
    if (f.slice_of(o) > 0)
      diff[std::size_t(o)] += diff[std::size_t(o - stride)];
  std::vector<double> image(std::size_t(g.num_voxels()));
  detail::for_each_voxel_padded(g, ax, plan.pad, [&](std::int64_t o, std::int64_t op) {
    image[std::size_t(o)] = diff[std::size_t(op)];
  });
  diff = std::vector<double>();
  // The flipped copies give the LORs that were left out.
  for (int k = 0; k < 3; ++k)
    if (plan.sym.flip[k])
      detail::add_mirror_image(image, g, k);
  std::uint64_t attenuation = 0, scatter = 0;
  for (const auto &st : worker_stats) {
    attenuation += st.attenuation_walks;
    scatter += st.scatter_walks;
  }
  detail::plan_stats(plan, s, attenuation, scatter, stats);
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
