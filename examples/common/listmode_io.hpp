/// @file
/// @brief Reading a list-mode file for the examples: the one place that
/// turns a file of 10-byte records (io/listmode_file.hpp) into event arrays.
/// It reads on the host and splits into detector pairs + TOF bins; a
/// device reader (gpu/file_io.cuh) can replace it.
#pragma once

#include <string>
#include <vector>

#include "osem.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/scanner/listmode.hpp"

namespace resproj_examples {

/// The events of the list-mode file `path`, in acquisition order (pairs
/// and bins; no corrections, not grouped by subset).
/// @throws resproj::io_error if the file cannot be read or is damaged.
inline listmode_data load_events(const std::string &path) {
  const auto records = resproj::io::read_listmode_file(path);
  listmode_data lm;
  resproj::scanner::split_events(records, lm.pairs, lm.bins);
  return lm;
}

} // namespace resproj_examples
