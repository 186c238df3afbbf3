/// @file
/// @brief The map detector pair -> sinogram bin of a span-1 sinogram
/// (`sinogram_lookup`, two lookup tables) and its device-usable view
/// (`sinogram_lookup_view`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/scanner/sinogram_layout.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace scanner {

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
  /// Linear index of bin (plane, view, radial) in the layout's
  /// `[plane][view][radial]` order (`sinogram_layout::bin_index`; a lookup's
  /// layout has `crystals_per_ring / 2` views).
  RESPROJ_HD std::int64_t bin_index(int plane, int view, int radial) const noexcept {
    return (std::int64_t(plane) * (crystals_per_ring / 2) + view) * num_radial + radial;
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
