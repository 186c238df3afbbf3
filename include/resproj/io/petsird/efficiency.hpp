/// @file
/// @brief `petsird::efficiency_model`: PETSIRD's detection efficiencies
/// (per detection bin, and per pair of detection bins in a module pair via
/// symmetry groups) as normalisation factors for detector pairs and
/// events, and as the per-detector efficiencies of `recon::corrections`.
/// Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/header.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// The detection efficiency of a pair of detection bins, as PETSIRD
/// defines it: `eff1(bin1) * eff2(bin2) * pair[sgid](bin in module 1, bin
/// in module 2)`, with `sgid` from the module-pair lookup table (a negative
/// one meaning "not in coincidence": factor 0); a missing (empty) component
/// counts as 1. The calibration factor is left out (it is an absolute
/// scale: put it into `recon::corrections::scale` if wanted).
/// All sizes are checked once, on construction, so the factor functions
/// only index. Copyable; immutable (concurrent calls are safe).
class efficiency_model {
public:
  /// @throws io_error naming the field ("detection_efficiencies....") whose
  ///         sizes do not match the scanner, or an sgid out of range.
  explicit efficiency_model(const scanner_information &s) : s_(s), map_(s) {
    const detection_efficiencies &e = s.efficiencies;
    const std::size_t nt = s.num_module_types();
    auto bad = [](const std::string &field, const std::string &problem) {
      throw io_error("resproj: PETSIRD scanner.detection_efficiencies." + field + ": " +
                     problem);
    };
    if (!e.detection_bin_efficiencies.empty()) {
      if (e.detection_bin_efficiencies.size() != nt)
        bad("detection_bin_efficiencies", "one list per module type needed");
      for (std::size_t t = 0; t < nt; ++t)
        if (!e.detection_bin_efficiencies[t].empty() &&
            e.detection_bin_efficiencies[t].size() != map_.num_detection_bins(t))
          bad("detection_bin_efficiencies[" + std::to_string(t) + "]",
              "size " + std::to_string(e.detection_bin_efficiencies[t].size()) +
                  " is not the number of detection bins " +
                  std::to_string(map_.num_detection_bins(t)));
    }
    pairs_ = !e.module_pair_sgid.empty() && !e.module_pair.empty();
    if (!pairs_)
      return;
    for (std::size_t t1 = 0; t1 < nt; ++t1)
      for (std::size_t t2 = 0; t2 <= t1; ++t2) {
        const std::string at = "[" + std::to_string(t1) + "][" + std::to_string(t2) + "]";
        if (t1 >= e.module_pair_sgid.size() || t2 >= e.module_pair_sgid[t1].size() ||
            t1 >= e.module_pair.size() || t2 >= e.module_pair[t1].size())
          bad("module_pair_sgidlut" + at, "missing for a module-type pair");
        const auto &lut = e.module_pair_sgid[t1][t2];
        const auto &vec = e.module_pair[t1][t2];
        const std::size_t m1 = s.module_types[t1].num_modules();
        const std::size_t m2 = s.module_types[t2].num_modules();
        if (lut.size() != m1)
          bad("module_pair_sgidlut" + at, "one row per module needed");
        const std::size_t rows =
            s.module_types[t1].num_elements() * s.num_energy_bins(t1);
        const std::size_t cols =
            s.module_types[t2].num_elements() * s.num_energy_bins(t2);
        for (std::size_t i = 0; i < m1; ++i) {
          // Lower-triangular for equal types (module 2 <= module 1), else
          // rectangular; a full square table is accepted too.
          if (lut[i].size() != m2 && !(t1 == t2 && lut[i].size() == i + 1))
            bad("module_pair_sgidlut" + at + "[" + std::to_string(i) + "]",
                "row has " + std::to_string(lut[i].size()) + " entries");
          for (const std::int32_t g : lut[i])
            if (g >= std::int64_t(vec.size()))
              bad("module_pair_sgidlut" + at,
                  "sgid " + std::to_string(g) + " has no module_pair_efficiencies");
        }
        for (std::size_t g = 0; g < vec.size(); ++g) {
          bool ok = vec[g].values.size() == rows;
          for (const auto &row : vec[g].values)
            ok = ok && row.size() == cols;
          if (!ok)
            bad("module_pair_efficiencies_vectors" + at + "[" + std::to_string(g) + "]",
                "values must be " + std::to_string(rows) + " x " + std::to_string(cols));
        }
      }
  }

