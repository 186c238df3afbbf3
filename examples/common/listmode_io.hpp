/// @file
/// @brief Reading a list-mode file on the host for the examples' CPU path:
/// the one place that turns a file of 10-byte records
/// (io/listmode_file.hpp) into host event arrays. The GPU path reads the
/// file straight into device memory instead (`gpu_listmode_problem` in
/// osem_gpu.cuh).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "osem.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/scanner/listmode.hpp"

namespace resproj_examples {

/// The first `max_events` events (all by default) of the list-mode file
/// `path`, in acquisition order (pairs and bins; no corrections, not
/// grouped by subset).
/// @throws resproj::io_error if the file cannot be read or is damaged.
inline listmode_data
load_events(const std::string &path,
            std::size_t max_events = std::numeric_limits<std::size_t>::max()) {
  const std::size_t n =
      std::min<std::size_t>(max_events, resproj::io::count_listmode_events(path));
  std::vector<resproj::scanner::listmode_event> records(n);
  resproj::io::read_listmode_events(
      path, 0, n, resproj::span<resproj::scanner::listmode_event>(records.data(), n));
  listmode_data lm;
  resproj::scanner::split_events(records, lm.pairs, lm.bins);
  return lm;
}

} // namespace resproj_examples
