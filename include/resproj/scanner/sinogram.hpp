/// @file
/// @brief Span-1 sinograms of a `polygon_scanner`: bin-to-crystal map,
/// plane (ring pair) order with a maximum ring difference, maps between
/// sinogram bins and detector pairs both ways (`sinogram_geometry`,
/// `sinogram_lookup`, both with device-usable views), view subsets,
/// STIR-style chunks and LOR end point generation
/// (docs/benchmark-problems.md, "Sinogram").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
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

/// Device-usable, trivially copyable description of a span-1 sinogram,
/// from which a kernel derives the detector pair of any bin with no
/// per-LOR input. Make one with `sinogram_layout::geometry(plane_rings)`,
/// where `plane_rings` points (host or device memory) to a copy of
/// `sinogram_layout::plane_table()`. Nothing is checked: indices must be
/// in range. Memory order `[plane][view][radial]` (radial fastest).
/// Detector index of crystal c of ring r: `r * crystals_per_ring + c`.
struct sinogram_geometry {
  std::int32_t crystals_per_ring = 0; ///< crystals per ring (even)
  std::int32_t num_rings = 0;         ///< rings of the scanner
  std::int32_t num_views = 0;         ///< crystals_per_ring / 2
  std::int32_t radial_trim = 0;       ///< bins dropped at each radial edge
  std::int32_t num_radial = 0;        ///< crystals_per_ring + 1 - 2 radial_trim
  std::int32_t num_planes = 0;        ///< ring pairs
  /// 2 * num_planes ints: (start ring, end ring) of each plane.
  const std::int32_t *plane_rings = nullptr;

  /// Crystals (start `a`, end `b`) within a ring of bin (view, radial).
  RESPROJ_HD void crystal_pair(int view, int radial, int &a, int &b) const noexcept {
    detail::span1_crystal_pair(crystals_per_ring, radial_trim, view, radial, a, b);
  }
  /// Rings (start `ra`, end `rb`) of plane `plane`.
  RESPROJ_HD void ring_pair(int plane, int &ra, int &rb) const noexcept {
    ra = plane_rings[2 * plane];
    rb = plane_rings[2 * plane + 1];
  }
  /// Detector indices (start `da`, end `db`) of bin (plane, view, radial).
  RESPROJ_HD void detector_pair(int plane, int view, int radial, int &da,
                                int &db) const noexcept {
    int a, b, ra, rb;
    crystal_pair(view, radial, a, b);
    ring_pair(plane, ra, rb);
    da = ra * crystals_per_ring + a;
    db = rb * crystals_per_ring + b;
  }
  /// Bins in the whole sinogram.
  RESPROJ_HD std::int64_t num_bins() const noexcept {
    return std::int64_t(num_planes) * num_views * num_radial;
  }
  /// Linear index of bin (plane, view, radial) in `[plane][view][radial]`.
  RESPROJ_HD std::int64_t bin_index(int plane, int view, int radial) const noexcept {
    return (std::int64_t(plane) * num_views + view) * num_radial + radial;
  }
  /// Inverse of `bin_index`.
  RESPROJ_HD void bin_coordinates(std::int64_t index, int &plane, int &view,
                                  int &radial) const noexcept {
    radial = int(index % num_radial);
    const std::int64_t pv = index / num_radial;
    view = int(pv % num_views);
    plane = int(pv / num_views);
  }
};

static_assert(std::is_trivially_copyable_v<sinogram_geometry>);

