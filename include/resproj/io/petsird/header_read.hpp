/// @file
/// @brief Reading the opening of a PETSIRD file: the yardl preamble (magic,
/// format version, schema, which must be PETSIRD 0.12's) and the header
/// (`read_preamble`, `read_header`). Standard library only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/schema.hpp"
#include "resproj/io/petsird/skip.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Reads and checks the yardl preamble: the magic "yardl", binary format
/// version 1 and the embedded schema, which must equal PETSIRD 0.12's.
/// @throws io_error naming the problem (wrong magic, version, schema; for a
///         different schema the first differing byte and both lengths).
inline void read_preamble(binary_input &in) {
  char magic[5];
  in.bytes(magic, 5, "yardl magic");
  for (std::size_t i = 0; i < 5; ++i)
    if (magic[i] != yardl_magic[i])
      in.fail("yardl magic", "not a yardl binary file (expected the bytes \"yardl\")", 0);
  const std::int32_t version = in.fixed_i32("yardl binary format version");
  if (version != yardl_binary_version)
    in.fail("yardl binary format version",
            "version " + std::to_string(version) + " is not supported (expected 1)", 5);
  const std::uint64_t at = in.offset();
  const std::string schema = in.text("schema", std::uint64_t(1) << 24);
  if (schema != schema_text) {
    std::size_t i = 0;
    while (i < schema.size() && i < schema_size && schema[i] == schema_text[i])
      ++i;
    in.fail("schema",
            "the embedded schema (" + std::to_string(schema.size()) +
                " bytes) is not the schema of PETSIRD " + schema_version + " (" +
                std::to_string(schema_size) + " bytes); first difference at byte " +
                std::to_string(i) + " of the schema" +
                (schema.compare(0, 20, std::string(schema_text, 20)) == 0
                     ? std::string(" (another PETSIRD version?)")
                     : std::string(" (not a PETSIRD file?)")),
            at);
  }
}

namespace detail {

inline rigid_transform read_transform(binary_input &in, const std::string &what) {
  rigid_transform t;
  for (float &v : t.matrix)
    v = in.f32(what);
  return t;
}

inline std::vector<rigid_transform> read_transforms(binary_input &in,
                                                    const std::string &what) {
  std::vector<rigid_transform> v(in.count(what + " (size)", transform_bytes));
  for (rigid_transform &t : v)
    t = read_transform(in, what);
  return v;
}

inline std::vector<float> read_floats(binary_input &in, const std::string &what) {
  std::vector<float> v(in.count(what + " (size)", 4));
  for (float &x : v)
    x = in.f32(what);
  return v;
}

inline std::vector<std::vector<float>> read_float_matrix(binary_input &in,
                                                         const std::string &what) {
  std::vector<std::vector<float>> v(in.count(what + " (size)", 1));
  for (auto &row : v)
    row = read_floats(in, what);
  return v;
}

inline std::vector<std::int32_t> read_int32s(binary_input &in, const std::string &what) {
  std::vector<std::int32_t> v(in.count(what + " (size)", 1));
  for (std::int32_t &x : v)
    x = in.i32(what);
  return v;
}

inline void read_geometry(binary_input &in, scanner_information &s) {
  const std::string w = "scanner.scanner_geometry.replicated_modules";
  s.module_types.resize(in.count(w + " (size)", box_bytes));
  for (std::size_t t = 0; t < s.module_types.size(); ++t) {
    module_type &m = s.module_types[t];
    const std::string wt = w + "[" + std::to_string(t) + "]";
    for (auto &corner : m.element_box.corners)
      for (float &c : corner)
        c = in.f32(wt + ".detecting_elements.shape");
    m.element_material = in.u32(wt + ".detecting_elements.material_id");
    m.element_transforms = read_transforms(in, wt + ".detecting_elements.transforms");
    skip_non_detecting_elements(in, wt + ".non_detecting_elements");
    m.module_transforms = read_transforms(in, wt + ".transforms");
  }
  if (in.present("scanner.scanner_geometry.non_detecting_volumes (optional flag)")) {
    const std::string wv = "scanner.scanner_geometry.non_detecting_volumes";
    const std::size_t n = in.count(wv + " (size)", 2);
    for (std::size_t i = 0; i < n; ++i)
      skip_solid_volume_union(in, wv);
  }
}

inline std::vector<float> read_bin_edges(binary_input &in, const std::string &what) {
  return read_floats(in, what);
}

inline void read_efficiencies(binary_input &in, detection_efficiencies &e) {
  const std::string w = "scanner.detection_efficiencies";
  e.method_description = in.text(w + ".method_description");
  e.calibration_factor = in.f32(w + ".calibration_factor");
  e.detection_bin_efficiencies = read_float_matrix(in, w + ".detection_bin_efficiencies");
  e.module_pair_sgid.resize(in.count(w + ".module_pair_sgidlut (size)", 1));
  for (auto &r1 : e.module_pair_sgid) {
    r1.resize(in.count(w + ".module_pair_sgidlut (size)", 1));
    for (auto &r2 : r1) {
      r2.resize(in.count(w + ".module_pair_sgidlut (size)", 1));
      for (auto &r3 : r2)
        r3 = read_int32s(in, w + ".module_pair_sgidlut");
    }
  }
  const std::string wp = w + ".module_pair_efficiencies_vectors";
  e.module_pair.resize(in.count(wp + " (size)", 1));
  for (auto &r1 : e.module_pair) {
    r1.resize(in.count(wp + " (size)", 1));
    for (auto &r2 : r1) {
      r2.resize(in.count(wp + " (size)", 2));
      for (module_pair_efficiencies &m : r2) {
        m.values = read_float_matrix(in, wp + ".values");
        m.sgid = in.i32(wp + ".sgid");
      }
    }
  }
}

} // namespace detail

