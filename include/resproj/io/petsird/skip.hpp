/// @file
/// @brief Reading past the PETSIRD values that projection does not use
/// (nested vectors of fixed-size records, shapes, materials, exam
/// information, the time blocks other than event blocks), validating their
/// structure (sizes against the bytes left, union tags, optional flags) so
/// that a damaged file is reported, never misread. Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/io/petsird/binary_input.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {
namespace detail {

/// Bytes of a rigid transformation (3 x 4 float32).
inline constexpr std::uint64_t transform_bytes = 48;
/// Bytes of a box shape (8 corners x 3 float32).
inline constexpr std::uint64_t box_bytes = 96;

/// Skips `n` varints.
inline void skip_varints(binary_input &in, std::uint64_t n, const std::string &what) {
  in.skip_varints(n, what);
}

/// Skips a vector nested `depth` deep whose innermost elements are
/// `varints` varints each (fixed_bytes == 0) or `fixed_bytes` bytes each.
inline void skip_nested(binary_input &in, int depth, std::uint64_t varints,
                        std::uint64_t fixed_bytes, const std::string &what) {
  if (depth == 0) {
    if (fixed_bytes > 0)
      in.skip(fixed_bytes, what);
    else
      skip_varints(in, varints, what);
    return;
  }
  const std::uint64_t each = depth > 1 ? 1 : (fixed_bytes > 0 ? fixed_bytes : varints);
  const std::size_t n = in.count(what + " (vector size)", each);
  if (depth == 1) {
    if (fixed_bytes > 0)
      in.skip(std::uint64_t(n) * fixed_bytes, what);
    else
      skip_varints(in, std::uint64_t(n) * varints, what);
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    skip_nested(in, depth - 1, varints, fixed_bytes, what);
}

/// Skips a `BinEdges` (a 1-d float32 array).
inline void skip_bin_edges(binary_input &in, const std::string &what) {
  in.skip(std::uint64_t(in.count(what + " (size)", 4)) * 4, what);
}

/// Skips a `SolidVolume<GeometricShape>` (union of box and annulus).
inline void skip_solid_volume_union(binary_input &in, const std::string &what) {
  const std::uint64_t at = in.offset();
  const std::uint8_t tag = in.byte(what + " (shape tag)");
  if (tag == 0)
    in.skip(box_bytes, what + " (box)");
  else if (tag == 1)
    in.skip(20, what + " (annulus)");
  else
    in.fail(what + " (shape tag)",
            "union tag " + std::to_string(tag) + " is not a box (0) or annulus (1)", at);
  (void)in.u32(what + " (material id)");
}

/// Skips a vector of `ReplicatedObject<SolidVolume<GeometricShape>>`.
inline void skip_non_detecting_elements(binary_input &in, const std::string &what) {
  const std::size_t n = in.count(what + " (size)", 3);
  for (std::size_t i = 0; i < n; ++i) {
    skip_solid_volume_union(in, what);
    in.skip(std::uint64_t(in.count(what + " (transforms size)", transform_bytes)) *
                transform_bytes,
            what + " (transforms)");
  }
}

/// Skips the vector of `BulkMaterial`.
inline void skip_bulk_materials(binary_input &in) {
  const std::string what = "scanner.bulk_materials";
  const std::size_t n = in.count(what + " (size)", 8);
  for (std::size_t i = 0; i < n; ++i) {
    (void)in.u32(what + ".id");
    in.skip_string(what + ".name");
    in.skip(4, what + ".density");
    skip_nested(in, 1, 2, 0, what + ".atoms");
    skip_nested(in, 1, 0, 4, what + ".mass_fractions");
  }
}

/// Skips a `DICOMBasicCodeSequence` (5 strings).
inline void skip_code_sequence(binary_input &in, const std::string &what) {
  for (int i = 0; i < 5; ++i)
    in.skip_string(what);
}

/// Skips an `ExamInformation`.
inline void skip_exam(binary_input &in) {
  const std::string w = "exam";
  for (int i = 0; i < 5; ++i) // modality and the four UIDs
    in.skip_string(w + " (modality / UID)");
  (void)in.svarint(w + ".start_of_study");
  if (in.present(w + ".start_of_acquisition (optional flag)"))
    (void)in.svarint(w + ".start_of_acquisition");
  in.skip_string(w + ".patient.patient_id");
  in.skip_string(w + ".patient.patients_sex");
  in.skip(12, w + ".patient (size, weight, BMI)");
  for (int i = 0; i < 3; ++i)
    skip_code_sequence(in, w + ".patient_orientation");
  const std::size_t nr = in.count(w + ".radiopharmaceuticals (size)", 16);
  for (std::size_t i = 0; i < nr; ++i) {
    const std::string r = w + ".radiopharmaceuticals";
    in.skip(4, r + ".volume");
    (void)in.svarint(r + ".start_date_time");
    (void)in.svarint(r + ".stop_date_time");
    in.skip(4, r + ".total_dose");
    in.skip_string(r + ".administration_event_uid");
    in.skip(4, r + ".specific_activity");
    skip_code_sequence(in, r + ".radiopharmaceutical_code_sequence");
    skip_code_sequence(in, r + ".radionuclide_code_sequence");
  }
  const std::size_t ns = in.count(w + ".external_signals (size)", 3);
  for (std::size_t i = 0; i < ns; ++i) {
    (void)in.i32(w + ".external_signals.type");
    in.skip_string(w + ".external_signals.description");
    (void)in.u32(w + ".external_signals.id");
  }
}

/// The kinds of PETSIRD time blocks (the `TimeBlock` union tags).
enum class time_block_kind : std::uint8_t {
  event = 0,
  external_signal = 1,
  bed_movement = 2,
  gantry_movement = 3,
  dead_time = 4,
  singles_histogram = 5,
};

/// Skips the prompt (`delayed` false) or delayed matrix of an event block,
/// as `skip_nested(in, 3, 3, 0, what)` does, but hands every list to
/// `list(in, delayed, type_a, type_b, num_events, what)`, which must read
/// past its `3 * num_events` varints. A matrix with more than
/// `module_types` rows or columns is rejected.
template <class List>
void skip_coincidence_matrix(binary_input &in, bool delayed, List &&list,
                             std::uint64_t module_types) {
  const std::string what =
      delayed ? "event block .delayed_events" : "event block .prompt_events";
  const std::size_t rows = in.count(what + " (vector size)", 1, module_types);
  for (std::size_t a = 0; a < rows; ++a) {
    const std::size_t cols = in.count(what + " (vector size)", 1, module_types);
    for (std::size_t b = 0; b < cols; ++b)
      list(in, delayed, a, b, std::uint64_t(in.count(what + " (vector size)", 3)), what);
  }
}

/// Skips the `3 * n` varints of a list of `n` coincidences.
struct skip_coincidence_list {
  void operator()(binary_input &in, bool, std::size_t, std::size_t, std::uint64_t n,
                  const std::string &what) const {
    skip_varints(in, 3 * n, what);
  }
};

/// Skips the body (after the time interval) of an event time block:
/// singles, prompts, delayeds, triples and quadruples; the prompt and
/// delayed lists through `list` (see `skip_coincidence_matrix`).
template <class List = skip_coincidence_list>
void skip_event_block(binary_input &in, List &&list = List{},
                      std::uint64_t module_types = std::uint64_t(1) << 40) {
  skip_nested(in, 2, 2, 0, "event block .single_events");
  skip_coincidence_matrix(in, false, list, module_types);
  skip_coincidence_matrix(in, true, list, module_types);
  skip_nested(in, 4, 5, 0, "event block .triple_events");
  skip_nested(in, 5, 5, 0, "event block .quadruple_events");
}

/// Skips the body (after the time interval) of a time block that is not
/// an event block.
inline void skip_other_block(binary_input &in, time_block_kind kind) {
  switch (kind) {
  case time_block_kind::external_signal:
    (void)in.u32("external signal block .signal_id");
    skip_nested(in, 1, 0, 4, "external signal block .signal_values");
    return;
  case time_block_kind::bed_movement:
    in.skip(transform_bytes, "bed movement block .transform");
    return;
  case time_block_kind::gantry_movement:
    skip_nested(in, 1, 0, transform_bytes, "gantry movement block .transforms");
    return;
  case time_block_kind::dead_time: {
    const std::string w = "dead time block .alive_time_fractions";
    const std::size_t n = in.count(w + ".singles (size)", 1);
    for (std::size_t i = 0; i < n; ++i)
      skip_bin_edges(in, w + ".singles"); // a 1-d float32 array
    const std::size_t n1 = in.count(w + ".module_pair (size)", 1);
    for (std::size_t i = 0; i < n1; ++i) {
      const std::size_t n2 = in.count(w + ".module_pair (row size)", 1);
      for (std::size_t j = 0; j < n2; ++j) {
        const std::size_t ndim = in.count(w + ".module_pair (array rank)", 1, 64);
        std::uint64_t elements = 1;
        for (std::size_t d = 0; d < ndim; ++d) {
          const std::size_t dim = in.count(w + ".module_pair (array dimension)", 0);
          elements = dim == 0 || elements == 0 ? 0 : elements;
          if (elements != 0 && dim > in.remaining() / elements)
            in.fail(w + ".module_pair", "array larger than the bytes left");
          elements *= dim;
        }
        for (std::uint64_t e = 0; e < elements; ++e)
          skip_nested(in, 2, 0, 4, w + ".module_pair (element)");
      }
    }
    return;
  }
  case time_block_kind::singles_histogram:
    skip_nested(in, 2, 1, 0, "singles histogram block .per_singles_unit");
    skip_nested(in, 2, 1, 0, "singles histogram block .per_detection_bin");
    return;
  case time_block_kind::event:
    break;
  }
}

} // namespace detail
} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