/// A span-1 sinogram with ring differences up to `max_ring_difference`:
/// its size, plane order and bin-to-crystal map. Make one with
/// `span1_sinogram`; the fields are public for reading, and the functions
/// below check that a layout matches its scanner.
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
  /// d = 1 .. max_ring_difference, all pairs (r, r + d) for
  /// r = 0 .. num_rings-1-d, followed by all pairs (r + d, r) for
  /// r = 0 .. num_rings-1-d (not interleaved per r). num_rings^2 planes in
  /// all when max_ring_difference = num_rings - 1.
  std::vector<std::pair<int, int>> planes;
  /// Largest |start ring - end ring| of the planes (set by span1_sinogram;
  /// -1 in a default-constructed layout means num_rings - 1).
  int max_ring_difference = -1;

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

  /// Detector indices (start, end) of bin (plane, view, radial): crystal
  /// `crystal_pair(view, radial).first` of ring `planes[plane].first` and
  /// `.second` of ring `planes[plane].second`, detector index
  /// `ring * crystals_per_ring + crystal`.
  /// @throws invalid_argument ("plane", "view" or "radial") if out of range.
  std::pair<std::int32_t, std::int32_t> detector_pair(int plane, int view,
                                                      int radial) const {
    check_plane(plane);
    const auto c = crystal_pair(view, radial);
    const auto &r = planes[std::size_t(plane)];
    return {r.first * crystals_per_ring + c.first,
            r.second * crystals_per_ring + c.second};
  }

  /// Linear index of bin (plane, view, radial) in `[plane][view][radial]`.
  /// @throws invalid_argument ("plane", "view" or "radial") if out of range.
  std::int64_t bin_index(int plane, int view, int radial) const {
    check_plane(plane);
    (void)crystal_pair(view, radial); // range checks
    return (std::int64_t(plane) * num_views + view) * num_radial + radial;
  }

  /// The plane table for `geometry`: 2 * num_planes ints, (start ring, end
  /// ring) of each plane. Copy it to the device for kernels.
  std::vector<std::int32_t> plane_table() const {
    std::vector<std::int32_t> t(2 * planes.size());
    for (std::size_t p = 0; p < planes.size(); ++p) {
      t[2 * p] = planes[p].first;
      t[2 * p + 1] = planes[p].second;
    }
    return t;
  }

  /// A device-usable `sinogram_geometry` reading its planes from
  /// `plane_rings` (a copy of `plane_table()`, host or device memory, that
  /// must outlive the geometry).
  /// @throws invalid_argument ("plane_rings") if null with planes present.
  sinogram_geometry geometry(const std::int32_t *plane_rings) const {
    if (plane_rings == nullptr && !planes.empty())
      resproj::detail::throw_invalid("plane_rings", "null pointer");
    sinogram_geometry g;
    g.crystals_per_ring = crystals_per_ring;
    g.num_rings = num_rings;
    g.num_views = num_views;
    g.radial_trim = radial_trim;
    g.num_radial = num_radial;
    g.num_planes = num_planes();
    g.plane_rings = plane_rings;
    return g;
  }

private:
  void check_plane(int plane) const {
    if (plane < 0 || plane >= num_planes())
      resproj::detail::throw_invalid("plane",
                                     "must be in [0, " + std::to_string(num_planes()) +
                                         ") (got " + std::to_string(plane) + ")");
  }
};

