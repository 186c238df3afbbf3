// Turns a checked `call` into the library's typed operation and LOR source
// and hands both to a generic callable. Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>

#include "call.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace resproj_py {

namespace rp = resproj;

template <class T> rp::tof_params<T> tof_of(const call &c) {
  rp::tof_params<T> t = c.tof.as<T>();
  if (c.sigmas != nullptr)
    t.sigmas = rp::span<const T>(static_cast<const T *>(c.sigmas), c.count);
  if (c.center_offsets != nullptr)
    t.center_offsets =
        rp::span<const T>(static_cast<const T *>(c.center_offsets), c.count);
  return t;
}

/// Calls `f(operation)` with the call's operation in precision T.
template <class T, class F> void with_operation(const call &c, F &&f) {
  switch (c.op) {
  case op_kind::non_tof:
    f(rp::op::non_tof{});
    break;
  case op_kind::tof_sinogram:
    f(rp::op::tof_sinogram<T>(tof_of<T>(c)));
    break;
  case op_kind::tof_listmode:
    f(rp::op::tof_listmode<T>(tof_of<T>(c),
                              rp::span<const std::int16_t>(c.bins, c.count)));
    break;
  }
}

/// Calls `f(lors)` with the call's LOR source in precision T.
template <class T, class F> void with_lors(const call &c, F &&f) {
  const T *a = static_cast<const T *>(c.a);
  switch (c.lors) {
  case lor_kind::end_points:
    f(rp::lor_view<const T>(a, static_cast<const T *>(c.b), c.count));
    break;
  case lor_kind::detector_pairs:
    f(rp::detector_pairs<T>(a, c.num_detectors, static_cast<const std::int32_t *>(c.b),
                            c.count));
    break;
  case lor_kind::sinogram: {
    rp::scanner::sinogram_geometry g;
    g.crystals_per_ring = c.sino.crystals_per_ring;
    g.num_rings = c.sino.num_rings;
    g.num_views = c.sino.num_views;
    g.radial_trim = c.sino.radial_trim;
    g.num_radial = c.sino.num_radial;
    g.num_planes = c.sino.num_planes;
    g.plane_rings = c.planes;
    f(rp::scanner::make_sinogram_source<T>(
        a, c.num_detectors, g, static_cast<const std::int32_t *>(c.b),
        int(c.num_subset_views), c.sino.first_plane, c.sino.subset_planes));
    break;
  }
  }
}

} // namespace resproj_py
