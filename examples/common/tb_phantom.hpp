/// @file
/// @brief The phantom of the total-body problem `tb-lm-osem`
/// (docs/benchmark-problems.md): a 1.8 m elliptic water cylinder with six
/// spheres along its length, its voxelised activity and attenuation (mu)
/// images, and its regions of interest (sphere, background, background
/// variability discs) with the contrast figures measured in them.
/// Standard library and resproj only.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "phantom.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

namespace resproj_examples {

/// The `tb-lm-osem` phantom (mm, image axes 0, 1, 2 = x, y, z): a water
/// cylinder along z with an elliptic cross section of semi-axes 180 (x)
/// and 120 (y), 1800 long, centred on the origin, activity 1, mu
/// 0.0096 / mm; six spheres centred at x = 60, y = 0 and z = -750, -450,
/// -150, 150, 450, 750 with diameters 10, 13, 17, 22, 28, 37, the four
/// smallest hot (4 x the background), the two largest cold (0). Spheres
/// replace the body's activity, not its mu.
struct tb_phantom {
  double semi_axis0 = 180, semi_axis1 = 120;
  double length = 1800; ///< along axis 2
  double background = 1;
  double hot_ratio = 4;
  double water_mu = 0.0096; ///< attenuation of water, 1/mm
  std::vector<sphere> spheres;

  /// The phantom of the problem definition.
  static tb_phantom make() {
    tb_phantom p;
    const double diameters[6] = {10, 13, 17, 22, 28, 37};
    const double z[6] = {-750, -450, -150, 150, 450, 750};
    for (int k = 0; k < 6; ++k) {
      const bool hot = k < 4;
      p.spheres.push_back(
          {{60.0, 0.0, z[k]}, diameters[k], hot ? p.hot_ratio * p.background : 0.0, hot});
    }
    return p;
  }

  /// Inside the elliptic cross section (any z).
  bool in_cross_section(const double x[3]) const {
    const double u = x[0] / semi_axis0, v = x[1] / semi_axis1;
    return u * u + v * v <= 1.0;
  }
  /// Inside the cylinder's axial extent `|z| <= length / 2`.
  bool in_length(double z) const { return std::abs(z) <= 0.5 * length; }
  /// Inside the cylinder.
  bool in_body(const double x[3]) const { return in_cross_section(x) && in_length(x[2]); }
  /// Activity at point x (spheres override the body).
  double activity(const double x[3]) const {
    for (const sphere &s : spheres)
      if (nema_phantom::in_sphere(s, x, 0.0))
        return s.activity;
    return in_body(x) ? background : 0.0;
  }
  /// Attenuation at point x: water inside the body, 0 outside.
  double mu(const double x[3]) const { return in_body(x) ? water_mu : 0.0; }

