/// @file
/// @brief `petsird::write_file`: simulated list-mode data (a detector
/// table, TOF parameters, prompt and delayed events in time blocks) as a
/// PETSIRD 0.12 file that the official implementation reads. Standard
/// library only.
///
/// The scanner is written as one module type holding one module at the
/// identity transform, whose detecting elements are the detectors of the
/// table: element i is a box of `crystal_size` centred at detector i,
/// turned about z so that its first axis points away from the z axis.
/// Reading the file back gives the same detector table and indices.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/listmode_event.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/io/detail/replace_file.hpp"
#include "resproj/io/petsird/binary_output.hpp"
#include "resproj/io/petsird/schema.hpp"
#include "resproj/scanner/detector_table.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// The scanner of a file to write.
struct scanner_description {
  /// A description of the scanner `detectors`, the other fields defaulted.
  explicit scanner_description(scanner::detector_table detectors_)
      : detectors(std::move(detectors_)) {}

  scanner::detector_table detectors;           ///< crystal centres (mm)
  std::array<float, 3> crystal_size{20, 4, 4}; ///< radial, tangential, axial (mm)
  /// TOF bins (`num_bins` >= 1, 1 for non-TOF: then `bin_width` is the
  /// coincidence window) and resolution (`sigma`); per-LOR arrays unused.
  tof_params<float> tof;
  std::array<float, 2> energy_window{430, 650}; ///< keV
  float energy_resolution_at_511 = 0.11f;       ///< FWHM / 511 keV
  /// Per-detector efficiencies (empty: none written).
  std::vector<float> efficiency;
  std::string model_name = "resproj simulation";
};

/// One time block of events (`listmode_event`s: detector indices of the
/// table and TOF bins `0 .. tof.num_bins - 1`).
struct time_block_events {
  std::uint32_t start_ms = 0, stop_ms = 0;
  span<const listmode_event> prompts;
  span<const listmode_event> delayeds;
};

