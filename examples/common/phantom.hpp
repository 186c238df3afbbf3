/// @file
/// @brief A NEMA IEC body-like phantom for the reconstruction examples: a
/// warm elliptic body with four hot spheres (4:1) and two cold ones on a
/// ring in the central slice plane, its attenuation (mu) map, and the
/// image-quality metrics of the NEMA test (contrast recovery of the hot
/// spheres, background variability). Standard library and resproj only.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

namespace resproj_examples {

/// One sphere of the phantom (mm, image axes 0, 1, 2).
struct sphere {
  std::array<double, 3> centre;
  double diameter;
  double activity; ///< absolute activity inside the sphere
  bool hot;        ///< hot (activity > background) or cold (0)
};

/// The phantom's shapes. Lengths in mm, scaled by `scale` from the NEMA
/// IEC body phantom: body an ellipse of semi-axes 150 x 115 mm (axes 0 and
/// 1) over the whole axial extent of the image, background activity 1;
/// spheres of diameter 10, 13, 17, 22 (hot, activity `hot_ratio`) and 28,
/// 37 mm (cold, 0) with centres 57.2 mm from the axis, 60 degrees apart,
/// in the plane axis 2 = `z_centre`.
struct nema_phantom {
  double semi_axis0 = 150, semi_axis1 = 115;
  double background = 1;
  double hot_ratio = 4;
  double water_mu = 0.0096; ///< attenuation of water, 1/mm
  std::vector<sphere> spheres;

  /// The phantom scaled by `scale` (1 = NEMA size), spheres in the plane
  /// axis 2 = `z_centre`.
  /// @throws resproj::invalid_argument ("scale") unless finite and > 0.
  static nema_phantom make(double scale = 1.0, double z_centre = 0.0) {
    if (!std::isfinite(scale) || !(scale > 0))
      resproj::detail::throw_invalid("scale", "must be finite and > 0");
    nema_phantom p;
    p.semi_axis0 *= scale;
    p.semi_axis1 *= scale;
    const double diameters[6] = {10, 13, 17, 22, 28, 37};
    const double pi = 3.14159265358979323846;
    for (int k = 0; k < 6; ++k) {
      const double angle = pi / 3.0 * k;
      const double r = 57.2 * scale;
      const bool hot = k < 4;
      p.spheres.push_back({{r * std::cos(angle), r * std::sin(angle), z_centre},
                           diameters[k] * scale,
                           hot ? p.hot_ratio * p.background : 0.0,
                           hot});
    }
    return p;
  }

  /// Activity at point x (spheres override the body).
  double activity(const double x[3]) const {
    for (const sphere &s : spheres)
      if (in_sphere(s, x, 0.0))
        return s.activity;
    return in_body(x) ? background : 0.0;
  }
  /// Attenuation at point x: water inside the body, 0 outside.
  double mu(const double x[3]) const { return in_body(x) ? water_mu : 0.0; }

  bool in_body(const double x[3]) const {
    const double u = x[0] / semi_axis0, v = x[1] / semi_axis1;
    return u * u + v * v <= 1.0;
  }
  /// Inside sphere `s` shrunk (margin > 0) or grown (< 0) by `margin` mm.
  static bool in_sphere(const sphere &s, const double x[3], double margin) {
    const double r = 0.5 * s.diameter - margin;
    double d2 = 0;
    for (int k = 0; k < 3; ++k)
      d2 += (x[k] - s.centre[k]) * (x[k] - s.centre[k]);
    return r > 0 && d2 <= r * r;
  }
};

/// Samples `f(x)` on `geometry` by averaging it over `sub^3` points per
/// voxel (supersampled inside tests give partial-volume values).
template <class T, class F>
std::vector<T> sample_image(const resproj::image_geometry &geometry, F &&f, int sub = 3) {
  const auto &n = geometry.shape();
  const auto &o = geometry.origin();
  const auto &h = geometry.voxel_size();
  std::vector<T> img(std::size_t(geometry.num_voxels()));
  const double w = 1.0 / (double(sub) * sub * sub);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic)
#endif
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1)
      for (std::int64_t i2 = 0; i2 < n[2]; ++i2) {
        double acc = 0;
        for (int a = 0; a < sub; ++a)
          for (int b = 0; b < sub; ++b)
            for (int c = 0; c < sub; ++c) {
              const double x[3] = {o[0] + h[0] * (double(i0) + (a + 0.5) / sub - 0.5),
                                   o[1] + h[1] * (double(i1) + (b + 0.5) / sub - 0.5),
                                   o[2] + h[2] * (double(i2) + (c + 0.5) / sub - 0.5)};
              acc += f(x);
            }
        img[std::size_t((i0 * n[1] + i1) * n[2] + i2)] = T(acc * w);
      }
  return img;
}

/// The phantom's activity image on `geometry`.
template <class T>
std::vector<T> activity_image(const nema_phantom &p, const resproj::image_geometry &g) {
  return sample_image<T>(g, [&p](const double x[3]) { return p.activity(x); });
}
/// The phantom's mu-map (1/mm) on `geometry`.
template <class T>
std::vector<T> mu_image(const nema_phantom &p, const resproj::image_geometry &g) {
  return sample_image<T>(g, [&p](const double x[3]) { return p.mu(x); });
}

