/// @file
/// @brief `lor_layout`: how the LORs of a source are ordered in memory. A
/// source states its layout once, where it is described; the projectors
/// read it to choose the thread-to-LOR mapping and kernel variant. The
/// layout never changes a result, only the speed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// The memory order of a LOR source's LORs.
struct lor_layout {
  enum class order : std::uint8_t {
    /// Nothing known (random event order, or any other).
    unordered,
    /// A sinogram in `[plane][view][radial]` order (radial fastest):
    /// `lors_per_plane` consecutive LORs share a plane, and LOR i and LOR
    /// i + lors_per_plane are the same (view, radial) bin on neighbouring
    /// planes.
    sinogram,
    /// List-mode events sorted by the library's TOF key
    /// (`gpu::listmode_order`): neighbouring events have neighbouring
    /// directions and TOF-bin centres.
    sorted_events,
  };

  order kind = order::unordered;
  /// For `sinogram`: LORs per plane (views x radial bins), > 0.
  std::size_t lors_per_plane = 0;

  /// A sinogram of `num_views` x `num_radial` bins per plane, planes
  /// outermost.
  static constexpr lor_layout sinogram(std::size_t num_views,
                                       std::size_t num_radial) noexcept {
    return lor_layout{order::sinogram, num_views * num_radial};
  }
  /// Events sorted by the library's TOF key.
  static constexpr lor_layout sorted_events() noexcept {
    return lor_layout{order::sorted_events, 0};
  }

  /// Planes of a call over `count` LORs of this layout: `count /
  /// lors_per_plane` when the call holds whole planes' worth of LORs, else 0
  /// (the call is then taken in memory order). Any start within the
  /// sinogram keeps LOR i and i + lors_per_plane on neighbouring planes.
  RESPROJ_HD constexpr std::size_t planes_in(std::size_t count) const noexcept {
    if (kind != order::sinogram || lors_per_plane == 0 || count < 2 * lors_per_plane ||
        count % lors_per_plane != 0)
      return 0;
    return count / lors_per_plane;
  }

  friend constexpr bool operator==(const lor_layout &a, const lor_layout &b) noexcept {
    return a.kind == b.kind && a.lors_per_plane == b.lors_per_plane;
  }
  friend constexpr bool operator!=(const lor_layout &a, const lor_layout &b) noexcept {
    return !(a == b);
  }
};

RESPROJ_NAMESPACE_END
