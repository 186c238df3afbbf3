/// @file
/// @brief LOR end points of sinogram bins (`sinogram_lors`): the crystal
/// positions of the bins of given views and planes of a span-1 sinogram,
/// in `[plane][view][radial]` order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram_layout.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

namespace detail {

/// Checks that `layout` is a consistent span-1 layout of `scanner`, that
/// `views` are valid views and that the plane range lies in the layout.
inline void check_sinogram_request(const polygon_scanner &scanner,
                                   const sinogram_layout &layout,
                                   const std::vector<int> &views, int first_plane,
                                   int num_planes) {
  using resproj::detail::throw_invalid;
  const int n = scanner.crystals_per_ring();
  if (layout.crystals_per_ring != n || layout.num_rings != scanner.num_rings())
    throw_invalid("layout", "was made for another scanner (" +
                                std::to_string(layout.crystals_per_ring) +
                                " crystals x " + std::to_string(layout.num_rings) +
                                " rings, scanner has " + std::to_string(n) + " x " +
                                std::to_string(scanner.num_rings()) + ")");
  if (layout.num_views * 2 != n || layout.radial_trim < 0 ||
      layout.num_radial != n + 1 - 2 * layout.radial_trim || layout.num_radial < 1)
    throw_invalid("layout", "inconsistent num_views, num_radial and "
                            "radial_trim (make it with span1_sinogram)");
  for (std::size_t i = 0; i < views.size(); ++i)
    if (views[i] < 0 || views[i] >= layout.num_views)
      throw_invalid("views[" + std::to_string(i) + "]",
                    "must be in [0, " + std::to_string(layout.num_views) + ") (got " +
                        std::to_string(views[i]) + ")");
  if (first_plane < 0 || first_plane > layout.num_planes())
    throw_invalid("first_plane", "must be in [0, " + std::to_string(layout.num_planes()) +
                                     "] (got " + std::to_string(first_plane) + ")");
  if (num_planes < 0 || num_planes > layout.num_planes() - first_plane)
    throw_invalid("num_planes", "must be in [0, " +
                                    std::to_string(layout.num_planes() - first_plane) +
                                    "] (got " + std::to_string(num_planes) + ")");
  for (int p = first_plane; p < first_plane + num_planes; ++p) {
    const auto &rings = layout.planes[std::size_t(p)];
    if (rings.first < 0 || rings.first >= layout.num_rings || rings.second < 0 ||
        rings.second >= layout.num_rings)
      throw_invalid("layout.planes[" + std::to_string(p) + "]", "ring out of range");
  }
}

} // namespace detail

/// Number of LORs `sinogram_lors` writes: num_planes * num_views *
/// layout.num_radial.
inline std::size_t sinogram_lor_count(const sinogram_layout &layout,
                                      std::size_t num_views,
                                      std::size_t num_planes) noexcept {
  return num_planes * num_views * std::size_t(layout.num_radial);
}

/// Writes the end points of the LORs of planes `[first_plane, first_plane +
/// num_planes)` and the given views (in the order given) into `starts` and
/// `ends` (xyz triplets, the layout of `lor_view`). LOR order is
/// `[plane][view][radial]`: LOR `(p * views.size() + i) * num_radial + r`
/// (p counted from `first_plane`) joins crystal
/// `layout.crystal_pair(views[i], r).first` of ring
/// `layout.planes[first_plane + p].first` to crystal `.second` of ring
/// `.second`. Coordinates are computed in double and rounded once to T.
/// @throws invalid_argument if the layout does not match the scanner, a
///         view or the plane range is out of range, or a span is too small
///         (nothing is written then).
template <class T>
void sinogram_lors(const polygon_scanner &scanner, const sinogram_layout &layout,
                   const std::vector<int> &views, int first_plane, int num_planes,
                   span<T> starts, span<T> ends) {
  detail::check_sinogram_request(scanner, layout, views, first_plane, num_planes);
  const std::size_t nr = std::size_t(layout.num_radial);
  const std::size_t per_plane = views.size() * nr;
  const std::size_t count =
      sinogram_lor_count(layout, views.size(), std::size_t(num_planes));
  resproj::detail::check_span(starts, 3 * count, "starts");
  resproj::detail::check_span(ends, 3 * count, "ends");
  if (count == 0)
    return;

  // End points of every (view, radial) bin in ring 0, shared by all planes;
  // each plane then replaces the axial coordinate (image axis
  // scanner.axis()) by its rings' positions.
  const int n = scanner.crystals_per_ring();
  std::vector<T> crystal_xyz(3 * static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c) {
    const auto p = scanner.crystal_position(0, c);
    for (std::size_t k = 0; k < 3; ++k)
      crystal_xyz[3 * std::size_t(c) + k] = T(p[k]);
  }
  std::vector<T> start_xyz(3 * per_plane), end_xyz(3 * per_plane);
  for (std::size_t i = 0; i < views.size(); ++i)
    for (std::size_t r = 0; r < nr; ++r) {
      int c_start, c_end;
      detail::span1_crystal_pair(n, layout.radial_trim, views[i], int(r), c_start, c_end);
      const std::size_t j = i * nr + r;
      for (std::size_t k = 0; k < 3; ++k) {
        start_xyz[3 * j + k] = crystal_xyz[3 * std::size_t(c_start) + k];
        end_xyz[3 * j + k] = crystal_xyz[3 * std::size_t(c_end) + k];
      }
    }

  const auto &ring_z = scanner.ring_z();
  const std::size_t ax = std::size_t(scanner.axis());
  for (int p = 0; p < num_planes; ++p) {
    const auto &rings = layout.planes[std::size_t(first_plane + p)];
    const T z_start = T(ring_z[std::size_t(rings.first)]);
    const T z_end = T(ring_z[std::size_t(rings.second)]);
    T *s = starts.data() + 3 * std::size_t(p) * per_plane;
    T *e = ends.data() + 3 * std::size_t(p) * per_plane;
    for (std::size_t j = 0; j < 3 * per_plane; ++j) {
      s[j] = start_xyz[j];
      e[j] = end_xyz[j];
    }
    for (std::size_t j = 0; j < per_plane; ++j) {
      s[3 * j + ax] = z_start;
      e[3 * j + ax] = z_end;
    }
  }
}

/// As the span overload, resizing `starts` and `ends` to 3 * count values.
template <class T>
void sinogram_lors(const polygon_scanner &scanner, const sinogram_layout &layout,
                   const std::vector<int> &views, int first_plane, int num_planes,
                   std::vector<T> &starts, std::vector<T> &ends) {
  detail::check_sinogram_request(scanner, layout, views, first_plane, num_planes);
  const std::size_t count =
      sinogram_lor_count(layout, views.size(), std::size_t(num_planes));
  starts.resize(3 * count);
  ends.resize(3 * count);
  sinogram_lors(scanner, layout, views, first_plane, num_planes,
                span<T>(starts.data(), starts.size()), span<T>(ends.data(), ends.size()));
}

/// LORs of every plane of `layout` for the given views (see the span
/// overload for the order); resizes `starts` and `ends`.
template <class T>
void sinogram_lors(const polygon_scanner &scanner, const sinogram_layout &layout,
                   const std::vector<int> &views, std::vector<T> &starts,
                   std::vector<T> &ends) {
  sinogram_lors(scanner, layout, views, 0, layout.num_planes(), starts, ends);
}

} // namespace scanner
RESPROJ_NAMESPACE_END
