/// @file
/// @brief `petsird::binary_input`: a bounded, buffered reader of the yardl
/// binary encoding (LEB128 varints, zig-zag signed integers, little-endian
/// floats, length-prefixed strings, counts checked against the bytes left)
/// over a file or a memory block. Every failure is an `io_error` naming the
/// source, the field being read and its byte offset. Standard library and
/// POSIX only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/petsird/varint_index.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Sequential reader of yardl-encoded values. Reads a file through a
/// buffer of `buffer_bytes` (memory stays bounded whatever the file size)
/// or a caller's memory block (not copied; it must outlive the reader).
/// Move-only; not thread-safe (one reader per thread).
class binary_input {
public:
  /// Reads the file `path` from its start.
  /// @throws io_error if it cannot be opened or is not a regular file.
  explicit binary_input(const std::string &path, std::size_t buffer_bytes = std::size_t(1)
                                                                            << 20)
      : name_(path) {
    file_ = positional_file::open_read(path, size_);
    // No larger than the file: small files cost no large buffer.
    buffer_.resize(std::size_t(std::min<std::uint64_t>(
        std::max<std::size_t>(buffer_bytes, 64), std::max<std::uint64_t>(size_, 1))));
  }
  /// Reads `size` bytes at `data`; `name` is used in messages, which give
  /// offsets as `origin` + the offset in the block (for a block cut out of
  /// a file at offset `origin`).
  binary_input(const void *data, std::size_t size, std::string name,
               std::uint64_t origin = 0)
      : name_(std::move(name)), memory_(static_cast<const unsigned char *>(data)),
        size_(size), origin_(origin), end_(size) {}

  /// The name used in messages (the path for a file).
  const std::string &name() const noexcept { return name_; }
  /// Offset of the next byte to be read (in the file: from `origin`).
  std::uint64_t offset() const noexcept { return origin_ + position(); }
  /// Size of the input in bytes.
  std::uint64_t size() const noexcept { return size_; }
  /// Bytes not read yet.
  std::uint64_t remaining() const noexcept { return size_ - position(); }

  /// Throws `io_error("resproj: <name>: <what> at offset <o>: <problem>")`.
  [[noreturn]] void fail(const std::string &what, const std::string &problem,
                         std::uint64_t at) const {
    throw io_error("resproj: " + name_ + ": " + what + " at offset " +
                   std::to_string(at) + ": " + problem);
  }
  [[noreturn]] void fail(const std::string &what, const std::string &problem) const {
    fail(what, problem, offset());
  }

  /// One byte.
  std::uint8_t byte(const std::string &what) {
    if (pos_ == end_)
      refill(what, 1);
    return data()[pos_++];
  }
  /// Copies `n` bytes into `dst`.
  void bytes(void *dst, std::size_t n, const std::string &what) {
    need(what, n);
    auto *out = static_cast<unsigned char *>(dst);
    while (n > 0) {
      if (pos_ == end_)
        refill(what, 1);
      const std::size_t k = std::min(n, end_ - pos_);
      std::memcpy(out, data() + pos_, k);
      out += k;
      pos_ += k;
      n -= k;
    }
  }
  /// Skips `n` bytes.
  void skip(std::uint64_t n, const std::string &what) {
    need(what, n);
    const std::uint64_t target = position() + n;
    if (memory_ != nullptr || target <= base_ + end_) {
      pos_ = std::size_t(target - base_);
      return;
    }
    base_ = target;
    pos_ = end_ = 0;
  }