  /// Analytic volume of the cylinder, `pi a b length` (mm^3).
  double body_volume() const {
    return 3.14159265358979323846 * semi_axis0 * semi_axis1 * length;
  }
  /// Analytic total activity (activity x mm^3): the body's plus each
  /// sphere's `(activity - background) x volume` (every sphere lies inside
  /// the body).
  double total_activity() const {
    double a = background * body_volume();
    for (const sphere &s : spheres)
      a += (s.activity - background) * 3.14159265358979323846 / 6.0 * s.diameter *
           s.diameter * s.diameter;
    return a;
  }
};

namespace detail {

// Coordinate of sub-sample a (of `sub`) of voxel i along one axis, as
// `sample_image` places it.
inline double tb_sample_coordinate(double origin, double voxel, std::int64_t i, int a,
                                   int sub) {
  return origin + voxel * (double(i) + (a + 0.5) / sub - 0.5);
}

// The phantom's `value` (activity or mu) voxelised with `sub^3` samples per
// voxel. The cylinder is separable (cross section x axial extent), so its
// sample count is the product of a per-column and a per-slice count; only
// voxels near a sphere are sampled point by point, with `spheres_value`.
template <class T, class F>
std::vector<T> tb_voxelise(const tb_phantom &p, const resproj::image_geometry &g, int sub,
                           double body_value, bool with_spheres, F &&spheres_value) {
  if (sub < 1 || sub > 64)
    resproj::detail::throw_invalid("sub", "must be in [1, 64]");
  const auto &n = g.shape();
  const auto &o = g.origin();
  const auto &h = g.voxel_size();
  const std::size_t n0 = std::size_t(n[0]), n1 = std::size_t(n[1]),
                    n2 = std::size_t(n[2]);
  std::vector<int> column(n0 * n1, 0), slice(n2, 0);
  for (std::size_t i0 = 0; i0 < n0; ++i0)
    for (std::size_t i1 = 0; i1 < n1; ++i1)
      for (int a = 0; a < sub; ++a)
        for (int b = 0; b < sub; ++b) {
          const double x[3] = {tb_sample_coordinate(o[0], h[0], std::int64_t(i0), a, sub),
                               tb_sample_coordinate(o[1], h[1], std::int64_t(i1), b, sub),
                               0.0};
          column[i0 * n1 + i1] += p.in_cross_section(x) ? 1 : 0;
        }
  for (std::size_t i2 = 0; i2 < n2; ++i2)
    for (int c = 0; c < sub; ++c)
      slice[i2] +=
          p.in_length(tb_sample_coordinate(o[2], h[2], std::int64_t(i2), c, sub)) ? 1 : 0;
  const double w = 1.0 / (double(sub) * sub * sub);
  std::vector<T> img(n0 * n1 * n2);
  const std::int64_t rows = std::int64_t(n0 * n1);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t r = 0; r < rows; ++r) {
    const double cw = body_value * double(column[std::size_t(r)]) * w;
    T *out = img.data() + std::size_t(r) * n2;
    for (std::size_t i2 = 0; i2 < n2; ++i2)
      out[i2] = T(cw * double(slice[i2]));
  }
  if (!with_spheres)
    return img;
  for (const sphere &s : p.spheres) {
    std::int64_t lo[3], hi[3];
    for (std::size_t k = 0; k < 3; ++k) {
      const double r = 0.5 * s.diameter;
      lo[k] = std::max<std::int64_t>(
          0, std::int64_t(std::floor((s.centre[k] - r - o[k]) / h[k])) - 1);
      hi[k] = std::min<std::int64_t>(
          n[k] - 1, std::int64_t(std::ceil((s.centre[k] + r - o[k]) / h[k])) + 1);
    }
    for (std::int64_t i0 = lo[0]; i0 <= hi[0]; ++i0)
      for (std::int64_t i1 = lo[1]; i1 <= hi[1]; ++i1)
        for (std::int64_t i2 = lo[2]; i2 <= hi[2]; ++i2) {
          double acc = 0;
          for (int a = 0; a < sub; ++a)
            for (int b = 0; b < sub; ++b)
              for (int c = 0; c < sub; ++c) {
                const double x[3] = {tb_sample_coordinate(o[0], h[0], i0, a, sub),
                                     tb_sample_coordinate(o[1], h[1], i1, b, sub),
                                     tb_sample_coordinate(o[2], h[2], i2, c, sub)};
                acc += spheres_value(x);
              }
          img[std::size_t((i0 * n[1] + i1) * n[2] + i2)] = T(acc * w);
        }
  }
  return img;
}

} // namespace detail

/// The phantom's activity image on `g`: each voxel the mean of the
/// activity over `sub^3` points (as `sample_image`; equal to it up to
/// rounding), computed in O(voxels) however large the image.
/// @throws resproj::invalid_argument ("sub") unless 1 <= sub <= 64.
template <class T>
std::vector<T> tb_activity_image(const tb_phantom &p, const resproj::image_geometry &g,
                                 int sub = 3) {
  return detail::tb_voxelise<T>(p, g, sub, p.background, true,
                                [&p](const double x[3]) { return p.activity(x); });
}