/// NEMA-style image quality of a reconstruction.
struct quality {
  std::vector<double> contrast_recovery; ///< per hot sphere, in phantom order
  std::vector<double> sphere_diameter;   ///< mm, per hot sphere
  double background_variability = 0;     ///< std / mean of the background ROIs
  double background_mean = 0;
};

/// Contrast recovery of each hot sphere, (mean in sphere ROI / mean in
/// background - 1) / (true ratio - 1), with the sphere ROI = voxel centres
/// inside the sphere (in its plane +- half a sphere radius) and the
/// background = voxels of the body at least 15% of the body's smaller semi
/// axis from every sphere and from the body's edge, in the sphere plane's
/// slice. Background variability = std / mean over 12 background ROIs
/// (discs of the largest sphere's diameter placed on a ring of 0.7 x the
/// smaller semi axis, where they do not touch a sphere).
template <class T>
quality measure_quality(const nema_phantom &p, const resproj::image_geometry &g,
                        const std::vector<T> &img) {
  if (img.size() != std::size_t(g.num_voxels()))
    resproj::detail::throw_invalid("img", "size does not match the geometry");
  const auto &n = g.shape();
  const auto &o = g.origin();
  const auto &h = g.voxel_size();
  auto centre = [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, double x[3]) {
    x[0] = o[0] + h[0] * double(i0);
    x[1] = o[1] + h[1] * double(i1);
    x[2] = o[2] + h[2] * double(i2);
  };
  const double zc = p.spheres.empty() ? 0.0 : p.spheres[0].centre[2];
  std::int64_t k2 = std::int64_t(std::lround((zc - o[2]) / h[2]));
  k2 = k2 < 0 ? 0 : (k2 >= n[2] ? n[2] - 1 : k2);
  auto at = [&](std::int64_t i0, std::int64_t i1, std::int64_t i2) {
    return double(img[std::size_t((i0 * n[1] + i1) * n[2] + i2)]);
  };
  const double margin = 0.15 * std::min(p.semi_axis0, p.semi_axis1);
  // Background mean over the sphere plane's slice.
  double bsum = 0;
  std::int64_t bcount = 0;
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
      double x[3];
      centre(i0, i1, k2, x);
      const double u = x[0] / (p.semi_axis0 - margin), v = x[1] / (p.semi_axis1 - margin);
      if (u * u + v * v > 1.0)
        continue;
      bool near = false;
      for (const sphere &s : p.spheres)
        near = near || nema_phantom::in_sphere(s, x, -margin);
      if (near)
        continue;
      bsum += at(i0, i1, k2);
      ++bcount;
    }
  quality q;
  q.background_mean = bcount > 0 ? bsum / double(bcount) : 0.0;
  // Hot spheres.
  for (const sphere &s : p.spheres) {
    if (!s.hot)
      continue;
    double sum = 0;
    std::int64_t count = 0;
    for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
      for (std::int64_t i1 = 0; i1 < n[1]; ++i1)
        for (std::int64_t i2 = 0; i2 < n[2]; ++i2) {
          double x[3];
          centre(i0, i1, i2, x);
          if (std::abs(x[2] - s.centre[2]) > 0.25 * s.diameter + 0.5 * h[2])
            continue;
          const double x2[3] = {x[0], x[1], s.centre[2]};
          if (nema_phantom::in_sphere(s, x2, 0.0)) {
            sum += at(i0, i1, i2);
            ++count;
          }
        }
    const double mean = count > 0 ? sum / double(count) : 0.0;
    const double ratio = s.activity / p.background;
    q.contrast_recovery.push_back(q.background_mean > 0 && ratio != 1
                                      ? (mean / q.background_mean - 1.0) / (ratio - 1.0)
                                      : 0.0);
    q.sphere_diameter.push_back(s.diameter);
  }
  // Background variability over discs on a ring.
  double dmax = 0;
  for (const sphere &s : p.spheres)
    dmax = std::max(dmax, s.diameter);
  const double ring = 0.7 * std::min(p.semi_axis0, p.semi_axis1);
  std::vector<double> means;
  const double pi = 3.14159265358979323846;
  for (int k = 0; k < 12; ++k) {
    const double a = 2 * pi * (k + 0.5) / 12.0;
    const sphere roi{{ring * std::cos(a), ring * std::sin(a), zc}, dmax, 0, false};
    bool touches = false;
    for (const sphere &s : p.spheres) {
      double d2 = 0;
      for (int c = 0; c < 2; ++c)
        d2 += (s.centre[c] - roi.centre[c]) * (s.centre[c] - roi.centre[c]);
      touches = touches || std::sqrt(d2) < 0.5 * (s.diameter + roi.diameter);
    }
    if (touches)
      continue;
    double sum = 0;
    std::int64_t count = 0;
    for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
      for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
        double x[3];
        centre(i0, i1, k2, x);
        if (nema_phantom::in_sphere(roi, x, 0.0)) {
          sum += at(i0, i1, k2);
          ++count;
        }
      }
    if (count > 0)
      means.push_back(sum / double(count));
  }
  if (means.size() > 1) {
    double m = 0, v = 0;
    for (double x : means)
      m += x;
    m /= double(means.size());
    for (double x : means)
      v += (x - m) * (x - m);
    v /= double(means.size() - 1);
    q.background_variability = m > 0 ? std::sqrt(v) / m : 0.0;
  }
  return q;
}

} // namespace resproj_examples
