/// @file
/// @brief `petsird::binary_output`: the yardl binary encoding written to a
/// stream through a bounded buffer (LEB128 varints, zig-zag signed
/// integers, little-endian floats and fixed int32, length-prefixed
/// strings). Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Buffered writer of yardl-encoded values to `out`; `flush` (or the
/// buffer filling up) writes to the stream. Errors are `io_error` naming
/// `name`. Not thread-safe.
class binary_output {
public:
  binary_output(std::ostream &out, std::string name)
      : out_(&out), name_(std::move(name)) {
    buffer_.reserve(capacity);
  }

  void byte(std::uint8_t b) {
    buffer_.push_back(b);
    maybe_flush();
  }
  void bytes(const void *data, std::size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    buffer_.insert(buffer_.end(), p, p + n);
    maybe_flush();
  }
  void uvarint(std::uint64_t v) {
    while (v >= 0x80u) {
      buffer_.push_back(static_cast<unsigned char>((v & 0x7fu) | 0x80u));
      v >>= 7;
    }
    buffer_.push_back(static_cast<unsigned char>(v));
    maybe_flush();
  }
  void svarint(std::int64_t v) {
    // (v << 1) ^ (v >> 63), on the unsigned representation.
    const std::uint64_t u = std::uint64_t(v);
    uvarint((u << 1) ^ (v < 0 ? ~std::uint64_t(0) : std::uint64_t(0)));
  }
  void f32(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    fixed_u32(u);
  }
  void fixed_u32(std::uint32_t u) {
    const unsigned char b[4] = {static_cast<unsigned char>(u & 0xffu),
                                static_cast<unsigned char>((u >> 8) & 0xffu),
                                static_cast<unsigned char>((u >> 16) & 0xffu),
                                static_cast<unsigned char>(u >> 24)};
    bytes(b, 4);
  }
  void text(const std::string &s) {
    uvarint(s.size());
    bytes(s.data(), s.size());
  }
  void text(const char *s, std::size_t n) {
    uvarint(n);
    bytes(s, n);
  }
  /// Writes the buffer to the stream.
  /// @throws io_error if the stream fails.
  void flush() {
    if (!buffer_.empty()) {
      out_->write(reinterpret_cast<const char *>(buffer_.data()),
                  std::streamsize(buffer_.size()));
      buffer_.clear();
    }
    out_->flush();
    if (!*out_)
      throw io_error("resproj: " + name_ + ": write failed");
  }

private:
  static constexpr std::size_t capacity = std::size_t(1) << 20;
  void maybe_flush() {
    if (buffer_.size() >= capacity)
      flush();
  }

  std::ostream *out_;
  std::string name_;
  std::vector<unsigned char> buffer_;
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
