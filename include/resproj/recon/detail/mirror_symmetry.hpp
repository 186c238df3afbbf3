/// @file
/// @brief Mirror flips shared by a polygon scanner, a centred image grid and
/// a mu-map, for the all-LOR sensitivity image
/// (docs/all-lor-sensitivity.md, "Mirror flips"): which image axes can be
/// flipped, the crystal permutations of the transaxial flips, and adding a
/// flipped copy of an image. Standard library only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {
namespace detail {

/// The flips of an all-LOR sum that leave every LOR weight unchanged.
struct mirror_symmetry {
  bool flip[3] = {false, false, false}; ///< image axes whose flip is used
  /// Crystal permutations of the transaxial flips used, identity first
  /// (1, 2 or 4 of them: the group they form).
  std::vector<std::vector<int>> crystal_maps;
  bool axial = false; ///< the flip along the scanner axis is used
  int num_flips() const noexcept { return int(flip[0]) + int(flip[1]) + int(flip[2]); }
};

/// True if `g` is centred along axis k (voxel i mirrors to n - 1 - i).
inline bool grid_centred(const image_geometry &g, int k) {
  const std::size_t a = std::size_t(k);
  return std::fabs(g.origin()[a] + 0.5 * double(g.shape()[a] - 1) * g.voxel_size()[a]) <=
         1e-9 * g.voxel_size()[a];
}

/// Calls `f(offset, mirrored offset)` for every voxel of `g` with voxel
/// index i along axis k mirrored to n - 1 - i.
template <class F> void for_each_mirrored(const image_geometry &g, int k, F &&f) {
  const auto &n = g.shape();
  std::int64_t o = 0;
  for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
    for (std::int64_t i1 = 0; i1 < n[1]; ++i1) {
      const std::int64_t j0 = k == 0 ? n[0] - 1 - i0 : i0;
      const std::int64_t j1 = k == 1 ? n[1] - 1 - i1 : i1;
      const std::int64_t row = (j0 * n[1] + j1) * n[2];
      if (k == 2)
        for (std::int64_t i2 = 0; i2 < n[2]; ++i2, ++o)
          f(o, row + n[2] - 1 - i2);
      else
        for (std::int64_t i2 = 0; i2 < n[2]; ++i2, ++o)
          f(o, row + i2);
    }
}

/// True if `mu` (empty: none) equals its mirror image along axis k bitwise.
inline bool mirror_invariant(const image_geometry &g, span<const float> mu, int k) {
  bool same = true;
  if (!mu.empty())
    for_each_mirrored(g, k, [&](std::int64_t o, std::int64_t m) {
      same = same && mu[std::size_t(o)] == mu[std::size_t(m)];
    });
  return same;
}

/// The crystal permutation that negates image axis `k` of the crystal
/// centres (ring 0 of `centres`, `nc` crystals) and keeps the other
/// coordinates, to 1e-5 of the largest coordinate; empty if there is none.
inline std::vector<int> crystal_mirror(const std::vector<float> &centres, int nc, int k) {
  double size = 0;
  for (int c = 0; c < nc; ++c)
    for (int a = 0; a < 3; ++a)
      size = std::max(size, std::fabs(double(centres[std::size_t(3 * c + a)])));
  const double tol = 1e-5 * size;
  std::vector<int> map(std::size_t(nc), -1);
  for (int c = 0; c < nc; ++c) {
    const float *p = &centres[std::size_t(3 * c)];
    for (int d = 0; d < nc && map[std::size_t(c)] < 0; ++d) {
      const float *q = &centres[std::size_t(3 * d)];
      bool match = true;
      for (int a = 0; a < 3; ++a)
        match = match &&
                std::fabs(double(q[a]) - (a == k ? -double(p[a]) : double(p[a]))) <= tol;
      if (match)
        map[std::size_t(c)] = d;
    }
    if (map[std::size_t(c)] < 0)
      return {};
  }
  return map;
}

/// True if a detector inside the box of `g` or of `gp` (the padded grid)
/// has its coordinate along axis k exactly on a plane (its fractional voxel
/// index, formed in float as the projector forms it, is an integer).
/// Joseph's plane rule keeps the plane at the exit and drops the one at the
/// entry, so a LOR ending there and its mirror image sample different
/// planes. (A LOR whose end is outside the box enters through a face.)
inline bool ends_on_a_plane(const std::vector<float> &centres, const image_geometry &g,
                            const image_geometry &gp, int k) {
  for (const image_geometry *q : {&g, &gp}) {
    const float origin = float(q->origin()[std::size_t(k)]);
    const float voxel = float(q->voxel_size()[std::size_t(k)]);
    for (std::size_t i = 0; i < centres.size(); i += 3) {
      bool inside = true;
      for (int a = 0; a < 3; ++a)
        inside = inside && double(centres[i + std::size_t(a)]) >= q->box_min(a) &&
                 double(centres[i + std::size_t(a)]) <= q->box_max(a);
      const float f = (centres[i + std::size_t(k)] - origin) / voxel;
      if (inside && f == std::floor(f))
        return true;
    }
  }
  return false;
}

/// The flips of image axes that map the scanner's crystals onto crystals,
/// its rings onto rings, the grid and `mu` onto themselves, and along
/// which no detector lies on a plane of `g` or `gp` (the padded grid).
inline mirror_symmetry find_mirror_symmetry(const scanner::polygon_scanner &s,
                                            const image_geometry &g,
                                            const image_geometry &gp,
                                            span<const float> mu,
                                            const std::vector<float> &centres) {
  mirror_symmetry m;
  const int ax = s.axis(), nc = s.crystals_per_ring();
  m.crystal_maps.emplace_back();
  m.crystal_maps[0].resize(std::size_t(nc));
  for (int c = 0; c < nc; ++c)
    m.crystal_maps[0][std::size_t(c)] = c;
  for (const int k : {(ax + 1) % 3, (ax + 2) % 3}) {
    if (!grid_centred(g, k) || !mirror_invariant(g, mu, k) ||
        ends_on_a_plane(centres, g, gp, k))
      continue;
    std::vector<int> map = crystal_mirror(centres, nc, k);
    if (map.empty())
      continue;
    m.flip[k] = true;
    const std::size_t before = m.crystal_maps.size();
    for (std::size_t e = 0; e < before; ++e) {
      std::vector<int> product;
      product.resize(std::size_t(nc));
      for (int c = 0; c < nc; ++c)
        product[std::size_t(c)] = map[std::size_t(m.crystal_maps[e][std::size_t(c)])];
      m.crystal_maps.push_back(std::move(product));
    }
  }
  const auto &z = s.ring_z();
  bool rings = true;
  for (std::size_t r = 0; r < z.size(); ++r)
    rings = rings && std::fabs(z[r] + z[z.size() - 1 - r]) <=
                         1e-9 * g.voxel_size()[std::size_t(ax)];
  m.axial = rings && grid_centred(g, ax) && mirror_invariant(g, mu, ax) &&
            !ends_on_a_plane(centres, g, gp, ax);
  m.flip[ax] = m.axial;
  return m;
}

/// `image += image` mirrored along axis k (`image` on `g`).
inline void add_mirror_image(std::vector<double> &image, const image_geometry &g, int k) {
  for_each_mirrored(g, k, [&](std::int64_t o, std::int64_t m) {
    if (o < m) {
      const double sum = image[std::size_t(o)] + image[std::size_t(m)];
      image[std::size_t(o)] = image[std::size_t(m)] = sum;
    } else if (o == m) {
      image[std::size_t(o)] *= 2;
    }
  });
}

} // namespace detail
} // namespace recon
RESPROJ_NAMESPACE_END