/// Reads the PETSIRD header that follows the preamble.
/// @throws io_error naming the field and offset for a truncated or
///         malformed header.
inline header read_header(binary_input &in) {
  header h;
  scanner_information &s = h.scanner;
  s.model_name = in.text("scanner.model_name");
  detail::read_geometry(in, s);
  detail::skip_bulk_materials(in);
  if (in.present("scanner.gantry_alignment (optional flag)"))
    s.gantry_alignment = detail::read_transform(in, "scanner.gantry_alignment");
  s.collimator_type = in.text("scanner.collimator_type");
  s.tof_bin_edges.resize(in.count("scanner.tof_bin_edges (size)", 1));
  for (auto &row : s.tof_bin_edges) {
    row.resize(in.count("scanner.tof_bin_edges (row size)", 1));
    for (auto &edges : row)
      edges = detail::read_bin_edges(in, "scanner.tof_bin_edges");
  }
  s.tof_resolution = detail::read_float_matrix(in, "scanner.tof_resolution");
  s.energy_bin_edges.resize(in.count("scanner.event_energy_bin_edges (size)", 1));
  for (auto &edges : s.energy_bin_edges)
    edges = detail::read_bin_edges(in, "scanner.event_energy_bin_edges");
  s.energy_resolution_at_511 =
      detail::read_floats(in, "scanner.energy_resolution_at_511");
  s.singles_histogram_level = in.i32("scanner.singles_histogram_level");
  detail::skip_nested(in, 2, 1, 0, "scanner.module_singles_unit_idx_lu_ts");
  const std::size_t ns = in.count("scanner.singles_histogram_energy_bin_edges (size)", 1);
  for (std::size_t i = 0; i < ns; ++i)
    detail::skip_bin_edges(in, "scanner.singles_histogram_energy_bin_edges");
  s.single_event_policy = in.i32("scanner.single_event_policy");
  s.prompt_event_policy = in.i32("scanner.prompt_event_policy");
  s.delayed_event_policy = in.i32("scanner.delayed_event_policy");
  s.triple_event_policy = in.i32("scanner.triple_event_policy");
  s.quadruple_event_policy = in.i32("scanner.quadruple_event_policy");
  detail::read_efficiencies(in, s.efficiencies);
  h.has_exam = in.present("exam (optional flag)");
  if (h.has_exam)
    detail::skip_exam(in);
  return h;
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
