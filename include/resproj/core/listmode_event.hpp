/// @file
/// @brief `listmode_event`: one list-mode event in a 10-byte record (two
/// detector indices and a TOF bin), and `event_check_result`, the result of
/// validating a set of events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// One list-mode event in 10 bytes, alignment 1, so that an array of
/// events moves 10 bytes per event over the bus and has no padding.
///
/// Byte layout (little-endian, whatever the host's byte order):
///
/// | bytes | field        | type                                  |
/// |-------|--------------|---------------------------------------|
/// | 0-3   | `detector_a` | uint32, little-endian                 |
/// | 4-7   | `detector_b` | uint32, little-endian                 |
/// | 8-9   | `tof_bin`    | int16, two's complement little-endian |
///
/// The fields are stored as bytes and read and written with shifts, so
/// access is endian-independent and never misaligned (on the device too);
/// a file of records is portable. `detector_a` / `detector_b` index a
/// detector table (ring-major `ring * crystals_per_ring + crystal` for a
/// `scanner::polygon_scanner`); `tof_bin` is a TOF bin `0 .. num_bins - 1` (bin 0
/// nearest detector a, as `tof_params`), or anything (e.g. 0) for non-TOF
/// data. Trivially copyable, standard layout; value-initialised it is
/// (0, 0, 0).
struct listmode_event {
  unsigned char bytes[10]; ///< the encoded record (see the table above)

  /// An event with the given fields.
  RESPROJ_HD static listmode_event make(std::uint32_t detector_a,
                                        std::uint32_t detector_b,
                                        std::int16_t tof_bin) noexcept {
    listmode_event e{};
    e.set_detector_a(detector_a);
    e.set_detector_b(detector_b);
    e.set_tof_bin(tof_bin);
    return e;
  }
  /// First detector.
  RESPROJ_HD std::uint32_t detector_a() const noexcept { return load_u32(0); }
  /// Second detector.
  RESPROJ_HD std::uint32_t detector_b() const noexcept { return load_u32(4); }
  /// TOF bin.
  RESPROJ_HD std::int16_t tof_bin() const noexcept {
    const std::uint16_t u = std::uint16_t(std::uint16_t(bytes[8]) |
                                          std::uint16_t(std::uint16_t(bytes[9]) << 8));
    // Two's complement reinterpretation without implementation-defined casts.
    return u >= 0x8000u ? std::int16_t(int(u) - 0x10000) : std::int16_t(u);
  }
  /// Sets the first detector.
  RESPROJ_HD void set_detector_a(std::uint32_t v) noexcept { store_u32(0, v); }
  /// Sets the second detector.
  RESPROJ_HD void set_detector_b(std::uint32_t v) noexcept { store_u32(4, v); }
  /// Sets the TOF bin.
  RESPROJ_HD void set_tof_bin(std::int16_t v) noexcept {
    const std::uint16_t u = std::uint16_t(v);
    bytes[8] = static_cast<unsigned char>(u & 0xffu);
    bytes[9] = static_cast<unsigned char>(u >> 8);
  }

private:
  RESPROJ_HD std::uint32_t load_u32(int o) const noexcept {
    return std::uint32_t(bytes[o]) | (std::uint32_t(bytes[o + 1]) << 8) |
           (std::uint32_t(bytes[o + 2]) << 16) | (std::uint32_t(bytes[o + 3]) << 24);
  }
  RESPROJ_HD void store_u32(int o, std::uint32_t v) noexcept {
    bytes[o] = static_cast<unsigned char>(v & 0xffu);
    bytes[o + 1] = static_cast<unsigned char>((v >> 8) & 0xffu);
    bytes[o + 2] = static_cast<unsigned char>((v >> 16) & 0xffu);
    bytes[o + 3] = static_cast<unsigned char>(v >> 24);
  }
};

static_assert(sizeof(listmode_event) == 10, "listmode_event must be 10 bytes");
static_assert(alignof(listmode_event) == 1, "listmode_event must not be padded");
static_assert(std::is_trivially_copyable_v<listmode_event>);
static_assert(std::is_standard_layout_v<listmode_event>);

/// Result of `scanner::validate_events` (and of `gpu::validate_events`): how many
/// events are invalid and the index of the first one (`first_invalid` is
/// the number of events checked when none is invalid).
struct event_check_result {
  std::size_t num_invalid = 0;   ///< number of invalid events
  std::size_t first_invalid = 0; ///< index of the first, or the count if none
};

RESPROJ_NAMESPACE_END