  /// The detector map of the scanner.
  const detector_map &map() const noexcept { return map_; }
  /// Whether module-pair factors are present (then the efficiency of a
  /// pair is not a product of per-detector efficiencies).
  bool has_module_pair_factors() const noexcept { return pairs_; }
  /// The calibration factor of the file (left out of every factor here).
  float calibration_factor() const noexcept { return s_.efficiencies.calibration_factor; }

  /// Efficiency of detection bin `b1` of type `t1` with `b2` of type `t2`
  /// (either order; unchecked: bins within their type's range).
  float factor(std::size_t t1, std::uint64_t b1, std::size_t t2,
               std::uint64_t b2) const noexcept {
    if (t1 < t2 || (t1 == t2 && b1 < b2)) {
      std::swap(t1, t2);
      std::swap(b1, b2);
    }
    const detection_efficiencies &e = s_.efficiencies;
    float f = bin_efficiency(t1, b1) * bin_efficiency(t2, b2);
    if (!pairs_ || f == 0.f)
      return f;
    const std::uint64_t per1 =
        s_.module_types[t1].num_elements() * map_.num_energy_bins(t1);
    const std::uint64_t per2 =
        s_.module_types[t2].num_elements() * map_.num_energy_bins(t2);
    const std::size_t mod1 = std::size_t(b1 / per1), mod2 = std::size_t(b2 / per2);
    const auto &row = e.module_pair_sgid[t1][t2][mod1];
    if (mod2 >= row.size())
      return 0.f; // outside a lower-triangular table: not stored
    const std::int32_t g = row[mod2];
    if (g < 0)
      return 0.f;
    return f * e.module_pair[t1][t2][std::size_t(g)]
                   .values[std::size_t(b1 % per1)][std::size_t(b2 % per2)];
  }

  /// Efficiency of the detector pair (`a`, `b`) for energy bins
  /// `energy_a`, `energy_b` (unchecked: detectors in range, energy bins
  /// below their type's count).
  float pair_factor(std::int32_t a, std::int32_t b, std::size_t energy_a = 0,
                    std::size_t energy_b = 0) const noexcept {
    const std::size_t ta = map_.type_of(a), tb = map_.type_of(b);
    return factor(ta, bin_of(ta, a, energy_a), tb, bin_of(tb, b, energy_b));
  }
  /// The same, as a functor: `model(a, b)`.
  float operator()(std::int32_t a, std::int32_t b) const noexcept {
    return pair_factor(a, b);
  }

  /// Per-detector efficiencies (the detection-bin efficiencies of energy
  /// bin `energy` of every type), in detector-index order: the
  /// `efficiency` of `recon::corrections`, exact when
  /// `has_module_pair_factors()` is false.
  /// @throws invalid_argument ("energy") if a module type has fewer bins.
  std::vector<float> detector_efficiencies(std::size_t energy = 0) const {
    std::vector<float> out(std::size_t(map_.num_detectors()));
    for (std::size_t t = 0; t < map_.num_module_types(); ++t) {
      if (energy >= map_.num_energy_bins(t))
        resproj::detail::throw_invalid("energy", "module type " + std::to_string(t) +
                                                     " has fewer energy bins");
      const std::int32_t first = map_.first_detector(t);
      const std::int32_t last = t + 1 < map_.num_module_types()
                                    ? map_.first_detector(t + 1)
                                    : map_.num_detectors();
      for (std::int32_t d = first; d < last; ++d)
        out[std::size_t(d)] = bin_efficiency(t, bin_of(t, d, energy));
    }
    return out;
  }

private:
  std::uint64_t bin_of(std::size_t t, std::int32_t d, std::size_t energy) const noexcept {
    return std::uint64_t(d - map_.first_detector(t)) * map_.num_energy_bins(t) + energy;
  }
  float bin_efficiency(std::size_t t, std::uint64_t b) const noexcept {
    const auto &v = s_.efficiencies.detection_bin_efficiencies;
    return v.empty() || v[t].empty() ? 1.f : v[t][std::size_t(b)];
  }

  scanner_information s_; ///< a copy: the model owns what it indexes
  detector_map map_;
  bool pairs_ = false;
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