  /// An unsigned LEB128 varint of at most 64 bits.
  std::uint64_t uvarint(const std::string &what) {
    const std::uint64_t at = offset();
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      const std::uint8_t b = byte(what);
      if (shift == 63 && b > 1)
        fail(what, "varint does not fit 64 bits", at);
      v |= std::uint64_t(b & 0x7fu) << shift;
      if (b < 0x80u)
        return v;
      if (shift == 63)
        fail(what, "varint longer than 10 bytes", at);
    }
  }
  /// A zig-zag encoded signed varint.
  std::int64_t svarint(const std::string &what) {
    const std::uint64_t u = uvarint(what);
    const std::uint64_t mag = u >> 1;
    // (u >> 1) ^ -(u & 1) without signed overflow.
    return (u & 1u) ? -std::int64_t(mag) - 1 : std::int64_t(mag);
  }
  /// Decodes a uint32 varint of at most five bytes at `p` (at least five
  /// readable) and moves `p` past it; false, with `p` unchanged, for
  /// anything else (longer encodings, values past 32 bits), which `u32`
  /// decodes with its checks.
  static bool quick_u32(const unsigned char *&p, std::uint32_t &v) noexcept {
    std::uint32_t x = p[0];
    if (p[0] < 0x80u) {
      p += 1;
      v = x;
      return true;
    }
    x = (x & 0x7fu) | (std::uint32_t(p[1] & 0x7fu) << 7);
    if (p[1] < 0x80u) {
      p += 2;
      v = x;
      return true;
    }
    x |= std::uint32_t(p[2] & 0x7fu) << 14;
    if (p[2] < 0x80u) {
      p += 3;
      v = x;
      return true;
    }
    x |= std::uint32_t(p[3] & 0x7fu) << 21;
    if (p[3] < 0x80u) {
      p += 4;
      v = x;
      return true;
    }
    if (p[4] >= 0x10u)
      return false;
    v = x | (std::uint32_t(p[4]) << 28);
    p += 5;
    return true;
  }
  /// A uint32 (varint in range).
  std::uint32_t u32(const std::string &what) {
    if (end_ - pos_ >= 5) {
      const unsigned char *const start = data() + pos_;
      const unsigned char *p = start;
      std::uint32_t v;
      if (quick_u32(p, v)) {
        pos_ += std::size_t(p - start);
        return v;
      }
    }
    return u32_checked(what);
  }
  /// The bytes in view from the read position: `n` of them (a file input
  /// shows what its buffer holds).
  const unsigned char *view(std::size_t &n) const noexcept {
    n = end_ - pos_;
    return data() + pos_;
  }
  /// Moves the read position `k` bytes on (`k` at most the view's size).
  void advance(std::size_t k) noexcept { pos_ += k; }
  /// `u32` decoded through `uvarint`, with its checks and messages.
  std::uint32_t u32_checked(const std::string &what) {
    const std::uint64_t at = offset();
    const std::uint64_t v = uvarint(what);
    if (v > std::numeric_limits<std::uint32_t>::max())
      fail(what, "value " + std::to_string(v) + " does not fit uint32", at);
    return std::uint32_t(v);
  }
  /// An int32 (zig-zag varint in range).
  std::int32_t i32(const std::string &what) {
    const std::uint64_t at = offset();
    const std::int64_t v = svarint(what);
    if (v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max())
      fail(what, "value " + std::to_string(v) + " does not fit int32", at);
    return std::int32_t(v);
  }
  /// A little-endian IEEE float32.
  float f32(const std::string &what) {
    unsigned char b[4];
    bytes(b, 4, what);
    const std::uint32_t u = std::uint32_t(b[0]) | (std::uint32_t(b[1]) << 8) |
                            (std::uint32_t(b[2]) << 16) | (std::uint32_t(b[3]) << 24);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  /// A little-endian fixed int32.
  std::int32_t fixed_i32(const std::string &what) {
    unsigned char b[4];
    bytes(b, 4, what);
    const std::uint32_t u = std::uint32_t(b[0]) | (std::uint32_t(b[1]) << 8) |
                            (std::uint32_t(b[2]) << 16) | (std::uint32_t(b[3]) << 24);
    return u >= 0x80000000u ? std::int32_t(std::int64_t(u) - (std::int64_t(1) << 32))
                            : std::int32_t(u);
  }
  /// A count (vector length, array dimension) of elements that take at
  /// least `min_bytes_each` bytes (0: no bound but `limit`): an absurd
  /// count, one the bytes left cannot hold, is rejected before anything is
  /// allocated.
  std::size_t count(const std::string &what, std::uint64_t min_bytes_each,
                    std::uint64_t limit = std::uint64_t(1) << 40) {
    const std::uint64_t at = offset();
    const std::uint64_t n = uvarint(what);
    if (n > limit)
      fail(what,
           "absurd size " + std::to_string(n) + " (limit " + std::to_string(limit) + ")",
           at);
    if (min_bytes_each > 0 && n > remaining() / min_bytes_each)
      fail(what,
           "size " + std::to_string(n) + " needs at least " +
               std::to_string(min_bytes_each) + " bytes each, only " +
               std::to_string(remaining()) + " bytes left (truncated, or an absurd size)",
           at);
    return std::size_t(n);
  }
  /// A length-prefixed UTF-8 string (bytes as stored).
  std::string text(const std::string &what, std::uint64_t limit = std::uint64_t(1)
                                                                  << 30) {
    const std::size_t n = count(what + " (string length)", 1, limit);
    std::string s(n, '\0');
    bytes(s.data(), n, what);
    return s;
  }
  /// Skips a length-prefixed string.
  void skip_string(const std::string &what) { skip(count(what, 1), what); }
  /// An optional's presence byte (0 or 1).
  bool present(const std::string &what) {
    const std::uint64_t at = offset();
    const std::uint8_t b = byte(what);
    if (b > 1)
      fail(what, "optional flag " + std::to_string(b) + " is neither 0 nor 1", at);
    return b == 1;
  }

  /// Skips `n` varints without decoding them, with the checks and messages
  /// of `uvarint` (a memory input scans its bytes for the ends of varints;
  /// a file input decodes them).
  void skip_varints(std::uint64_t n, const std::string &what) {
    if (memory_ == nullptr) {
      for (std::uint64_t i = 0; i < n; ++i)
        (void)uvarint(what);
      return;
    }
    std::size_t p = pos_;
    std::uint64_t left = n;
    unsigned run = 0; // continuation bytes of the varint being scanned
    // Eight bytes at a time while more varints end after them than in them
    // and none of them is long enough to need the byte-wise check (a varint
    // ends at each byte below 0x80; its tenth byte must be 0 or 1).
    while (left > 8 && end_ - p >= 8) {
      const std::uint64_t ends = detail::varint_end_bits(memory_ + p);
      if (ends == 0) {
        if (run + 8 >= 9)
          break;
        run += 8;
        p += 8;
        continue;
      }
      const unsigned first = unsigned(ctz64(ends)) / 8;
      const std::uint64_t count = detail::count_end_bits(ends);
      if (count >= left || run + first >= 9)
        break;
      left -= count;
      run = 7 - unsigned(63 - clz64(ends)) / 8;
      p += 8;
    }
    for (; left > 0; ++p) {
      if (p == end_) {
        pos_ = p;
        need(what, 1);
      }
      const unsigned char b = memory_[p];
      if (run == 9 && b > 1)
        fail(what, "varint does not fit 64 bits", origin_ + p - run);
      if (b < 0x80u) {
        --left;
        run = 0;
      } else {
        ++run;
      }
    }
    pos_ = p;
  }

private:
  /// Index of the lowest / highest set bit of `v` (v != 0).
  static int ctz64(std::uint64_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(v);
#else
    int i = 0;
    while ((v & 1u) == 0) {
      v >>= 1;
      ++i;
    }
    return i;
#endif
  }
  static int clz64(std::uint64_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(v);
#else
    int i = 0;
    while ((v & (std::uint64_t(1) << 63)) == 0) {
      v <<= 1;
      ++i;
    }
    return i;
#endif
  }
  std::uint64_t position() const noexcept { return base_ + pos_; }
  const unsigned char *data() const noexcept {
    return memory_ != nullptr ? memory_ : buffer_.data();
  }
  void need(const std::string &what, std::uint64_t n) const {
    if (n > remaining())
      fail(what, "truncated: " + std::to_string(n) + " bytes needed, " +
                     std::to_string(remaining()) + " left (the input ends at offset " +
                     std::to_string(origin_ + size_) + ")");
  }
  /// Makes at least `n` (<= buffer size) bytes available at pos_.
  void refill(const std::string &what, std::size_t n) {
    need(what, n);
    // memory_: the whole input is in view, so need() has already failed.
    base_ += pos_;
    const std::size_t k =
        std::size_t(std::min<std::uint64_t>(buffer_.size(), size_ - base_));
    file_.pread_exact(name_, buffer_.data(), k, base_);
    pos_ = 0;
    end_ = k;
  }

  std::string name_;
  positional_file file_;
  std::vector<unsigned char> buffer_;
  const unsigned char *memory_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t origin_ = 0;
  std::uint64_t base_ = 0; ///< input offset of data()[0]
  std::size_t pos_ = 0;    ///< next byte in data()
  std::size_t end_ = 0;    ///< valid bytes in data()
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
