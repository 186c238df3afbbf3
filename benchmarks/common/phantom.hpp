/// @file
/// @brief Reference benchmark problems (docs/benchmark-problems.md) built in
/// code: the reference image geometry, the box phantom, seeded random
/// images and the `dmi-subset` LORs (whole, or only its first planes).
/// Shared by the CPU and GPU benchmarks; standard library and resproj only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/views.hpp"
#include "resproj/scanner/dmi.hpp"

namespace resproj_bench {

/// The reference image: 215 x 215 x 71 voxels of 2.78 mm, centred on the
/// origin (origin_k = -(n_k - 1) * 2.78 / 2, -297.46 mm for n = 215).
inline resproj::image_geometry reference_image_geometry() {
  return resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
}

/// The timing phantom: 1 in the central box, 0 elsewhere. The box holds
/// voxels with `n0/4 <= i0 < 3*n0/4` and `n1/4 <= i1 < 3*n1/4` (integer
/// division, upper bound exclusive, as the Python slice `n//4 : 3*n//4`;
/// 53..160 for n = 215) and every i2.
template <class T> std::vector<T> box_phantom(const resproj::image_geometry &geometry) {
  const auto &n = geometry.shape();
  std::vector<T> image(std::size_t(geometry.num_voxels()), T(0));
  for (std::int64_t i0 = n[0] / 4; i0 < 3 * n[0] / 4; ++i0)
    for (std::int64_t i1 = n[1] / 4; i1 < 3 * n[1] / 4; ++i1)
      for (std::int64_t i2 = 0; i2 < n[2]; ++i2)
        image[std::size_t((i0 * n[1] + i1) * n[2] + i2)] = T(1);
  return image;
}

/// A seeded image of values uniform in [0, 1), for correctness checks.
template <class T>
std::vector<T> random_image(const resproj::image_geometry &geometry,
                            std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<T> image(std::size_t(geometry.num_voxels()));
  for (auto &v : image)
    v = T(uniform(rng));
  return image;
}

/// LOR end points in host memory (xyz triplets), with a view for the
/// projectors.
template <class T> struct lor_set {
  std::vector<T> starts;
  std::vector<T> ends;

  /// Number of LORs.
  std::size_t count() const noexcept { return starts.size() / 3; }
  /// View of all LORs.
  resproj::lor_view<const T> view() const noexcept {
    return {starts.data(), ends.data(), count()};
  }
};

/// Number of LORs of `dmi-subset`: 8 views x 415 radial x 1296 planes.
inline constexpr std::size_t dmi_subset_count = 4302720;

/// Planes of `dmi-subset-small`: the 36 direct planes and the 70 planes of
/// ring difference +-1, i.e. the first 106 planes of the dmi sinogram
/// (8 x 415 x 106 = 351,920 LORs, 8.2% of `dmi-subset`).
inline constexpr int dmi_subset_small_planes = 106;

/// The `dmi-subset` LORs (views 0, 34, ..., 238 of the dmi sinogram, order
/// `[plane][view][radial]`), restricted to planes `[first_plane,
/// first_plane + num_planes)`; `num_planes < 0` means up to the last plane.
template <class T> lor_set<T> dmi_subset_lors(int num_planes = -1, int first_plane = 0) {
  namespace rs = resproj::scanner;
  const auto scanner = rs::dmi();
  const auto layout = rs::dmi_sinogram();
  const auto views = rs::subset_views(layout, 0, rs::dmi_num_subsets);
  if (num_planes < 0)
    num_planes = layout.num_planes() - first_plane;
  lor_set<T> lors;
  rs::sinogram_lors(scanner, layout, views, first_plane, num_planes, lors.starts,
                    lors.ends);
  return lors;
}

/// The memory order of dmi sinogram LORs over the views of one of
/// `num_subsets` view subsets (`dmi-subset`: 34 subsets, 8 views; `dmi-full`:
/// 1 subset, every view): `[plane][view][radial]`, 415 radial bins per view.
/// Declare it on end points or detector pairs of these LORs
/// (`.with_layout(...)`), as a sinogram source declares it itself.
inline resproj::lor_layout dmi_sinogram_layout(int num_subsets) {
  namespace rs = resproj::scanner;
  const auto layout = rs::dmi_sinogram();
  const auto views = rs::subset_views(layout, 0, num_subsets);
  return resproj::lor_layout::sinogram(views.size(), std::size_t(layout.num_radial));
}
/// `dmi-subset`: 8 views x 415 radial bins per plane (3,320 LORs).
inline resproj::lor_layout dmi_subset_layout() {
  return dmi_sinogram_layout(resproj::scanner::dmi_num_subsets);
}
/// `dmi-full`: 272 views x 415 radial bins per plane (112,880 LORs).
inline resproj::lor_layout dmi_full_layout() { return dmi_sinogram_layout(1); }

/// Name of the dmi-subset problem restricted to its first `num_planes`
/// planes: "dmi-subset" for all 1296, "dmi-subset-small" for 106, else
/// "dmi-subset-<n>planes".
inline std::string dmi_subset_name(int num_planes) {
  if (num_planes < 0 || num_planes == 1296)
    return "dmi-subset";
  if (num_planes == dmi_subset_small_planes)
    return "dmi-subset-small";
  return "dmi-subset-" + std::to_string(num_planes) + "planes";
}

} // namespace resproj_bench
