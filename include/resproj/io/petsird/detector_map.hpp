/// @file
/// @brief `petsird::detector_map`: PETSIRD's (module type, module, element)
/// and detection bins mapped to the library's detector indices, and the
/// detector table of the crystal (box) centres. Standard library only.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/scanner/detector_table.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// The detector index of every detecting element of a PETSIRD scanner:
///
///     index(type, module, element) = first(type) + module * num_elements(type) + element
///     first(type) = sum over t < type of num_modules(t) * num_elements(t)
///
/// so indices run over module type 0 first, then its modules, then the
/// elements of a module (depth-of-interaction layers are elements of their
/// own). A detection bin `b` of module type `t` (element and energy bin)
/// is element `b / num_energy_bins(t)`, so its detector is
/// `first(t) + b / num_energy_bins(t)`, its energy bin `b % num_energy_bins(t)`.
/// Copyable; immutable.
class detector_map {
public:
  /// @throws io_error ("scanner.scanner_geometry") if the scanner has no
  ///         module type, no detecting element, or 2^31 or more of them.
  explicit detector_map(const scanner_information &s) {
    const std::size_t nt = s.num_module_types();
    if (nt == 0)
      throw io_error("resproj: PETSIRD scanner.scanner_geometry: no module type");
    first_.resize(nt + 1, 0);
    num_elements_.resize(nt);
    num_energy_bins_.resize(nt);
    num_bins_.resize(nt);
    for (std::size_t t = 0; t < nt; ++t) {
      num_elements_[t] = s.module_types[t].num_elements();
      num_energy_bins_[t] = s.num_energy_bins(t);
      if (num_energy_bins_[t] > 65535)
        throw io_error("resproj: PETSIRD scanner.event_energy_bin_edges[" +
                       std::to_string(t) + "]: more than 65535 energy bins");
      const std::uint64_t n =
          std::uint64_t(s.module_types[t].num_modules()) * num_elements_[t];
      first_[t + 1] = first_[t] + n;
      if (first_[t + 1] > std::uint64_t(std::numeric_limits<std::int32_t>::max()))
        throw io_error("resproj: PETSIRD scanner.scanner_geometry: more than 2^31 - 1 "
                       "detecting elements");
      num_bins_[t] = n * num_energy_bins_[t];
    }
    if (first_[nt] == 0)
      throw io_error("resproj: PETSIRD scanner.scanner_geometry: no detecting element");
  }

  /// Number of module types.
  std::size_t num_module_types() const noexcept { return num_elements_.size(); }
  /// Number of detectors (detecting elements of all module types).
  std::int32_t num_detectors() const noexcept { return std::int32_t(first_.back()); }
  /// First detector index of module type `t`.
  std::int32_t first_detector(std::size_t t) const noexcept {
    return std::int32_t(first_[t]);
  }
  /// Elements per module of type `t`.
  std::size_t num_elements(std::size_t t) const noexcept { return num_elements_[t]; }
  /// Energy bins of type `t`.
  std::size_t num_energy_bins(std::size_t t) const noexcept {
    return num_energy_bins_[t];
  }
  /// Detection bins of type `t`.
  std::uint64_t num_detection_bins(std::size_t t) const noexcept { return num_bins_[t]; }
  /// Detector index of (type, module, element) (unchecked).
  std::int32_t detector(std::size_t t, std::size_t module,
                        std::size_t element) const noexcept {
    return std::int32_t(first_[t] + module * num_elements_[t] + element);
  }
  /// Detector index of detection bin `bin` of type `t` (unchecked).
  std::int32_t detector_of_bin(std::size_t t, std::uint64_t bin) const noexcept {
    return std::int32_t(first_[t] + bin / num_energy_bins_[t]);
  }
  /// Detector index and energy bin of detection bin `bin` (< 2^32) of type
  /// `t` (unchecked): one 32-bit division, none with one energy bin.
  std::pair<std::int32_t, std::uint16_t> split_bin(std::size_t t,
                                                   std::uint32_t bin) const noexcept {
    const std::uint32_t ne = std::uint32_t(num_energy_bins_[t]);
    if (ne == 1)
      return {std::int32_t(first_[t] + bin), std::uint16_t(0)};
    const std::uint32_t element = bin / ne;
    return {std::int32_t(first_[t] + element), std::uint16_t(bin - element * ne)};
  }
  /// The module type of detector `d` (unchecked: 0 <= d < num_detectors()).
  std::size_t type_of(std::int32_t d) const noexcept {
    std::size_t t = 0;
    while (std::uint64_t(d) >= first_[t + 1])
      ++t;
    return t;
  }

private:
  std::vector<std::uint64_t> first_;
  std::vector<std::size_t> num_elements_, num_energy_bins_;
  std::vector<std::uint64_t> num_bins_;
};

/// The centre of every detecting element's box, after the element's and
/// then its module's transform, in detector-index order (`detector_map`):
/// 3 floats per detector, PETSIRD's gantry x, y, z (mm) as image axes 0,
/// 1, 2.
/// @throws io_error as `detector_map`, or naming the element whose centre
///         is not finite.
inline std::vector<float> detector_centres(const scanner_information &s) {
  const detector_map map(s);
  std::vector<float> xyz;
  xyz.reserve(3 * std::size_t(map.num_detectors()));
  for (std::size_t t = 0; t < s.num_module_types(); ++t) {
    const module_type &m = s.module_types[t];
    const std::array<double, 3> c = m.element_box.centre();
    for (std::size_t mod = 0; mod < m.num_modules(); ++mod)
      for (std::size_t e = 0; e < m.num_elements(); ++e) {
        const std::array<double, 3> p =
            m.module_transforms[mod].apply(m.element_transforms[e].apply(c));
        for (std::size_t k = 0; k < 3; ++k) {
          if (!std::isfinite(float(p[k])))
            throw io_error("resproj: PETSIRD scanner.scanner_geometry: centre of module "
                           "type " +
                           std::to_string(t) + " module " + std::to_string(mod) +
                           " element " + std::to_string(e) + " is not finite");
          xyz.push_back(float(p[k]));
        }
      }
  }
  return xyz;
}

/// The detector table of the scanner (`detector_centres`), usable by every
/// projector that takes detector pairs.
/// @throws io_error as `detector_centres`.
inline scanner::detector_table make_detector_table(const scanner_information &s) {
  return scanner::detector_table(detector_centres(s));
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