namespace detail {

inline void write_transform(binary_output &o, const std::array<float, 12> &m) {
  for (const float v : m)
    o.f32(v);
}

inline void write_header(binary_output &o, const scanner_description &d) {
  o.text(d.model_name);
  // scanner_geometry: one module type of one module.
  o.uvarint(1);
  const float hx = d.crystal_size[0] / 2, hy = d.crystal_size[1] / 2,
              hz = d.crystal_size[2] / 2;
  for (int c = 0; c < 8; ++c) {
    o.f32(c & 1 ? hx : -hx);
    o.f32(c & 2 ? hy : -hy);
    o.f32(c & 4 ? hz : -hz);
  }
  o.uvarint(0); // material id
  const std::vector<float> &xyz = d.detectors.xyz();
  o.uvarint(xyz.size() / 3);
  for (std::size_t i = 0; i < xyz.size(); i += 3) {
    const double phi = std::atan2(double(xyz[i + 1]), double(xyz[i]));
    const float c = float(std::cos(phi)), s = float(std::sin(phi));
    write_transform(o, {c, -s, 0, xyz[i], s, c, 0, xyz[i + 1], 0, 0, 1, xyz[i + 2]});
  }
  o.uvarint(0); // non_detecting_elements
  o.uvarint(1); // module transforms
  write_transform(o, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  o.byte(0);    // non_detecting_volumes: absent
  o.uvarint(0); // bulk_materials
  o.byte(0);    // gantry_alignment: absent
  o.text("NONE");
  // TOF bin edges and resolution, [[...]].
  const tof_params<float> &t = d.tof;
  o.uvarint(1);
  o.uvarint(1);
  o.uvarint(std::size_t(t.num_bins) + 1);
  for (int k = 0; k <= t.num_bins; ++k)
    o.f32(float(double(t.center_offset) +
                (double(k) - 0.5 * double(t.num_bins)) * double(t.bin_width)));
  o.uvarint(1);
  o.uvarint(1);
  o.f32(float(double(t.sigma) * 2.0 * std::sqrt(2.0 * std::log(2.0))));
  o.uvarint(1); // event_energy_bin_edges
  o.uvarint(2);
  o.f32(d.energy_window[0]);
  o.f32(d.energy_window[1]);
  o.uvarint(1);
  o.f32(d.energy_resolution_at_511);
  o.svarint(0); // singles_histogram_level: none
  o.uvarint(0); // module_singles_unit_idx_lu_ts
  o.uvarint(0); // singles_histogram_energy_bin_edges
  o.svarint(0); // single_event_policy: none
  o.svarint(1); // prompt_event_policy: reject higher multiples
  o.svarint(1); // delayed_event_policy: reject higher multiples
  o.svarint(0); // triple_event_policy: none
  o.svarint(0); // quadruple_event_policy: none
  // detection_efficiencies
  o.text(d.efficiency.empty() ? "" : "per-detector efficiencies (resproj)");
  o.f32(1.f);
  if (d.efficiency.empty()) {
    o.uvarint(0);
  } else {
    o.uvarint(1);
    o.uvarint(d.efficiency.size());
    for (const float e : d.efficiency)
      o.f32(e);
  }
  o.uvarint(0); // module_pair_sgidlut
  o.uvarint(0); // module_pair_efficiencies_vectors
  o.byte(0);    // exam: absent
}

/// One coincidence list `[[events]]`, ordered as PETSIRD requires (first
/// detection bin >= second; a swapped event gets the mirrored TOF bin).
inline void write_events(binary_output &o, span<const listmode_event> events,
                         int num_bins) {
  o.uvarint(1);
  o.uvarint(1);
  o.uvarint(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const listmode_event &e = events[i];
    const std::uint32_t a = e.detector_a(), b = e.detector_b();
    const std::int32_t bin = e.tof_bin();
    if (a >= b) {
      o.uvarint(a);
      o.uvarint(b);
      o.uvarint(std::uint32_t(bin));
    } else {
      o.uvarint(b);
      o.uvarint(a);
      o.uvarint(std::uint32_t(num_bins - 1 - bin));
    }
  }
}

inline void check_events(span<const listmode_event> events, std::uint32_t num_detectors,
                         int num_bins, bool mirrorable, const std::string &name) {
  if (!events.empty() && events.data() == nullptr)
    resproj::detail::throw_invalid(name, "null pointer with size " +
                                             std::to_string(events.size()));
  for (std::size_t i = 0; i < events.size(); ++i) {
    const listmode_event &e = events[i];
    if (e.detector_a() >= num_detectors || e.detector_b() >= num_detectors ||
        e.tof_bin() < 0 || e.tof_bin() >= num_bins)
      resproj::detail::throw_invalid(name, "event " + std::to_string(i) +
                                               " has a detector past the table or a "
                                               "TOF bin out of range");
    if (!mirrorable && e.detector_a() < e.detector_b())
      resproj::detail::throw_invalid(
          name, "event " + std::to_string(i) +
                    " has detector_a < detector_b, which PETSIRD stores swapped with "
                    "the TOF bin mirrored: needs tof.center_offset == 0");
  }
}

} // namespace detail

/// Writes `blocks` with scanner `d` as the PETSIRD 0.12 file `path`
/// (created, or replaced only when the whole file is written).
/// @throws invalid_argument naming "d.tof" (num_bins outside 1..32767,
///         bin_width or sigma not finite and > 0), "d.efficiency" (not one
///         per detector), "blocks[i].prompts" / ".delayeds" (null, a
///         detector past the table, a TOF bin out of range, a < b with a
///         nonzero centre offset); nothing is written then.
/// @throws io_error if the file cannot be written.
inline void write_file(const std::string &path, const scanner_description &d,
                       span<const time_block_events> blocks) {
  using resproj::detail::throw_invalid;
  const tof_params<float> &t = d.tof;
  if (t.num_bins < 1 || t.num_bins > 32767)
    throw_invalid("d.tof.num_bins", "must be in [1, 32767]");
  if (!std::isfinite(t.bin_width) || !(t.bin_width > 0))
    throw_invalid("d.tof.bin_width", "must be finite and > 0");
  if (!std::isfinite(t.sigma) || !(t.sigma > 0))
    throw_invalid("d.tof.sigma", "must be finite and > 0");
  if (!std::isfinite(t.center_offset))
    throw_invalid("d.tof.center_offset", "must be finite");
  const std::uint32_t n = std::uint32_t(d.detectors.num_detectors());
  if (!d.efficiency.empty() && d.efficiency.size() != n)
    throw_invalid("d.efficiency", "must hold one value per detector (or none)");
  if (!blocks.empty() && blocks.data() == nullptr)
    throw_invalid("blocks", "null pointer with size " + std::to_string(blocks.size()));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string b = "blocks[" + std::to_string(i) + "]";
    detail::check_events(blocks[i].prompts, n, t.num_bins, t.center_offset == 0.f,
                         b + ".prompts");
    detail::check_events(blocks[i].delayeds, n, t.num_bins, t.center_offset == 0.f,
                         b + ".delayeds");
  }
  resproj::io::detail::rawio::replace_file(path, [&](std::fstream &f) {
    binary_output o(f, path);
    o.bytes(yardl_magic, 5);
    o.fixed_u32(std::uint32_t(yardl_binary_version));
    o.text(schema_text, schema_size);
    detail::write_header(o, d);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const time_block_events &b = blocks[i];
      o.uvarint(1); // a stream block of one time block
      o.byte(0);    // EventTimeBlock
      o.uvarint(b.start_ms);
      o.uvarint(b.stop_ms);
      o.uvarint(0); // single_events
      detail::write_events(o, b.prompts, t.num_bins);
      detail::write_events(o, b.delayeds, t.num_bins);
      o.uvarint(0); // triple_events
      o.uvarint(0); // quadruple_events
    }
    o.uvarint(0); // end of the time-block stream
    o.flush();
  });
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
