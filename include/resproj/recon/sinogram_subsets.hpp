/// @file
/// @brief `sinogram_subsets`: a polygon scanner's span-1 sinogram split into
/// OSEM subsets by view, in host memory (detector table, plane table, each
/// subset's views), giving each subset's LORs as a `sinogram_source`
/// without LOR arrays. Also the sinogram data of a reconstruction in subset
/// order. Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram.hpp"
#include "resproj/scanner/sinogram_source.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// A polygon scanner with its span-1 sinogram split into subsets by view
/// (`scanner::subset_views`), and the image reconstructed. Subset s's LORs
/// are the `sinogram_source` over its views and all planes, in the order
/// `[plane][view][radial]`. The tables are host vectors; device copies
/// (`device_sinogram_subsets`) serve the GPU.
struct sinogram_subsets {
  scanner::polygon_scanner scanner;
  scanner::sinogram_layout layout;
  std::vector<float> detectors;                 ///< xyz per detector
  std::vector<std::int32_t> planes;             ///< layout.plane_table()
  std::vector<std::vector<std::int32_t>> views; ///< per subset
  image_geometry image;

  /// @param sc the scanner
  /// @param radial_trim radial bins dropped at each edge (see span1_sinogram)
  /// @param num_subsets OSEM subsets (>= 1)
  /// @param geometry the image reconstructed
  /// @throws invalid_argument ("num_subsets") unless in [1, number of views];
  ///         as `span1_sinogram` for the layout.
  sinogram_subsets(scanner::polygon_scanner sc, int radial_trim, int num_subsets,
                   const image_geometry &geometry)
      : scanner(std::move(sc)), layout(scanner::span1_sinogram(scanner, radial_trim)),
        detectors(scanner.detector_centres()), planes(layout.plane_table()),
        image(geometry) {
    if (num_subsets < 1 || num_subsets > layout.num_views)
      resproj::detail::throw_invalid("num_subsets", "must be in [1, number of views]");
    for (int s = 0; s < num_subsets; ++s) {
      const auto v = scanner::subset_views(layout, s, num_subsets);
      views.emplace_back(v.begin(), v.end());
    }
  }
  /// Number of subsets.
  int num_subsets() const { return int(views.size()); }
  /// Number of detectors of the scanner.
  std::size_t num_detectors() const { return detectors.size() / 3; }
  /// LORs in subset s.
  std::size_t subset_count(int s) const {
    return std::size_t(layout.num_planes()) * views[std::size_t(s)].size() *
           std::size_t(layout.num_radial);
  }
  /// LORs in the largest subset.
  std::size_t max_subset_count() const {
    std::size_t c = 0;
    for (int s = 0; s < num_subsets(); ++s)
      c = c > subset_count(s) ? c : subset_count(s);
    return c;
  }
  /// LORs in all subsets (the whole sinogram).
  std::size_t total_count() const {
    std::size_t c = 0;
    for (int s = 0; s < num_subsets(); ++s)
      c += subset_count(s);
    return c;
  }
  /// LORs of subset s, reading the tables at the given (host or device)
  /// copies of `detectors`, `planes` and `views[s]`.
  scanner::sinogram_source<float> source(int s, const float *det,
                                         const std::int32_t *plane_rings,
                                         const std::int32_t *subset_views) const {
    return scanner::make_sinogram_source(
        det, num_detectors(), layout.geometry(plane_rings), subset_views,
        int(views[std::size_t(s)].size()), 0, layout.num_planes());
  }
  /// Host source of subset s.
  scanner::sinogram_source<float> source(int s) const {
    return source(s, detectors.data(), planes.data(), views[std::size_t(s)].data());
  }
  /// Detector pair of LOR i of subset s.
  void detector_pair(int s, std::size_t i, std::int32_t &da, std::int32_t &db) const {
    const std::size_t nr = std::size_t(layout.num_radial);
    const auto &v = views[std::size_t(s)];
    const int radial = int(i % nr);
    const std::size_t pv = i / nr;
    const auto p = layout.detector_pair(int(pv / v.size()), v[pv % v.size()], radial);
    da = p.first;
    db = p.second;
  }
};

/// Sinogram data in subset order: subset s holds `subset_count(s)` bins
/// from `offset[s]`, in the order of `sinogram_subsets::source(s)`.
struct sinogram_data {
  std::vector<std::size_t> offset; ///< num_subsets + 1 entries
  std::vector<float> y;            ///< measured counts
  std::vector<float> m;            ///< multiplicative corrections
  std::vector<float> a;            ///< additive background
};

/// Offsets (`num_subsets` + 1 entries) of the subsets of `sub` laid out one
/// after the other (the layout of `sinogram_data`).
inline std::vector<std::size_t> sinogram_offsets(const sinogram_subsets &sub) {
  std::vector<std::size_t> offset{0};
  for (int s = 0; s < sub.num_subsets(); ++s)
    offset.push_back(offset.back() + sub.subset_count(s));
  return offset;
}

} // namespace recon
RESPROJ_NAMESPACE_END
