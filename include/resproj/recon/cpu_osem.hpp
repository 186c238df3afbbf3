/// @file
/// @brief OSEM backends on the CPU (OpenMP): sinogram data with subsets by
/// view, and (TOF) list-mode data grouped by subset; run them with
/// `recon::osem` (em.hpp). Also the Poisson log-likelihood of sinogram
/// data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/em.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// OSEM backend for sinogram data (subsets by view) on the CPU. Keeps
/// references to `sub` and `data` (they must outlive it); computes one
/// sensitivity image per subset from `data.m` at construction.
struct cpu_sinogram_backend {
  const sinogram_subsets &sub;
  const sinogram_data &data;
  std::vector<std::vector<float>> sens; ///< per subset
  std::vector<float> x, g, q;           ///< image, back projection, projection
  cpu::options opt;                     ///< threads etc. of the projections

  /// @param x0 start image (> 0 where activity may be)
  /// @throws invalid_argument ("x0", "data") for sizes that do not match.
  cpu_sinogram_backend(const sinogram_subsets &s, const sinogram_data &d,
                       std::vector<float> x0)
      : sub(s), data(d), x(std::move(x0)) {
    if (x.size() != std::size_t(sub.image.num_voxels()))
      resproj::detail::throw_invalid("x0", "size does not match the image");
    if (d.y.size() != d.m.size() || d.a.size() != d.m.size())
      resproj::detail::throw_invalid("data", "y, m and a differ in size");
    sens = sensitivity_images(s, d);
    g.resize(x.size());
  }
  int num_subsets() const { return sub.num_subsets(); }
  void forward(int s) {
    q.resize(sub.subset_count(s));
    cpu::forward(op::non_tof{}, image_view<const float>(x.data(), sub.image),
                 sub.source(s), span<float>(q.data(), q.size()), opt);
  }
  void ratio(int s) {
    const std::size_t o = data.offset[std::size_t(s)];
    detail::parallel_for(q.size(), [&](std::size_t i) {
      q[i] = em_ratio{}(q[i], data.m[o + i], data.a[o + i], data.y[o + i]);
    });
  }
  void back(int s) {
    std::fill(g.begin(), g.end(), 0.f);
    cpu::back(op::non_tof{}, image_view<float>(g.data(), sub.image), sub.source(s),
              span<const float>(q.data(), q.size()), opt);
  }
  void update(int s) {
    const auto &sn = sens[std::size_t(s)];
    detail::parallel_for(x.size(),
                         [&](std::size_t i) { x[i] = em_update{}(x[i], g[i], sn[i]); });
  }
  void finish() {}
};

/// OSEM backend for list-mode data grouped by subset on the CPU: TOF when
/// `tof.num_bins > 0`, else non-TOF. `sensitivity` is the total sensitivity
/// image (A^T m over the whole sinogram); each subset uses sensitivity / S.
/// Keeps references to `sub` and `data`.
struct cpu_listmode_backend {
  const sinogram_subsets &sub;
  const listmode_data &data;
  tof_params<float> tof;
  std::vector<float> sens, x, g, q;
  cpu::options opt; ///< threads etc. of the projections

  /// @throws invalid_argument ("x0", "sensitivity", "data") for sizes that
  ///         do not match or events not grouped by subset.
  cpu_listmode_backend(const sinogram_subsets &s, const listmode_data &d,
                       const tof_params<float> &t, std::vector<float> sensitivity,
                       std::vector<float> x0)
      : sub(s), data(d), tof(t), sens(std::move(sensitivity)), x(std::move(x0)),
        g(x.size()) {
    if (x.size() != std::size_t(sub.image.num_voxels()))
      resproj::detail::throw_invalid("x0", "size does not match the image");
    if (sens.size() != x.size())
      resproj::detail::throw_invalid("sensitivity", "size does not match the image");
    if (d.offset.size() < 2 || d.offset.back() != d.count() || d.m.size() != d.count() ||
        d.a.size() != d.count() || d.pairs.size() != 2 * d.count())
      resproj::detail::throw_invalid(
          "data", "events not grouped by subset or without corrections");
    const float scale = 1.f / float(num_subsets());
    for (float &v : sens)
      v *= scale;
  }
  int num_subsets() const { return int(data.offset.size()) - 1; }
  std::size_t first(int s) const { return data.offset[std::size_t(s)]; }
  std::size_t count(int s) const {
    return data.offset[std::size_t(s) + 1] - data.offset[std::size_t(s)];
  }
  /// The events of subset s.
  detector_pairs<float> lors(int s) const {
    return {sub.detectors.data(), sub.num_detectors(), data.pairs.data() + 2 * first(s),
            count(s)};
  }
  span<const std::int16_t> bins(int s) const {
    return {data.bins.data() + first(s), count(s)};
  }
  void forward(int s) {
    q.resize(count(s));
    const span<float> out(q.data(), q.size());
    const image_view<const float> xv(x.data(), sub.image);
    if (tof.num_bins > 0)
      cpu::forward(op::tof_listmode{tof, bins(s)}, xv, lors(s), out, opt);
    else
      cpu::forward(op::non_tof{}, xv, lors(s), out, opt);
  }
  void ratio(int s) {
    const std::size_t o = first(s);
    detail::parallel_for(q.size(), [&](std::size_t i) {
      q[i] = em_ratio{}(q[i], data.m[o + i], data.a[o + i], 1.f);
    });
  }
  void back(int s) {
    std::fill(g.begin(), g.end(), 0.f);
    const span<const float> v(q.data(), q.size());
    const image_view<float> gv(g.data(), sub.image);
    if (tof.num_bins > 0)
      cpu::back(op::tof_listmode{tof, bins(s)}, gv, lors(s), v, opt);
    else
      cpu::back(op::non_tof{}, gv, lors(s), v, opt);
  }
  void update(int) {
    detail::parallel_for(x.size(),
                         [&](std::size_t i) { x[i] = em_update{}(x[i], g[i], sens[i]); });
  }
  void finish() {}
};

/// Poisson log-likelihood `sum y log(ybar) - ybar` (without the constant
/// log y! term) of image `x` for sinogram data (CPU). Synchronous.
/// @throws invalid_argument ("x") if its size does not match the image.
inline double poisson_log_likelihood(const sinogram_subsets &sub, const sinogram_data &d,
                                     const std::vector<float> &x) {
  if (x.size() != std::size_t(sub.image.num_voxels()))
    resproj::detail::throw_invalid("x", "size does not match the image");
  double L = 0;
  std::vector<float> q;
  for (int s = 0; s < sub.num_subsets(); ++s) {
    q.assign(sub.subset_count(s), 0.f);
    cpu::forward(op::non_tof{}, image_view<const float>(x.data(), sub.image),
                 sub.source(s), span<float>(q.data(), q.size()));
    const std::size_t o = d.offset[std::size_t(s)];
    for (std::size_t i = 0; i < q.size(); ++i) {
      const double ybar = double(d.m[o + i]) * q[i] + d.a[o + i];
      if (ybar > 0)
        L += double(d.y[o + i]) * std::log(ybar) - ybar;
    }
  }
  return L;
}

} // namespace recon
RESPROJ_NAMESPACE_END
