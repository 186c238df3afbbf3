/// @file
/// @brief `petsird::reader`: a PETSIRD 0.12 file opened, its header read
/// and checked, its time blocks streamed as bounded chunks of detector
/// pairs and TOF bins; `read_events`, everything at once. Standard library
/// and POSIX only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/efficiency.hpp"
#include "resproj/io/petsird/events.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/header_read.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Options of a `reader`.
struct read_options {
  /// Compute each event's detection efficiency (`coincidence_arrays::efficiency`).
  bool event_efficiencies = false;
  /// Bytes of the file buffer (memory stays bounded by this plus a chunk).
  std::size_t buffer_bytes = std::size_t(1) << 20;
};

/// A PETSIRD file being read. Opening reads and checks the preamble and the
/// header (and builds the detector map); `next_chunk` then decodes the time
/// blocks in order. Move-only; not thread-safe.
///
///     io::petsird::reader r("scan.petsird");
///     const auto table = io::petsird::make_detector_table(r.scanner());
///     io::petsird::event_chunk chunk;
///     while (r.next_chunk(1 << 20, chunk)) { /* chunk.prompts.pairs ... */ }
class reader {
public:
  /// Opens the file `path`.
  /// @throws io_error naming the file, the field and the byte offset for a
  ///         missing, truncated or malformed file, another schema, or a
  ///         header that describes no detecting element or inconsistent
  ///         efficiencies (with `event_efficiencies`).
  explicit reader(const std::string &path, const read_options &options = {})
      : in_(std::make_unique<binary_input>(path, options.buffer_bytes)) {
    open(options);
  }
  /// Reads a PETSIRD stream held in memory (`size` bytes at `data`, not
  /// copied: it must outlive the reader); `name` is used in messages.
  /// @throws io_error as the file version.
  reader(const void *data, std::size_t size, const std::string &name,
         const read_options &options = {})
      : in_(std::make_unique<binary_input>(data, size, name)) {
    open(options);
  }

  /// The header.
  const petsird::header &header() const noexcept { return *header_; }
  /// The scanner description.
  const scanner_information &scanner() const noexcept { return header_->scanner; }
  /// The map from PETSIRD's indices to detector indices.
  const detector_map &detectors() const noexcept { return *map_; }
  /// Byte offset of the first time block.
  std::uint64_t time_blocks_offset() const noexcept { return blocks_offset_; }

  /// Clears `chunk` and decodes up to `max_events` prompts + delayeds into
  /// it (fewer only at the end of the file; `max_events` 0 counts as 1).
  /// @return false, with `chunk` empty, once the stream is exhausted.
  /// @throws io_error naming the time block, field and offset for
  ///         malformed or truncated data (events of earlier chunks stand).
  bool next_chunk(std::size_t max_events, event_chunk &chunk) {
    chunk.clear();
    while (!decoder_->done()) {
      decoder_->next(max_events, chunk);
      if (chunk.num_events() > 0 || decoder_->done())
        break;
    }
    return chunk.num_events() > 0 || !chunk.blocks.empty();
  }

  /// Calls `f(const event_chunk &)` for every chunk of up to `max_events`
  /// events, in file order.
  /// @throws io_error as `next_chunk`; whatever `f` throws.
  template <class F> void for_each_chunk(std::size_t max_events, F &&f) {
    event_chunk chunk;
    while (next_chunk(max_events, chunk))
      f(static_cast<const event_chunk &>(chunk));
  }

private:
  void open(const read_options &options) {
    read_preamble(*in_);
    header_ = std::make_unique<petsird::header>(read_header(*in_));
    map_ = std::make_unique<detector_map>(header_->scanner);
    if (options.event_efficiencies)
      model_ = std::make_unique<efficiency_model>(header_->scanner);
    blocks_offset_ = in_->offset();
    decoder_ = std::make_unique<event_decoder>(*in_, header_->scanner, model_.get());
  }

  std::unique_ptr<binary_input> in_;
  // Held by pointer: the decoder points at them, and the reader moves.
  std::unique_ptr<petsird::header> header_;
  std::unique_ptr<detector_map> map_;
  std::unique_ptr<efficiency_model> model_;
  std::unique_ptr<event_decoder> decoder_;
  std::uint64_t blocks_offset_ = 0;
};

/// Everything in a PETSIRD file: header, detector map and all events.
struct file_contents {
  petsird::header header;
  event_chunk events; ///< all prompts and delayeds, every time block
};

/// Reads the whole file `path` (convenience over `reader`).
/// @throws io_error as `reader`.
inline file_contents read_file(const std::string &path,
                               const read_options &options = {}) {
  reader r(path, options);
  file_contents out;
  out.header = r.header();
  event_chunk chunk;
  while (r.next_chunk(std::size_t(1) << 22, chunk))
    append_events(out.events, chunk);
  return out;
}

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
