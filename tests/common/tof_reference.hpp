/// @file
/// @brief An independent float64 TOF reference, written from
/// docs/projection.md "TOF" alone (it does not call or copy resproj::math):
/// TOF sinogram and list-mode forward and back projection, and a row-wise
/// comparison of TOF sinograms.
///
/// It reuses the plane decisions of reference.hpp (`ref::make_plan`, taken
/// in float64) and writes its own per-plane walk, because the TOF weights
/// need the position of each plane's sample. The TOF window is decided in
/// float64 too, so a float projector may differ on a few LORs by a plane
/// sample or a window edge bin (see `compare_tof_rows`). The window total is
/// summed bin by bin (the library takes one difference of two edges), and
/// every erf difference of same-sign arguments is formed from erfc in long
/// double. Standard library only; slow and simple on purpose.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/compare.hpp"
#include "common/grid.hpp"
#include "common/lors.hpp"
#include "common/reference.hpp"

namespace resproj_test {
namespace ref {

/// TOF parameters of one LOR (spec: w, N, sigma, delta, n_sigma).
struct tof_lor_params {
  double bin_width = 1;
  int num_bins = 1;
  double sigma = 1;
  double center_offset = 0;
  double num_sigmas = 3;
};

/// TOF parameters of a call: scalar sigma/offset, or per-LOR vectors when
/// non-empty.
struct tof_setup {
  double bin_width = 1;
  int num_bins = 1;
  double sigma = 1;
  double center_offset = 0;
  double num_sigmas = 3;
  std::vector<double> sigmas, center_offsets;

