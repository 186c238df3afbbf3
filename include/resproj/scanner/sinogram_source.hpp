/// @file
/// @brief `sinogram_source<T>`: the LORs of a sinogram subset, derived in
/// the projector from the sinogram description and a detector table. No
/// per-LOR input at all: end points never cross the bus or sit in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/scanner/sinogram.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

/// All LORs of the views `views[0 .. num_views)` over planes
/// `[first_plane, first_plane + num_planes)` of a span-1 sinogram, in the
/// memory order `[plane][view][radial]` (radial fastest): LOR i is the
/// sinogram bin of that position, from detector `da` to detector `db` of
/// `geometry.detector_pair`. A LOR source: every projector accepts it; its
/// `layout` (a sinogram of `num_views` x `num_radial` bins per plane) lets
/// the GPU projectors give neighbouring lanes neighbouring planes. `detectors`, `views`
/// and `geometry.plane_rings` must live where the projector runs (host for the CPU
/// backend, device for the GPU one). Trivially copyable.
template <class T> struct sinogram_source {
  using value_type = T;
  const T *detectors = nullptr; ///< xyz per detector (ring-major)
  std::size_t num_detectors = 0;
  sinogram_geometry geometry;
  const std::int32_t *views = nullptr; ///< the subset's views
  int num_views = 0;
  int first_plane = 0;
  int num_planes = 0;
  std::size_t first = 0; ///< offset of LOR 0 in the subset (for subviews)
  std::size_t count = 0;
  lor_layout layout{}; ///< set by make_sinogram_source: a sinogram

  RESPROJ_HD void load(std::size_t i, T a[3], T b[3]) const noexcept {
    const std::size_t k = first + i;
    const std::size_t nr = std::size_t(geometry.num_radial);
    const int radial = int(k % nr);
    const std::size_t pv = k / nr;
    const int view = views[pv % std::size_t(num_views)];
    const int plane = first_plane + int(pv / std::size_t(num_views));
    int da, db;
    geometry.detector_pair(plane, view, radial, da, db);
    for (int c = 0; c < 3; ++c) {
      a[c] = detectors[3 * std::size_t(da) + std::size_t(c)];
      b[c] = detectors[3 * std::size_t(db) + std::size_t(c)];
    }
  }
  /// LORs `[first_lor, first_lor + n)` of this source (unchecked).
  RESPROJ_HD sinogram_source subview(std::size_t first_lor,
                                     std::size_t n) const noexcept {
    sinogram_source r = *this;
    r.first = first + first_lor;
    r.count = n;
    return r;
  }

  // LOR-source interface (see lor_view).
  sinogram_source normalized() const noexcept { return *this; }
  /// Checks what is visible without reading the tables (any memory).
  /// @throws invalid_argument naming "<name>.geometry" for sizes that no
  ///         span-1 sinogram has (crystals per ring not even and > 0, no
  ///         rings, views not half the crystals, radial bins beyond the
  ///         ring), "<name>.detectors", ".views", ".geometry", ".num_planes",
  ///         ".count" for missing tables, planes outside the sinogram or a
  ///         count beyond the subset.
  void check(const char *name) const {
    if (count == 0)
      return;
    const std::string n(name);
    const sinogram_geometry &g = geometry;
    if (g.crystals_per_ring <= 0 || g.crystals_per_ring % 2 != 0 || g.num_rings <= 0 ||
        g.num_views != g.crystals_per_ring / 2 || g.radial_trim < 0 ||
        std::int64_t(g.num_radial) + 2 * std::int64_t(g.radial_trim) >
            std::int64_t(g.crystals_per_ring) + 1)
      resproj::detail::throw_invalid(
          n + ".geometry",
          "not a span-1 sinogram: " + std::to_string(g.crystals_per_ring) +
              " crystals per ring, " + std::to_string(g.num_rings) + " rings, " +
              std::to_string(g.num_views) + " views, " + std::to_string(g.num_radial) +
              " radial bins, radial trim " + std::to_string(g.radial_trim));
    if (detectors == nullptr ||
        num_detectors <
            std::size_t(geometry.num_rings) * std::size_t(geometry.crystals_per_ring))
      resproj::detail::throw_invalid(n + ".detectors",
                                     "missing or smaller than the scanner");
    if (views == nullptr || num_views <= 0)
      resproj::detail::throw_invalid(n + ".views", "no views");
    if (geometry.plane_rings == nullptr || geometry.num_radial <= 0)
      resproj::detail::throw_invalid(n + ".geometry", "no plane table or no radial bins");
    if (first_plane < 0 || num_planes < 0 ||
        first_plane + num_planes > geometry.num_planes)
      resproj::detail::throw_invalid(n + ".num_planes", "planes outside the sinogram");
    const std::size_t total = std::size_t(num_planes) * std::size_t(num_views) *
                              std::size_t(geometry.num_radial);
    if (first + count > total)
      resproj::detail::throw_invalid(n + ".count", std::to_string(first + count) +
                                                       " LORs beyond the subset's " +
                                                       std::to_string(total));
  }
  /// Checks every view of the list and the ring pair of every plane of
  /// the source against the sinogram (reads the tables: host memory only;
  /// after `check`). The CPU backend calls it before projecting; GPU
  /// kernels read the tables unchecked.
  /// @throws invalid_argument naming "<name>.views" or
  ///         "<name>.geometry.plane_rings" and the first bad entry.
  void check_indices(const char *name) const {
    if (count == 0)
      return;
    for (int i = 0; i < num_views; ++i)
      if (views[i] < 0 || views[i] >= geometry.num_views)
        resproj::detail::throw_invalid(std::string(name) + ".views",
                                       "entry " + std::to_string(i) + ": view " +
                                           std::to_string(views[i]) + " is outside [0, " +
                                           std::to_string(geometry.num_views) + ")");
    for (int p = first_plane; p < first_plane + num_planes; ++p)
      for (int e = 0; e < 2; ++e) {
        const std::int32_t r = geometry.plane_rings[2 * std::size_t(p) + std::size_t(e)];
        if (r < 0 || r >= geometry.num_rings)
          resproj::detail::throw_invalid(std::string(name) + ".geometry.plane_rings",
                                         "plane " + std::to_string(p) + ": ring " +
                                             std::to_string(r) + " is outside [0, " +
                                             std::to_string(geometry.num_rings) + ")");
      }
  }
  template <class F> void for_each_region(F &&f) const {
    f(static_cast<const void *>(detectors), "lors.detectors");
    f(static_cast<const void *>(views), "lors.views");
    f(static_cast<const void *>(geometry.plane_rings), "lors.geometry.plane_rings");
  }
};

static_assert(std::is_trivially_copyable_v<sinogram_source<float>>);

/// The LORs of `views` over planes `[first_plane, first_plane + num_planes)`.
/// Checks the host-visible sizes; pointers may be device memory.
/// @throws invalid_argument as `sinogram_source::check`.
template <class T>
sinogram_source<T> make_sinogram_source(const T *detectors, std::size_t num_detectors,
                                        const sinogram_geometry &geometry,
                                        const std::int32_t *views, int num_views,
                                        int first_plane, int num_planes) {
  sinogram_source<T> s;
  s.detectors = detectors;
  s.num_detectors = num_detectors;
  s.geometry = geometry;
  s.views = views;
  s.num_views = num_views;
  s.first_plane = first_plane;
  s.num_planes = num_planes;
  s.count = std::size_t(num_planes) * std::size_t(num_views) *
            std::size_t(geometry.num_radial > 0 ? geometry.num_radial : 0);
  s.layout = lor_layout::sinogram(
      std::size_t(num_views > 0 ? num_views : 0),
      std::size_t(geometry.num_radial > 0 ? geometry.num_radial : 0));
  s.check("lors");
  return s;
}

} // namespace scanner
RESPROJ_NAMESPACE_END
