/// @file
/// @brief Where the varints of a memory block end, found without decoding
/// them: `count_varint_ends` (bytes below 0x80 in a range), `after_varint_ends`
/// (the position after the n-th end) and `varint_end_index` (the ends per
/// 1 KiB page, so that skipping a long run of varints jumps whole pages).
/// A varint ends at each byte below 0x80, so these need no sequential
/// decoding. Standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace petsird {

/// Bytes per page of `varint_end_index`.
inline constexpr std::size_t varint_page_bytes = 1024;

namespace detail {

/// Eight bytes as a little-endian integer (byte i in bits 8i..8i+7).
inline std::uint64_t load_le64(const unsigned char *b) noexcept {
  std::uint64_t w;
  std::memcpy(&w, b, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

/// One bit (bit 7 of each byte) per byte of the eight at `p` that is below 0x80.
inline std::uint64_t varint_end_bits(const unsigned char *p) noexcept {
  return ~load_le64(p) & 0x8080808080808080u;
}

/// Number of bits set in `bits` of `varint_end_bits` (bit 7 of each byte
/// at most): one multiply sums them into the top byte, with no dependence
/// on a population-count instruction.
inline unsigned count_end_bits(std::uint64_t bits) noexcept {
  return unsigned(((bits >> 7) * 0x0101010101010101u) >> 56);
}

} // namespace detail

/// Number of bytes below 0x80 (varint ends) in `[p, p + n)`.
inline std::uint64_t count_varint_ends(const unsigned char *p, std::size_t n) noexcept {
  std::uint64_t count = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    count += detail::count_end_bits(detail::varint_end_bits(p + i));
  for (; i < n; ++i)
    count += p[i] < 0x80u ? 1u : 0u;
  return count;
}

/// The offset after the `k`-th varint end (k >= 1) in `[p, p + n)`, or
/// `n + 1` when the range holds fewer than `k`.
inline std::size_t after_varint_ends(const unsigned char *p, std::size_t n,
                                     std::uint64_t k) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t bits = detail::varint_end_bits(p + i);
    const unsigned c = detail::count_end_bits(bits);
    if (c < k) {
      k -= c;
      continue;
    }
    for (; k > 1; --k)
      bits &= bits - 1; // drop the lowest end
    unsigned byte = 0;
    while ((bits & (std::uint64_t(0x80) << (8 * byte))) == 0)
      ++byte;
    return i + byte + 1;
  }
  for (; i < n; ++i)
    if (p[i] < 0x80u && --k == 0)
      return i + 1;
  return n + 1;
}

/// The varint ends of every `varint_page_bytes` page of a memory block
/// (the last page may be shorter). Built page by page (`count_page`, from
/// any threads, each page once), then read-only. The block is not owned.
class varint_end_index {
public:
  varint_end_index() = default;
  /// An index of `[data, data + size)`; its counts are set by `count_page`.
  varint_end_index(const unsigned char *data, std::size_t size)
      : data_(data), size_(size),
        ends_((size + varint_page_bytes - 1) / varint_page_bytes, 0) {}

  std::size_t num_pages() const noexcept { return ends_.size(); }
  /// Counts the varint ends of page `page` (< num_pages()).
  void count_page(std::size_t page) noexcept {
    const std::size_t at = page * varint_page_bytes;
    ends_[page] = std::uint32_t(count_varint_ends(data_ + at, page_bytes(page)));
  }
  /// Varint ends in page `page` (after `count_page`).
  std::uint32_t page_ends(std::size_t page) const noexcept { return ends_[page]; }
  /// Bytes of page `page`.
  std::size_t page_bytes(std::size_t page) const noexcept {
    const std::size_t at = page * varint_page_bytes;
    return size_ - at < varint_page_bytes ? size_ - at : varint_page_bytes;
  }

  /// The offset after `k` more varint ends from offset `from` (k >= 1), or
  /// `size() + 1` when the block holds fewer.
  std::size_t skip(std::size_t from, std::uint64_t k) const noexcept {
    std::size_t page = from / varint_page_bytes;
    if (page >= ends_.size())
      return size_ + 1;
    const std::size_t page_end = page * varint_page_bytes + page_bytes(page);
    const std::size_t first = after_varint_ends(data_ + from, page_end - from, k);
    if (first <= page_end - from)
      return from + first;
    k -= count_varint_ends(data_ + from, page_end - from);
    for (++page; page < ends_.size() && ends_[page] < k; ++page)
      k -= ends_[page];
    if (page == ends_.size())
      return size_ + 1;
    const std::size_t at = page * varint_page_bytes;
    return at + after_varint_ends(data_ + at, page_bytes(page), k);
  }
  std::size_t size() const noexcept { return size_; }

private:
  const unsigned char *data_ = nullptr;
  std::size_t size_ = 0;
  std::vector<std::uint32_t> ends_;
};

} // namespace petsird
} // namespace io
RESPROJ_NAMESPACE_END
