/// @file
/// @brief The parts of a PETSIRD header that projection and reconstruction
/// use (scanner geometry, TOF and energy bins, detection efficiencies), as
/// plain structs, with the counts derived from them. Standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// A rigid transformation: `p' = M [p; 1]` with `M` 3 x 4, row-major.
struct rigid_transform {
  std::array<float, 12> matrix{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};

  /// `M [p; 1]`, computed in double.
  std::array<double, 3> apply(const std::array<double, 3> &p) const noexcept {
    std::array<double, 3> r{};
    for (std::size_t i = 0; i < 3; ++i)
      r[i] = double(matrix[4 * i]) * p[0] + double(matrix[4 * i + 1]) * p[1] +
             double(matrix[4 * i + 2]) * p[2] + double(matrix[4 * i + 3]);
    return r;
  }
};

/// A box given by its 8 corners.
struct box_shape {
  std::array<std::array<float, 3>, 8> corners{};

  /// The mean of the corners (the centre of a box), in double.
  std::array<double, 3> centre() const noexcept {
    std::array<double, 3> c{};
    for (const auto &corner : corners)
      for (std::size_t k = 0; k < 3; ++k)
        c[k] += double(corner[k]) / 8.0;
    return c;
  }
};

/// One module type (a `ReplicatedDetectorModule`): a module of detecting
/// elements (one box replicated by `element_transforms`, depth-of-interaction
/// layers being separate elements) placed by `module_transforms`.
struct module_type {
  box_shape element_box;                           ///< in element coordinates
  std::uint32_t element_material = 0;              ///< bulk material id
  std::vector<rigid_transform> element_transforms; ///< element -> module
  std::vector<rigid_transform> module_transforms;  ///< module -> gantry

  /// Detecting elements per module.
  std::size_t num_elements() const noexcept { return element_transforms.size(); }
  /// Modules of this type.
  std::size_t num_modules() const noexcept { return module_transforms.size(); }
};

/// The efficiency of pairs of detection bins in one module pair (one
/// symmetry group): `values[bin_in_module_1][bin_in_module_2]`, where the
/// bin in a module is `element * num_energy_bins + energy`.
struct module_pair_efficiencies {
  std::vector<std::vector<float>> values;
  std::int32_t sgid = 0; ///< symmetry group id
};

/// PETSIRD's component-based detection efficiency model.
struct detection_efficiencies {
  std::string method_description;
  float calibration_factor = 0;
  /// Per module type, per detection bin (empty: 1).
  std::vector<std::vector<float>> detection_bin_efficiencies;
  /// `[type1][type2][module1][module2]` symmetry group, -1 when the pair is
  /// not in coincidence (type2 <= type1; empty: no module-pair factor).
  std::vector<std::vector<std::vector<std::vector<std::int32_t>>>> module_pair_sgid;
  /// `[type1][type2][sgid]` (type2 <= type1).
  std::vector<std::vector<std::vector<module_pair_efficiencies>>> module_pair;
};

/// The scanner description of a PETSIRD header.
struct scanner_information {
  std::string model_name;
  std::vector<module_type> module_types;
  std::optional<rigid_transform> gantry_alignment;
  std::string collimator_type;
  /// TOF bin edges (mm, `(t1 - t2) c / 2`) per module-type pair,
  /// `[type1][type2]`, type2 <= type1.
  std::vector<std::vector<std::vector<float>>> tof_bin_edges;
  /// TOF resolution (FWHM, mm) per module-type pair, `[type1][type2]`.
  std::vector<std::vector<float>> tof_resolution;
  /// Energy bin edges (keV) per module type.
  std::vector<std::vector<float>> energy_bin_edges;
  /// Energy resolution at 511 keV (FWHM / 511) per module type.
  std::vector<float> energy_resolution_at_511;
  std::int32_t singles_histogram_level = 0;
  std::int32_t single_event_policy = 0;
  std::int32_t prompt_event_policy = 0;
  std::int32_t delayed_event_policy = 0;
  std::int32_t triple_event_policy = 0;
  std::int32_t quadruple_event_policy = 0;
  detection_efficiencies efficiencies;

  /// Number of module types.
  std::size_t num_module_types() const noexcept { return module_types.size(); }
  /// Energy bins of module type `t` (1 when its edges are missing).
  std::size_t num_energy_bins(std::size_t t) const noexcept {
    return t < energy_bin_edges.size() && energy_bin_edges[t].size() >= 2
               ? energy_bin_edges[t].size() - 1
               : 1;
  }
  /// Detection bins (modules x elements x energy bins) of module type `t`.
  std::uint64_t num_detection_bins(std::size_t t) const noexcept {
    const module_type &m = module_types[t];
    return std::uint64_t(m.num_modules()) * m.num_elements() * num_energy_bins(t);
  }
  /// The TOF bin edges of the pair of types (either order), or null.
  const std::vector<float> *tof_edges(std::size_t t1, std::size_t t2) const noexcept {
    if (t2 > t1)
      std::swap(t1, t2);
    if (t1 < tof_bin_edges.size() && t2 < tof_bin_edges[t1].size() &&
        tof_bin_edges[t1][t2].size() >= 2)
      return &tof_bin_edges[t1][t2];
    return nullptr;
  }
  /// TOF bins of the pair of types (either order); 0 when no edges.
  std::size_t num_tof_bins(std::size_t t1, std::size_t t2) const noexcept {
    const std::vector<float> *e = tof_edges(t1, t2);
    return e != nullptr ? e->size() - 1 : 0;
  }
};

/// A PETSIRD header: the scanner, and whether exam information was present
/// (read and skipped).
struct header {
  scanner_information scanner;
  bool has_exam = false;
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