  tof_lor_params of(std::size_t i) const {
    tof_lor_params p;
    p.bin_width = bin_width;
    p.num_bins = num_bins;
    p.sigma = sigmas.empty() ? sigma : sigmas[i];
    p.center_offset = center_offsets.empty() ? center_offset : center_offsets[i];
    p.num_sigmas = num_sigmas;
    return p;
  }
};

/// erf(x) - erf(y) for x >= y, in long double, without cancellation in the
/// tails: erfc(y) - erfc(x) when both are >= 0, erfc(-x) - erfc(-y) when
/// both are <= 0.
inline long double erf_diff(long double x, long double y) {
  if (y >= 0)
    return std::erfc(y) - std::erfc(x);
  if (x <= 0)
    return std::erfc(-x) - std::erfc(-y);
  return std::erf(x) - std::erf(y);
}

/// Spec: K_j(s) = 0.5 (erf((s - c_j + w/2)/(sqrt 2 sigma)) -
/// erf((s - c_j - w/2)/(sqrt 2 sigma))), c_j = (j - (N-1)/2) w + delta.
inline long double kernel(const tof_lor_params &p, double s, std::int64_t j) {
  const long double c =
      (static_cast<long double>(j) - (p.num_bins - 1) / 2.0L) * p.bin_width +
      p.center_offset;
  const long double scale = std::sqrt(2.0L) * p.sigma;
  const long double hi = (s - c + p.bin_width / 2.0L) / scale;
  const long double lo = (s - c - p.bin_width / 2.0L) / scale;
  return 0.5L * erf_diff(hi, lo);
}

/// Window of a sample at s: floor(t - n sigma / w) .. ceil(t + n sigma / w),
/// t = (s - delta)/w + (N - 1)/2 (float64 decision).
inline void window(const tof_lor_params &p, double s, std::int64_t &first,
                   std::int64_t &last) {
  const double t = (s - p.center_offset) / p.bin_width + (p.num_bins - 1) / 2.0;
  const double reach = p.num_sigmas * p.sigma / p.bin_width;
  first = std::int64_t(std::floor(t - reach));
  last = std::int64_t(std::ceil(t + reach));
}

/// Calls `f(j, weight)` for the bins of the window inside [0, N-1]; weight =
/// K_j / W, W = sum of K over the whole window (bins outside included).
template <class F> void for_each_tof_weight(const tof_lor_params &p, double s, F &&f) {
  std::int64_t first, last;
  window(p, s, first, last);
  std::vector<long double> k(std::size_t(last - first + 1));
  long double total = 0;
  for (std::int64_t j = first; j <= last; ++j)
    total += k[std::size_t(j - first)] = kernel(p, s, j);
  if (!(total > 0))
    return;
  for (std::int64_t j = std::max<std::int64_t>(first, 0);
       j <= std::min<std::int64_t>(last, p.num_bins - 1); ++j)
    f(j, double(k[std::size_t(j - first)] / total));
}

/// One Joseph sample: the in-image neighbours with weight (bilinear weight
/// times the step), and the sample's TOF position s (signed distance from
/// the midpoint of the unclipped segment, positive towards b).
struct plane_sample {
  int count = 0;
  std::int64_t voxel[4];
  double weight[4];
  double s = 0;
};

/// Calls `visit(plane_sample)` for every sampled plane of LOR a -> b.
template <class Visit>
void for_each_plane(const grid &g, const vec3 &a, const vec3 &b, Visit &&visit) {
  const plan p = make_plan(g, a, b);
  if (p.num_planes() == 0)
    return;
  const std::size_t d = std::size_t(p.axis);
  const std::size_t u = d == 0 ? 1 : 0, v = d == 2 ? 1 : 2;
  const double dd = b[d] - a[d];
  const double len =
      std::sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                (b[2] - a[2]) * (b[2] - a[2]));
  for (std::int64_t plane = p.first; plane <= p.last; ++plane) {
    if (plane < 0 || plane >= g.shape[d])
      continue;
    const double t = (g.origin[d] + double(plane) * g.voxel_size[d] - a[d]) / dd;
    const double fu = (a[u] + t * (b[u] - a[u]) - g.origin[u]) / g.voxel_size[u];
    const double fv = (a[v] + t * (b[v] - a[v]) - g.origin[v]) / g.voxel_size[v];
    const double iu0 = std::floor(fu), iv0 = std::floor(fv);
    const double wu[2] = {1.0 - (fu - iu0), fu - iu0};
    const double wv[2] = {1.0 - (fv - iv0), fv - iv0};
    plane_sample smp;
    smp.s = (t - 0.5) * len;
    for (int ju = 0; ju < 2; ++ju) {
      const std::int64_t iu = std::int64_t(iu0) + ju;
      if (iu < 0 || iu >= g.shape[u])
        continue;
      for (int jv = 0; jv < 2; ++jv) {
        const std::int64_t iv = std::int64_t(iv0) + jv;
        if (iv < 0 || iv >= g.shape[v] || wu[ju] * wv[jv] == 0.0)
          continue;
        std::int64_t idx[3];
        idx[d] = plane;
        idx[u] = iu;
        idx[v] = iv;
        smp.voxel[smp.count] = g.index(idx[0], idx[1], idx[2]);
        smp.weight[smp.count] = wu[ju] * wv[jv] * p.step;
        ++smp.count;
      }
    }
    if (smp.count > 0)
      visit(smp);
  }
}

/// TOF sinogram row of one LOR (N values).
template <class I>
std::vector<double> forward_tof_lor(const grid &g, const I *image, const vec3 &a,
                                    const vec3 &b, const tof_lor_params &p) {
  std::vector<double> row(std::size_t(p.num_bins), 0.0);
  for_each_plane(g, a, b, [&](const plane_sample &smp) {
    double value = 0;
    for (int k = 0; k < smp.count; ++k)
      value += smp.weight[k] * double(image[smp.voxel[k]]);
    for_each_tof_weight(
        p, smp.s, [&](std::int64_t j, double w) { row[std::size_t(j)] += value * w; });
  });
  return row;
}

/// TOF sinogram `[LOR][bin]` of every LOR.
template <class I, class L>
std::vector<double> forward_tof_sino(const grid &g, const I *image,
                                     const lor_set<L> &lors, const tof_setup &tof) {
  const std::size_t nb = std::size_t(tof.num_bins);
  std::vector<double> out(lors.size() * nb);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const auto row = forward_tof_lor(g, image, lors.start(i), lors.end(i), tof.of(i));
    std::copy(row.begin(), row.end(), out.begin() + std::ptrdiff_t(i * nb));
  }
  return out;
}

