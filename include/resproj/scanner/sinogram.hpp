/// @file
/// @brief Span-1 sinograms of a `polygon_scanner`: bin-to-crystal map,
/// plane (ring pair) order, view subsets and LOR end point generation
/// (spec/benchmark-problems.md, "Sinogram").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

namespace detail {

/// Non-negative `a mod n` for n > 0.
RESPROJ_HD inline int positive_mod(int a, int n) noexcept {
  const int m = a % n;
  return m < 0 ? m + n : m;
}

/// Crystal pair (start, end) of sinogram bin (view, radial); unchecked.
/// With `n = crystals_per_ring`, `n/2` views and untrimmed radial position
/// `k = radial + radial_trim` in `0..n`:
/// start = `floor(k/2) - view` for k < n, `n/2 - view` for k == n;
/// end = `-1 - view` for k == 0, `-floor((k+3)/2) - view` for k >= 1;
/// both modulo n. Usable in device code. (At k == n - 1 both crystals
/// coincide; any radial_trim >= 2 drops that bin.)
RESPROJ_HD inline void span1_crystal_pair(int crystals_per_ring, int radial_trim,
                                          int view, int radial, int &start,
                                          int &end) noexcept {
  const int n = crystals_per_ring;
  const int k = radial + radial_trim;
  start = positive_mod((k < n ? k / 2 : n / 2) - view, n);
  end = positive_mod((k == 0 ? -1 : -((k + 3) / 2)) - view, n);
}

} // namespace detail

/// A span-1 sinogram with every ring difference: its size, plane order and
/// bin-to-crystal map. Make one with `span1_sinogram`; the fields are
/// public for reading, and the functions below check that a layout matches
/// its scanner.
///
/// LORs are stored `[plane][view][radial]` (radial fastest): bin
/// (plane, view, radial) is LOR `(plane * num_views + view) * num_radial +
/// radial`.
struct sinogram_layout {
  int crystals_per_ring = 0; ///< of the scanner the layout was made for
  int num_rings = 0;         ///< of the scanner the layout was made for
  int num_views = 0;         ///< crystals_per_ring / 2
  int radial_trim = 0;       ///< bins dropped at each radial edge
  int num_radial = 0;        ///< crystals_per_ring + 1 - 2 * radial_trim
  /// (start ring, end ring) of each plane, in storage order: first the
  /// `num_rings` direct planes (r, r); then, for each ring difference
  /// d = 1 .. num_rings - 1, all pairs (r, r + d) for r = 0 .. num_rings-1-d,
  /// followed by all pairs (r + d, r) for r = 0 .. num_rings-1-d (not
  /// interleaved per r). num_rings^2 planes in all.
  std::vector<std::pair<int, int>> planes;

  /// Number of planes (`planes.size()`).
  int num_planes() const noexcept { return int(planes.size()); }
  /// Bins in the whole sinogram: num_planes * num_views * num_radial.
  std::int64_t num_bins() const noexcept {
    return std::int64_t(planes.size()) * num_views * num_radial;
  }

  /// Crystals (start, end), within a ring, of bin (view, radial); see
  /// `detail::span1_crystal_pair` for the formula. The start crystal sits
  /// in the plane's start ring, the end crystal in its end ring.
  /// @throws invalid_argument if `view` or `radial` is out of range.
  std::pair<int, int> crystal_pair(int view, int radial) const {
    if (view < 0 || view >= num_views)
      resproj::detail::throw_invalid("view", "must be in [0, " +
                                                 std::to_string(num_views) + ") (got " +
                                                 std::to_string(view) + ")");
    if (radial < 0 || radial >= num_radial)
      resproj::detail::throw_invalid("radial",
                                     "must be in [0, " + std::to_string(num_radial) +
                                         ") (got " + std::to_string(radial) + ")");
    std::pair<int, int> pair;
    detail::span1_crystal_pair(crystals_per_ring, radial_trim, view, radial, pair.first,
                               pair.second);
    return pair;
  }
};