/// The phantom's mu-map (1/mm) on `g`, sampled as `tb_activity_image`.
/// @throws resproj::invalid_argument ("sub") unless 1 <= sub <= 64.
template <class T>
std::vector<T> tb_mu_image(const tb_phantom &p, const resproj::image_geometry &g,
                           int sub = 3) {
  return detail::tb_voxelise<T>(p, g, sub, p.water_mu, false,
                                [](const double *) { return 0.0; });
}

/// Regions of interest of one sphere, as voxel indices of the image
/// (`(i0 * n1 + i1) * n2 + i2`).
struct tb_sphere_rois {
  /// Voxel centres inside the sphere. (The NEMA phantom's rule takes the
  /// sphere's disc over the slices near its centre plane, which includes
  /// background; the sphere itself keeps the ROI true to the phantom, so a
  /// perfect image scores a contrast of 1.)
  std::vector<std::int64_t> sphere;
  /// The slice nearest the sphere's centre: voxel centres inside the
  /// body's ellipse with both semi-axes reduced by `margin` (15% of the
  /// smaller semi-axis, 18 mm) and at least `margin` from the sphere's
  /// disc in its centre plane.
  std::vector<std::int64_t> background;
  /// The same slice: discs of the largest sphere's diameter (37 mm) centred
  /// 0.7 x the smaller semi-axis (84 mm) from the axis at angles
  /// (k + 0.5) x 30 degrees, k = 0 .. 11, leaving out those that touch
  /// the sphere.
  std::vector<std::vector<std::int64_t>> variability_discs;
};

/// The regions of interest of sphere `index` of `p` on `g`: the rules of
/// `measure_quality` for the NEMA phantom, applied to each sphere in its
/// own slice, except for the sphere ROI itself.
/// @throws resproj::invalid_argument ("index") if out of range.
inline tb_sphere_rois tb_rois(const tb_phantom &p, const resproj::image_geometry &g,
                              std::size_t index) {
  if (index >= p.spheres.size())
    resproj::detail::throw_invalid("index", "no such sphere");
  const sphere &s = p.spheres[index];
  const auto &n = g.shape();
  const auto &o = g.origin();
  const auto &h = g.voxel_size();
  auto voxel = [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    return (i0 * n[1] + i1) * n[2] + i2;
  };
  tb_sphere_rois r;
  std::int64_t k2 = std::int64_t(std::lround((s.centre[2] - o[2]) / h[2]));
  k2 = std::min<std::int64_t>(std::max<std::int64_t>(k2, 0), n[2] - 1);
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
      const double x = o[0] + h[0] * double(i0), y = o[1] + h[1] * double(i1);
      const double in_plane[3] = {x, y, s.centre[2]};
      if (!nema_phantom::in_sphere(s, in_plane, 0.0))
        continue;
      for (std::int64_t i2 = 0; i2 < n[2]; ++i2) {
        const double c[3] = {x, y, o[2] + h[2] * double(i2)};
        if (nema_phantom::in_sphere(s, c, 0.0))
          r.sphere.push_back(voxel(i0, i1, i2));
      }
    }
  const double margin = 0.15 * std::min(p.semi_axis0, p.semi_axis1);
  const double z = o[2] + h[2] * double(k2);
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
      const double x[3] = {o[0] + h[0] * double(i0), o[1] + h[1] * double(i1), z};
      const double u = x[0] / (p.semi_axis0 - margin), v = x[1] / (p.semi_axis1 - margin);
      if (u * u + v * v > 1.0 || !p.in_length(z))
        continue;
      const double x_plane[3] = {x[0], x[1], s.centre[2]};
      if (nema_phantom::in_sphere(s, x_plane, -margin))
        continue;
      r.background.push_back(voxel(i0, i1, k2));
    }
  double largest = 0;
  for (const sphere &t : p.spheres)
    largest = std::max(largest, t.diameter);
  const double ring = 0.7 * std::min(p.semi_axis0, p.semi_axis1);
  const double pi = 3.14159265358979323846;
  for (int k = 0; k < 12; ++k) {
    const double a = 2 * pi * (k + 0.5) / 12.0;
    const sphere disc{{ring * std::cos(a), ring * std::sin(a), z}, largest, 0, false};
    if (std::hypot(disc.centre[0] - s.centre[0], disc.centre[1] - s.centre[1]) <
        0.5 * (s.diameter + disc.diameter))
      continue;
    std::vector<std::int64_t> roi;
    for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
      for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
        const double x[3] = {o[0] + h[0] * double(i0), o[1] + h[1] * double(i1), z};
        if (nema_phantom::in_sphere(disc, x, 0.0))
          roi.push_back(voxel(i0, i1, k2));
      }
    if (!roi.empty())
      r.variability_discs.push_back(std::move(roi));
  }
  return r;
}

