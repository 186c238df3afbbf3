/// @file
/// @brief OSEM backends on the GPU, run with `recon::osem` (em.hpp): the
/// data, the image, the sensitivity and the work buffers are resident, and
/// every step of a subset is queued on one stream (projections, the EM
/// ratio and update), so nothing leaves the GPU between subsets. One
/// backend for (TOF) list-mode events grouped by subset, one for sinogram
/// data with subsets by view. Needs nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/listmode_key_layout.hpp"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/recon/gpu_em.cuh"
#include "resproj/recon/gpu_listmode_events.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// OSEM backend for (TOF when `tof.num_bins > 0`) list-mode events grouped
/// by subset, on the GPU. Keeps references to the events, their corrections,
/// the detector table and the total sensitivity image (each subset uses
/// 1/S of it); owns the image, the back projection and the projection
/// buffer. Projections follow the events' `layout` (sorted events after
/// `gpu_order_subsets`: the kernels for sorted events). For sorted TOF
/// events on an image the L2 cache can hold (at most
/// `gpu::listmode_tof_key::max_unsliced_voxels`) it also owns a stencil
/// workspace of width 2 (about 4 x the image's memory) for its back
/// projections (`opt.stencil`; docs/kernel-choices.md, "The stencil
/// workspace in OSEM").
struct gpu_listmode_backend {
  const device_events &events;
  span<const float> detectors; ///< xyz per detector (device)
  span<const float> m, a;      ///< per-event corrections (device)
  tof_params<float> tof;
  const gpu::device_image<float> &sensitivity; ///< total, A^T m over all LORs
  gpu::stream_ref s;
  gpu::device_image<float> x, g; ///< image, back projected ratio
  gpu::device_buffer<float> q;   ///< projection / ratio of the current subset
  /// The back projections' workspace, where the backend owns one.
  std::optional<gpu::stencil_workspace<float>> stencil;
  /// Overrides of the projections (`stencil` names the backend's workspace,
  /// if any; clear it to back project into the image directly).
  gpu::tuning opt;

  /// Allocates and uploads on `stream` (no synchronisation).
  /// @param x0 start image (host)
  /// @throws invalid_argument ("events", "m", "a", "sensitivity", "x0") for
  ///         sizes that do not match.
  gpu_listmode_backend(const device_events &ev, span<const float> detector_table,
                       span<const float> m_, span<const float> a_,
                       const tof_params<float> &tof_,
                       const gpu::device_image<float> &sens, const std::vector<float> &x0,
                       gpu::stream_ref stream)
      : events(ev), detectors(detector_table), m(m_), a(a_), tof(tof_), sensitivity(sens),
        s(stream), x(sens.geometry(), s), g(sens.geometry(), s), q(ev.max_count(), s) {
    const std::size_t n = ev.count();
    if (ev.num_subsets() < 1 || ev.pairs.size() < 2 * n || ev.bins.size() < n)
      resproj::detail::throw_invalid("events", "not grouped by subset");
    if (m.size() != n)
      resproj::detail::throw_invalid("m", "one value per event needed");
    if (a.size() != n)
      resproj::detail::throw_invalid("a", "one value per event needed");
    if (x0.size() != x.size())
      resproj::detail::throw_invalid("x0", "size does not match the image");
    x.upload(span<const float>(x0.data(), x0.size()), s);
    if (owns_stencil(ev, tof, sens.geometry())) {
      stencil.emplace(sens.geometry(), s, 2);
      opt.stencil = stencil->ref();
    }
  }
  /// Whether a backend of these events and this image owns a stencil
  /// workspace: sorted TOF events on an image the L2 holds
  /// (`gpu::listmode_tof_key::unsliced`).
  static bool owns_stencil(const device_events &ev, const tof_params<float> &tof,
                           const image_geometry &g) {
    return tof.num_bins > 0 && ev.layout == lor_layout::sorted_events() &&
           gpu::listmode_tof_key::unsliced(g);
  }
  int num_subsets() const { return events.num_subsets(); }
  std::size_t count(int k) const { return events.count(k); }
  /// The events of subset k, with their order.
  detector_pairs<float> lors(int k) const { return events.lors(k, detectors); }
  /// The TOF list-mode operation of subset k (for `tof.num_bins > 0`).
  op::tof_listmode<float> tof_operation(int k) const {
    return op::tof_listmode<float>(tof, events.bins_of(k));
  }
  void forward(int k) {
    const auto out = q.span().subspan(0, count(k));
    if (tof.num_bins > 0)
      gpu::forward(tof_operation(k), x.cview(), lors(k), out, s, opt);
    else
      gpu::forward(op::non_tof{}, x.cview(), lors(k), out, s, opt);
  }
  void ratio(int k) {
    const std::size_t o = events.first(k), n = count(k);
    gpu_em_ratio(q.span().subspan(0, n), m.subspan(o, n), a.subspan(o, n), s);
  }
  void back(int k) {
    g.zero(s);
    const span<const float> v(q.data(), count(k));
    if (tof.num_bins > 0)
      gpu::back(tof_operation(k), g.view(), lors(k), v, s, opt);
    else
      gpu::back(op::non_tof{}, g.view(), lors(k), v, s, opt);
  }
  void update(int) { gpu_em_update(x, g, sensitivity, 1.f / float(num_subsets()), s); }
  void finish() { s.synchronize(); }
  /// The image, downloaded (synchronises).
  std::vector<float> image() const {
    std::vector<float> h(x.size());
    x.download(span<float>(h.data(), h.size()), s);
    s.synchronize();
    return h;
  }
};

