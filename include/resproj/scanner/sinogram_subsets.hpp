/// @file
/// @brief Subsets and chunks of a span-1 sinogram: the views of an OSEM
/// subset (`subset_views`), checks of view lists, and STIR-style chunks of
/// a few views over all planes (`sinogram_chunk`, `view_chunks`).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/scanner/sinogram_layout.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

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

} // namespace scanner
RESPROJ_NAMESPACE_END