/// Image quality at one sphere of the phantom.
struct tb_sphere_quality {
  double diameter = 0;               ///< mm
  bool hot = false;                  ///< hot (true) or cold sphere
  double sphere_mean = 0;            ///< mean over the sphere ROI
  double background_mean = 0;        ///< mean over the background ROI
  double contrast = 0;               ///< see `measure_tb_quality`
  double background_variability = 0; ///< std / mean of the disc means
};

/// Contrast and background variability of a reconstruction `img` of `p`
/// on `g`, per sphere (phantom order) in the ROIs of `tb_rois`: hot
/// spheres give the contrast recovery `(sphere / background - 1) /
/// (ratio - 1)` (ratio = sphere activity / background activity), cold
/// ones the cold contrast `1 - sphere / background`; both are 1 for a
/// perfect image. Background variability: sample standard deviation /
/// mean of the variability discs' means.
/// @throws resproj::invalid_argument ("img") if its size is not the
///         geometry's.
template <class T>
std::vector<tb_sphere_quality> measure_tb_quality(const tb_phantom &p,
                                                  const resproj::image_geometry &g,
                                                  const std::vector<T> &img) {
  if (img.size() != std::size_t(g.num_voxels()))
    resproj::detail::throw_invalid("img", "size does not match the geometry");
  auto mean_of = [&img](const std::vector<std::int64_t> &roi) {
    double sum = 0;
    for (const std::int64_t v : roi)
      sum += double(img[std::size_t(v)]);
    return roi.empty() ? 0.0 : sum / double(roi.size());
  };
  std::vector<tb_sphere_quality> out;
  for (std::size_t i = 0; i < p.spheres.size(); ++i) {
    const sphere &s = p.spheres[i];
    const tb_sphere_rois rois = tb_rois(p, g, i);
    tb_sphere_quality q;
    q.diameter = s.diameter;
    q.hot = s.hot;
    q.sphere_mean = mean_of(rois.sphere);
    q.background_mean = mean_of(rois.background);
    const double ratio = s.activity / p.background;
    if (q.background_mean > 0) {
      const double c = q.sphere_mean / q.background_mean;
      q.contrast = s.hot ? (ratio != 1 ? (c - 1.0) / (ratio - 1.0) : 0.0) : 1.0 - c;
    }
    std::vector<double> means;
    for (const auto &disc : rois.variability_discs)
      means.push_back(mean_of(disc));
    if (means.size() > 1) {
      double m = 0, v = 0;
      for (const double x : means)
        m += x;
      m /= double(means.size());
      for (const double x : means)
        v += (x - m) * (x - m);
      v /= double(means.size() - 1);
      q.background_variability = m > 0 ? std::sqrt(v) / m : 0.0;
    }
    out.push_back(q);
  }
  return out;
}

} // namespace resproj_examples