/// List-mode: the sinogram value of LOR i at bin bins[i] (0 outside
/// [0, N-1]).
template <class I, class L, class B>
std::vector<double> forward_tof_lm(const grid &g, const I *image, const lor_set<L> &lors,
                                   const B *bins, const tof_setup &tof) {
  std::vector<double> out(lors.size(), 0.0);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const std::int64_t j = std::int64_t(bins[i]);
    if (j < 0 || j >= tof.num_bins)
      continue;
    out[i] =
        forward_tof_lor(g, image, lors.start(i), lors.end(i), tof.of(i))[std::size_t(j)];
  }
  return out;
}

/// Transpose of forward_tof_sino, into a zeroed float64 image.
template <class L, class V>
std::vector<double> back_tof_sino(const grid &g, const lor_set<L> &lors, const V *values,
                                  const tof_setup &tof) {
  std::vector<double> image(std::size_t(g.num_voxels()), 0.0);
  const std::size_t nb = std::size_t(tof.num_bins);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const tof_lor_params p = tof.of(i);
    for_each_plane(g, lors.start(i), lors.end(i), [&](const plane_sample &smp) {
      double sum = 0;
      for_each_tof_weight(p, smp.s, [&](std::int64_t j, double w) {
        sum += double(values[i * nb + std::size_t(j)]) * w;
      });
      for (int k = 0; k < smp.count; ++k)
        image[std::size_t(smp.voxel[k])] += sum * smp.weight[k];
    });
  }
  return image;
}

/// Transpose of forward_tof_lm, into a zeroed float64 image.
template <class L, class B, class V>
std::vector<double> back_tof_lm(const grid &g, const lor_set<L> &lors, const B *bins,
                                const V *values, const tof_setup &tof) {
  std::vector<double> image(std::size_t(g.num_voxels()), 0.0);
  for (std::size_t i = 0; i < lors.size(); ++i) {
    const std::int64_t bin = std::int64_t(bins[i]);
    if (bin < 0 || bin >= tof.num_bins)
      continue;
    const tof_lor_params p = tof.of(i);
    for_each_plane(g, lors.start(i), lors.end(i), [&](const plane_sample &smp) {
      double w_bin = 0;
      for_each_tof_weight(p, smp.s, [&](std::int64_t j, double w) {
        if (j == bin)
          w_bin = w;
      });
      for (int k = 0; k < smp.count; ++k)
        image[std::size_t(smp.voxel[k])] += double(values[i]) * w_bin * smp.weight[k];
    });
  }
  return image;
}

} // namespace ref

/// Row-wise comparison of a TOF sinogram with a reference: a LOR whose row
/// differs by more than `threshold` relative (||row diff|| / max of the
/// row norms) took another discrete decision (plane or window edge) and is
/// counted as flipped; the norm error is over the other rows.
template <class T>
lor_comparison compare_tof_rows(const std::vector<T> &out, const std::vector<double> &ref,
                                std::size_t num_bins, double threshold = flip_threshold) {
  lor_comparison c;
  EXPECT_EQ(out.size(), ref.size());
  const std::size_t n = std::min(out.size(), ref.size()) / num_bins;
  c.n = n;
  double num_all = 0, den_all = 0, num_kept = 0, den_kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double d2 = 0, o2 = 0, r2 = 0;
    for (std::size_t j = i * num_bins; j < (i + 1) * num_bins; ++j) {
      const double d = double(out[j]) - ref[j];
      d2 += d * d;
      o2 += double(out[j]) * double(out[j]);
      r2 += ref[j] * ref[j];
    }
    if (r2 != 0)
      ++c.num_nonzero_ref;
    num_all += d2;
    den_all += r2;
    const double scale = std::sqrt(std::max(o2, r2));
    const double rel = scale > 0 ? std::sqrt(d2) / scale : 0.0;
    if (!(rel <= threshold)) {
      c.flipped.push_back(i);
      continue;
    }
    num_kept += d2;
    den_kept += r2;
    if (rel > c.max_rel_diff_kept) {
      c.max_rel_diff_kept = rel;
      c.worst_kept = i;
    }
  }
  c.rel_error_all = den_all > 0 ? std::sqrt(num_all / den_all) : std::sqrt(num_all);
  c.rel_error_kept = den_kept > 0 ? std::sqrt(num_kept / den_kept) : std::sqrt(num_kept);
  return c;
}

} // namespace resproj_test
