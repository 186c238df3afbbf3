/// @file
/// @brief Multiplicative and additive corrections of the PET data model and
/// the sensitivity image, on the CPU: per-LOR corrections from detector
/// efficiencies (normalisation) and attenuation (a forward projection of
/// the mu-map), per-event corrections of list-mode data, and the
/// sensitivity image `A^T m` over a sinogram described by
/// `sinogram_subsets` (no LOR arrays). The GPU versions are in
/// gpu_corrections.cuh.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// The corrections of the data model `ybar = m (A x) + a` besides the
/// activity: `m = scale * eff[a] * eff[b] * exp(-integral of mu)` per LOR,
/// `a = background` per sinogram bin (spread over the TOF bins in TOF
/// list mode).
struct corrections {
  std::vector<float> efficiency; ///< per detector (normalisation), around 1
  std::vector<float> mu;         ///< attenuation image (1/mm), the image's size
  float scale = 1;               ///< counts per unit of forward projection
  float background = 0;          ///< additive counts per sinogram bin (non-TOF)

  /// Additive term per event: the background per bin spread over the TOF
  /// bins (`num_tof_bins` <= 0: non-TOF).
  float background_per_event(int num_tof_bins) const {
    return num_tof_bins > 0 ? background / float(num_tof_bins) : background;
  }
};

/// Multiplicative correction of the LOR from detector `da` to `db`, given
/// its attenuation line integral.
RESPROJ_HD inline float lor_correction(float scale, const float *efficiency,
                                       std::int32_t da, std::int32_t db,
                                       float mu_integral) {
#if RESPROJ_IN_DEVICE_CODE
  return scale * efficiency[da] * efficiency[db] * expf(-mu_integral);
#else
  return scale * efficiency[da] * efficiency[db] * std::exp(-mu_integral);
#endif
}

namespace detail {
template <class F> void parallel_for(std::size_t n, F &&f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (std::int64_t i = 0; i < std::int64_t(n); ++i)
    f(std::size_t(i));
}
inline void check_corrections(const corrections &c, const sinogram_subsets &sub) {
  if (c.mu.size() != std::size_t(sub.image.num_voxels()))
    resproj::detail::throw_invalid("c.mu", "size does not match the image");
  if (c.efficiency.size() != sub.num_detectors())
    resproj::detail::throw_invalid("c.efficiency", "one per detector needed");
}
} // namespace detail

/// Per-event corrections of `lm` (CPU): m from the efficiencies and the
/// attenuation along each event's LOR, a = `c.background_per_event`.
/// Synchronous.
/// @throws invalid_argument ("c.mu", "c.efficiency") for wrong sizes; as
///         `cpu::forward` for events outside the detector table.
inline void listmode_corrections(const sinogram_subsets &sub, const corrections &c,
                                 const tof_params<float> &tof, listmode_data &lm) {
  detail::check_corrections(c, sub);
  const std::size_t n = lm.count();
  lm.m.resize(n);
  lm.a.assign(n, c.background_per_event(tof.num_bins));
  const detector_pairs<float> lors(sub.detectors.data(), sub.num_detectors(),
                                   lm.pairs.data(), n);
  cpu::forward(op::non_tof{}, image_view<const float>(c.mu.data(), sub.image), lors,
               span<float>(lm.m.data(), n));
  for (std::size_t i = 0; i < n; ++i)
    lm.m[i] = lor_correction(c.scale, c.efficiency.data(), lm.pairs[2 * i],
                             lm.pairs[2 * i + 1], lm.m[i]);
}

/// The multiplicative corrections of subset `s`'s LORs (CPU) into `m`
/// (`sub.subset_count(s)` values). Synchronous.
/// @throws invalid_argument ("c.mu", "c.efficiency", "m") for wrong sizes.
inline void sinogram_corrections(const sinogram_subsets &sub, const corrections &c, int s,
                                 span<float> m) {
  detail::check_corrections(c, sub);
  const std::size_t k = sub.subset_count(s);
  if (m.size() != k)
    resproj::detail::throw_invalid("m", "size must be the subset's LOR count");
  cpu::forward(op::non_tof{}, image_view<const float>(c.mu.data(), sub.image),
               sub.source(s), m);
  detail::parallel_for(k, [&](std::size_t i) {
    std::int32_t da, db;
    sub.detector_pair(s, i, da, db);
    m[i] = lor_correction(c.scale, c.efficiency.data(), da, db, m[i]);
  });
}

/// The total sensitivity image with attenuation and normalisation (CPU):
/// for every subset of `sub` (or only the first `num_subsets`, e.g. for
/// timing at a smaller size) its corrections, back projected and summed.
/// Synchronous.
/// @throws invalid_argument ("c.mu", "c.efficiency") for wrong sizes.
inline std::vector<float> sensitivity_image(const sinogram_subsets &sub,
                                            const corrections &c, int num_subsets = -1) {
  const int used =
      num_subsets < 0 ? sub.num_subsets() : std::min(num_subsets, sub.num_subsets());
  std::vector<float> sens(std::size_t(sub.image.num_voxels()), 0.f), m;
  for (int s = 0; s < used; ++s) {
    m.resize(sub.subset_count(s));
    sinogram_corrections(sub, c, s, span<float>(m.data(), m.size()));
    cpu::back(op::non_tof{}, image_view<float>(sens.data(), sub.image), sub.source(s),
              span<const float>(m.data(), m.size()));
  }
  return sens;
}

/// One sensitivity image per subset, `A_s^T m_s`, from the corrections
/// `d.m` of sinogram data (CPU). Synchronous.
/// @throws invalid_argument ("d") if its offsets do not match `sub`.
inline std::vector<std::vector<float>> sensitivity_images(const sinogram_subsets &sub,
                                                          const sinogram_data &d) {
  if (d.offset != sinogram_offsets(sub) || d.m.size() != d.offset.back())
    resproj::detail::throw_invalid("d", "offsets or m do not match the subsets");
  std::vector<std::vector<float>> out;
  for (int s = 0; s < sub.num_subsets(); ++s) {
    out.emplace_back(std::size_t(sub.image.num_voxels()), 0.f);
    cpu::back(
        op::non_tof{}, image_view<float>(out.back().data(), sub.image), sub.source(s),
        span<const float>(d.m.data() + d.offset[std::size_t(s)], sub.subset_count(s)));
  }
  return out;
}

} // namespace recon
RESPROJ_NAMESPACE_END