/// Span-1 sinogram of `scanner` with ring differences up to
/// `max_ring_difference` (-1, the default: all, i.e. num_rings - 1) and
/// `radial_trim` bins dropped at each radial edge.
/// @throws invalid_argument ("scanner" if crystals_per_ring is odd,
///         "radial_trim" unless 0 <= radial_trim <= crystals_per_ring / 2,
///         "max_ring_difference" unless -1 <= it <= num_rings - 1).
inline sinogram_layout span1_sinogram(const polygon_scanner &scanner, int radial_trim,
                                      int max_ring_difference = -1) {
  const int n = scanner.crystals_per_ring();
  if (n % 2 != 0)
    resproj::detail::throw_invalid("scanner", "crystals_per_ring must be even (got " +
                                                  std::to_string(n) + ")");
  if (radial_trim < 0 || radial_trim > n / 2)
    resproj::detail::throw_invalid("radial_trim", "must be in [0, " +
                                                      std::to_string(n / 2) + "] (got " +
                                                      std::to_string(radial_trim) + ")");
  if (max_ring_difference < -1 || max_ring_difference > scanner.num_rings() - 1)
    resproj::detail::throw_invalid(
        "max_ring_difference", "must be -1 (all) or in [0, " +
                                   std::to_string(scanner.num_rings() - 1) + "] (got " +
                                   std::to_string(max_ring_difference) + ")");
  if (max_ring_difference == -1)
    max_ring_difference = scanner.num_rings() - 1;
  sinogram_layout s;
  s.max_ring_difference = max_ring_difference;
  s.crystals_per_ring = n;
  s.num_rings = scanner.num_rings();
  s.num_views = n / 2;
  s.radial_trim = radial_trim;
  s.num_radial = n + 1 - 2 * radial_trim;
  const int nr = s.num_rings;
  s.planes.reserve(std::size_t(nr) * std::size_t(nr));
  for (int r = 0; r < nr; ++r)
    s.planes.emplace_back(r, r);
  for (int d = 1; d <= max_ring_difference; ++d) {
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

/// Checks a user list of views (for a subset or a chunk): every view in
/// `[0, layout.num_views)`, none repeated.
/// @throws invalid_argument ("views[i]") naming the first bad entry.
inline void check_views(const sinogram_layout &layout, const std::vector<int> &views) {
  std::vector<char> seen(std::size_t(layout.num_views > 0 ? layout.num_views : 0), 0);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const int v = views[i];
    if (v < 0 || v >= layout.num_views)
      resproj::detail::throw_invalid("views[" + std::to_string(i) + "]",
                                     "must be in [0, " +
                                         std::to_string(layout.num_views) + ") (got " +
                                         std::to_string(v) + ")");
    if (seen[std::size_t(v)])
      resproj::detail::throw_invalid("views[" + std::to_string(i) + "]",
                                     "view " + std::to_string(v) + " is repeated");
    seen[std::size_t(v)] = 1;
  }
}

/// Number of sinogram bins of the given views over all planes:
/// num_views * num_planes * num_radial.
inline std::int64_t subset_bin_count(const sinogram_layout &layout,
                                     std::size_t num_views) noexcept {
  return std::int64_t(num_views) * layout.num_planes() * layout.num_radial;
}

/// A STIR-style chunk of a sinogram: a few views, planes
/// `[first_plane, first_plane + num_planes)` (all planes when made by
/// `view_chunks`). Its bins are ordered `[plane][view][radial]` with the
/// views in the order listed, as `sinogram_lors` writes them.
struct sinogram_chunk {
  std::vector<int> views; ///< views of the chunk, in order
  int first_plane = 0;    ///< first plane
  int num_planes = 0;     ///< number of planes
};

/// Splits `views` (e.g. `subset_views(...)` or every view) into chunks of
/// `views_per_chunk` consecutive entries (the last may hold fewer), each
/// covering every plane of the layout.
/// @throws invalid_argument ("views[i]" as `check_views`,
///         "views_per_chunk" unless >= 1).
inline std::vector<sinogram_chunk> view_chunks(const sinogram_layout &layout,
                                               const std::vector<int> &views,
                                               int views_per_chunk) {
  check_views(layout, views);
  if (views_per_chunk < 1)
    resproj::detail::throw_invalid(
        "views_per_chunk", "must be >= 1 (got " + std::to_string(views_per_chunk) + ")");
  std::vector<sinogram_chunk> out;
  for (std::size_t i = 0; i < views.size(); i += std::size_t(views_per_chunk)) {
    sinogram_chunk c;
    const std::size_t end = std::min(views.size(), i + std::size_t(views_per_chunk));
    c.views.assign(views.begin() + std::ptrdiff_t(i),
                   views.begin() + std::ptrdiff_t(end));
    c.first_plane = 0;
    c.num_planes = layout.num_planes();
    out.push_back(std::move(c));
  }
  return out;
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

/// A sinogram bin found for a detector pair.
struct sinogram_bin {
  int plane = 0;        ///< plane (ring pair) index
  int view = 0;         ///< view
  int radial = 0;       ///< radial bin (after trimming)
  bool swapped = false; ///< the pair's first detector is the bin's end
};

/// Device-usable, trivially copyable view of a `sinogram_lookup`: finds
/// the sinogram bin of a detector pair with two table reads. Pointers may
/// point to host or device memory (copies of `sinogram_lookup`'s tables).
struct sinogram_lookup_view {
  /// crystals_per_ring^2 entries over (crystal_a, crystal_b) within a
  /// ring: -1 if the pair is in no bin, else
  /// `2 * (view * num_radial + radial) + swapped`.
  const std::int32_t *crystal_bins = nullptr;
  /// num_rings^2 entries over (start ring, end ring): plane or -1.
  const std::int32_t *ring_planes = nullptr;
  std::int32_t crystals_per_ring = 0; ///< crystals per ring
  std::int32_t num_rings = 0;         ///< rings
  std::int32_t num_radial = 0;        ///< radial bins

  /// Finds the bin of detectors (da, db) (indices `ring * crystals_per_ring
  /// + crystal`). Returns false (outputs unspecified) if either index is out
  /// of range or the pair is in no bin (trimmed, or its ring difference is
  /// beyond the layout's). `swapped` is true when `db` is the bin's start
  /// detector and `da` its end.
  RESPROJ_HD bool find(std::int64_t da, std::int64_t db, int &plane, int &view,
                       int &radial, bool &swapped) const noexcept {
    const std::int64_t total = std::int64_t(crystals_per_ring) * num_rings;
    if (da < 0 || db < 0 || da >= total || db >= total)
      return false;
    const int ra = int(da / crystals_per_ring), ca = int(da % crystals_per_ring);
    const int rb = int(db / crystals_per_ring), cb = int(db % crystals_per_ring);
    const std::int32_t e =
        crystal_bins[std::int64_t(ca) * crystals_per_ring + std::int64_t(cb)];
    if (e < 0)
      return false;
    swapped = (e & 1) != 0;
    const int vr = e >> 1;
    plane = swapped ? ring_planes[rb * num_rings + ra] : ring_planes[ra * num_rings + rb];
    if (plane < 0)
      return false;
    view = vr / num_radial;
    radial = vr % num_radial;
    return true;
  }
};

static_assert(std::is_trivially_copyable_v<sinogram_lookup_view>);

/// The map detector pair -> sinogram bin of a layout, built once as two
/// lookup tables (see `sinogram_lookup_view` for their encoding). A pair
/// (a, b) is found either as bin (start a, end b) or, with `swapped`, as
/// bin (start b, end a). Where several bins join the same crystal pair
/// (only possible with radial_trim < 2), the first in (view, radial) order
/// wins, unswapped before swapped. Memory: 4 (crystals_per_ring^2 +
/// num_rings^2) bytes (1.2 MB for dmi).
class sinogram_lookup {
public:
  /// @throws invalid_argument ("layout") if the layout is inconsistent
  ///         or has more than 32768 crystals per ring.
  explicit sinogram_lookup(const sinogram_layout &layout) : layout_(layout) {
    using resproj::detail::throw_invalid;
    const int n = layout.crystals_per_ring, nr = layout.num_rings;
    if (n < 2 || n > 32768 || nr < 1 || layout.num_views * 2 != n ||
        layout.radial_trim < 0 || layout.num_radial < 1 ||
        layout.num_radial != n + 1 - 2 * layout.radial_trim)
      throw_invalid("layout", "inconsistent or too large (make it with span1_sinogram; "
                              "at most 32768 crystals per ring)");
    crystal_bins_.assign(std::size_t(n) * std::size_t(n), -1);
    for (int v = 0; v < layout.num_views; ++v)
      for (int r = 0; r < layout.num_radial; ++r) {
        int a, b;
        detail::span1_crystal_pair(n, layout.radial_trim, v, r, a, b);
        const std::int32_t code = 2 * (v * layout.num_radial + r);
        std::int32_t &fwd =
            crystal_bins_[std::size_t(a) * std::size_t(n) + std::size_t(b)];
        if (fwd < 0)
          fwd = code;
      }
    for (int v = 0; v < layout.num_views; ++v)
      for (int r = 0; r < layout.num_radial; ++r) {
        int a, b;
        detail::span1_crystal_pair(n, layout.radial_trim, v, r, a, b);
        const std::int32_t code = 2 * (v * layout.num_radial + r) + 1;
        std::int32_t &rev =
            crystal_bins_[std::size_t(b) * std::size_t(n) + std::size_t(a)];
        if (rev < 0)
          rev = code;
      }
    ring_planes_.assign(std::size_t(nr) * std::size_t(nr), -1);
    for (int p = 0; p < layout.num_planes(); ++p) {
      const auto &rp = layout.planes[std::size_t(p)];
      if (rp.first < 0 || rp.first >= nr || rp.second < 0 || rp.second >= nr)
        throw_invalid("layout.planes[" + std::to_string(p) + "]", "ring out of range");
      std::int32_t &e =
          ring_planes_[std::size_t(rp.first) * std::size_t(nr) + std::size_t(rp.second)];
      if (e < 0)
        e = p;
    }
  }

  /// Bin of detectors (da, db), or none if either is out of range or the
  /// pair is in no bin of the layout.
  std::optional<sinogram_bin> find(std::int64_t da, std::int64_t db) const noexcept {
    sinogram_bin bin;
    if (!view().find(da, db, bin.plane, bin.view, bin.radial, bin.swapped))
      return std::nullopt;
    return bin;
  }

  /// A view of the host tables (valid while this lookup lives).
  sinogram_lookup_view view() const noexcept {
    return view(crystal_bins_.data(), ring_planes_.data());
  }
  /// A view reading copies of `crystal_table()` and `ring_table()` at the
  /// given (e.g. device) addresses.
  sinogram_lookup_view view(const std::int32_t *crystal_bins,
                            const std::int32_t *ring_planes) const noexcept {
    sinogram_lookup_view v;
    v.crystal_bins = crystal_bins;
    v.ring_planes = ring_planes;
    v.crystals_per_ring = layout_.crystals_per_ring;
    v.num_rings = layout_.num_rings;
    v.num_radial = layout_.num_radial;
    return v;
  }
  /// The (crystal_a, crystal_b) table.
  const std::vector<std::int32_t> &crystal_table() const noexcept {
    return crystal_bins_;
  }
  /// The (ring_a, ring_b) table.
  const std::vector<std::int32_t> &ring_table() const noexcept { return ring_planes_; }
  /// The layout it was built for.
  const sinogram_layout &layout() const noexcept { return layout_; }

private:
  sinogram_layout layout_;
  std::vector<std::int32_t> crystal_bins_;
  std::vector<std::int32_t> ring_planes_;
};

} // namespace scanner
RESPROJ_NAMESPACE_END