/// Span-1 sinogram of `scanner` with all ring differences, `radial_trim`
/// bins dropped at each radial edge.
/// @throws invalid_argument ("scanner" if crystals_per_ring is odd,
///         "radial_trim" unless 0 <= radial_trim <= crystals_per_ring / 2).
inline sinogram_layout span1_sinogram(const polygon_scanner &scanner, int radial_trim) {
  const int n = scanner.crystals_per_ring();
  if (n % 2 != 0)
    resproj::detail::throw_invalid("scanner", "crystals_per_ring must be even (got " +
                                                  std::to_string(n) + ")");
  if (radial_trim < 0 || radial_trim > n / 2)
    resproj::detail::throw_invalid("radial_trim", "must be in [0, " +
                                                      std::to_string(n / 2) + "] (got " +
                                                      std::to_string(radial_trim) + ")");
  sinogram_layout s;
  s.crystals_per_ring = n;
  s.num_rings = scanner.num_rings();
  s.num_views = n / 2;
  s.radial_trim = radial_trim;
  s.num_radial = n + 1 - 2 * radial_trim;
  const int nr = s.num_rings;
  s.planes.reserve(std::size_t(nr) * std::size_t(nr));
  for (int r = 0; r < nr; ++r)
    s.planes.emplace_back(r, r);
  for (int d = 1; d < nr; ++d) {
    for (int r = 0; r + d < nr; ++r)
      s.planes.emplace_back(r, r + d);
    for (int r = 0; r + d < nr; ++r)
      s.planes.emplace_back(r + d, r);
  }
  return s;
}

/// Views of OSEM subset `subset` of `num_subsets`: subset, subset +
/// num_subsets, subset + 2 num_subsets, ... below `layout.num_views`.
/// (`subset_views(layout, 0, 1)` is every view.)
/// @throws invalid_argument ("num_subsets" unless 1 <= num_subsets <=
///         num_views, "subset" unless 0 <= subset < num_subsets).
inline std::vector<int> subset_views(const sinogram_layout &layout, int subset,
                                     int num_subsets) {
  if (num_subsets < 1 || num_subsets > layout.num_views)
    resproj::detail::throw_invalid("num_subsets",
                                   "must be in [1, " + std::to_string(layout.num_views) +
                                       "] (got " + std::to_string(num_subsets) + ")");
  if (subset < 0 || subset >= num_subsets)
    resproj::detail::throw_invalid("subset", "must be in [0, " +
                                                 std::to_string(num_subsets) + ") (got " +
                                                 std::to_string(subset) + ")");
  std::vector<int> views;
  for (int v = subset; v < layout.num_views; v += num_subsets)
    views.push_back(v);
  return views;
}

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

  // Transaxial end points of every (view, radial) bin, shared by all planes.
  const int n = scanner.crystals_per_ring();
  std::vector<T> crystal_x(static_cast<std::size_t>(n));
  std::vector<T> crystal_y(static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c) {
    const auto p = scanner.crystal_position(0, c);
    crystal_x[std::size_t(c)] = T(p[0]);
    crystal_y[std::size_t(c)] = T(p[1]);
  }
  std::vector<T> start_xy(2 * per_plane), end_xy(2 * per_plane);
  for (std::size_t i = 0; i < views.size(); ++i)
    for (std::size_t r = 0; r < nr; ++r) {
      int c_start, c_end;
      detail::span1_crystal_pair(n, layout.radial_trim, views[i], int(r), c_start, c_end);
      const std::size_t j = i * nr + r;
      start_xy[2 * j] = crystal_x[std::size_t(c_start)];
      start_xy[2 * j + 1] = crystal_y[std::size_t(c_start)];
      end_xy[2 * j] = crystal_x[std::size_t(c_end)];
      end_xy[2 * j + 1] = crystal_y[std::size_t(c_end)];
    }

  const auto &ring_z = scanner.ring_z();
  for (int p = 0; p < num_planes; ++p) {
    const auto &rings = layout.planes[std::size_t(first_plane + p)];
    const T z_start = T(ring_z[std::size_t(rings.first)]);
    const T z_end = T(ring_z[std::size_t(rings.second)]);
    T *s = starts.data() + 3 * std::size_t(p) * per_plane;
    T *e = ends.data() + 3 * std::size_t(p) * per_plane;
    for (std::size_t j = 0; j < per_plane; ++j) {
      s[3 * j] = start_xy[2 * j];
      s[3 * j + 1] = start_xy[2 * j + 1];
      s[3 * j + 2] = z_start;
      e[3 * j] = end_xy[2 * j];
      e[3 * j + 1] = end_xy[2 * j + 1];
      e[3 * j + 2] = z_end;
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
