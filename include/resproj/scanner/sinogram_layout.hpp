/// @file
/// @brief The span-1 sinogram layout of a `polygon_scanner`: bin-to-crystal
/// map, plane (ring pair) order with a maximum ring difference
/// (`sinogram_layout`, made by `span1_sinogram`) and its device-usable form
/// (`sinogram_geometry`) (docs/benchmark-problems.md, "Sinogram").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
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

} // namespace scanner
RESPROJ_NAMESPACE_END