/// OSEM backend for sinogram data with subsets by view, on the GPU: uploads
/// the data and computes one sensitivity image per subset from the uploaded
/// m. Keeps a reference to `sub`.
struct gpu_sinogram_backend {
  const sinogram_subsets &sub;
  gpu::stream_ref s;
  device_sinogram_subsets dsub;
  std::vector<std::size_t> offset;
  gpu::device_buffer<float> y, m, a, q;
  gpu::device_image<float> x, g;
  std::vector<gpu::device_image<float>> sens; ///< per subset
  gpu::tuning opt;                            ///< expert overrides of the projections

  /// Allocates, uploads and back projects on `stream` (no synchronisation;
  /// the host data may be released once `stream` has run).
  /// @throws invalid_argument ("d", "x0") for sizes that do not match `sub`.
  gpu_sinogram_backend(const sinogram_subsets &sub_, const sinogram_data &d,
                       const std::vector<float> &x0, gpu::stream_ref stream)
      : sub(sub_), s(stream), dsub(sub, s), offset(d.offset), x(sub.image, s),
        g(sub.image, s) {
    if (d.offset != sinogram_offsets(sub) || d.y.size() != d.offset.back() ||
        d.m.size() != d.y.size() || d.a.size() != d.y.size())
      resproj::detail::throw_invalid("d", "offsets or sizes do not match the subsets");
    if (x0.size() != std::size_t(sub.image.num_voxels()))
      resproj::detail::throw_invalid("x0", "size does not match the image");
    y = detail::upload(d.y, s);
    m = detail::upload(d.m, s);
    a = detail::upload(d.a, s);
    q = gpu::device_buffer<float>(sub.max_subset_count(), s);
    x.upload(span<const float>(x0.data(), x0.size()), s);
    for (int k = 0; k < sub.num_subsets(); ++k) {
      sens.emplace_back(sub.image, s);
      sens.back().zero(s);
      gpu::back(op::non_tof{}, sens.back().view(), dsub.source(sub, k),
                span<const float>(m.data() + offset[std::size_t(k)], sub.subset_count(k)),
                s);
    }
  }
  int num_subsets() const { return sub.num_subsets(); }
  // The subsets' sinogram sources know their layout: a warp's lanes take
  // neighbouring planes.
  void forward(int k) {
    gpu::forward(op::non_tof{}, x.cview(), dsub.source(sub, k),
                 q.span().subspan(0, sub.subset_count(k)), s, opt);
  }
  void ratio(int k) {
    const std::size_t o = offset[std::size_t(k)], n = sub.subset_count(k);
    gpu_em_ratio(q.span().subspan(0, n), cspan(m, o, n), cspan(a, o, n), cspan(y, o, n),
                 s);
  }
  void back(int k) {
    g.zero(s);
    gpu::back(op::non_tof{}, g.view(), dsub.source(sub, k),
              span<const float>(q.data(), sub.subset_count(k)), s, opt);
  }
  void update(int k) { gpu_em_update(x, g, sens[std::size_t(k)], 1.f, s); }
  void finish() { s.synchronize(); }
  /// The image, downloaded (synchronises).
  std::vector<float> image() const {
    std::vector<float> h(x.size());
    x.download(span<float>(h.data(), h.size()), s);
    s.synchronize();
    return h;
  }

private:
  static span<const float> cspan(const gpu::device_buffer<float> &b, std::size_t o,
                                 std::size_t n) {
    return {b.data() + o, n};
  }
};

} // namespace recon
RESPROJ_NAMESPACE_END
