/// @file
/// @brief Parsing and checking of `.npy` headers (`read_npy_header`): the
/// magic, version and length prefix, the header dict (strict Python literal
/// syntax as NumPy writes it), the element type, and the data size against
/// the file size. Host code, standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/detail/stream_file.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/npy_header.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

namespace detail {
namespace npyio {

/// Recursive-descent parser of the header dict.
class dict_parser {
public:
  dict_parser(const std::string &text, const std::string &path, std::uint64_t base)
      : s_(text), path_(path), base_(base) {}

  [[noreturn]] void fail(const std::string &problem) const {
    rawio::fail(path_, "header at offset " + std::to_string(base_ + pos_) + ": " +
                           problem + " (header: " + excerpt() + ")");
  }

  void parse(npy_header &h) {
    bool has_descr = false, has_fortran = false, has_shape = false;
    skip_ws();
    expect('{', "expected '{' opening the header dict");
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string("a quoted key");
      skip_ws();
      expect(':', "expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        if (has_descr)
          fail("key 'descr' appears twice");
        has_descr = true;
        if (peek() == '[')
          fail("'descr' is a structured (record) type; only plain numeric "
               "arrays are supported");
        h.descr = parse_string("a quoted string for 'descr'");
      } else if (key == "fortran_order") {
        if (has_fortran)
          fail("key 'fortran_order' appears twice");
        has_fortran = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (has_shape)
          fail("key 'shape' appears twice");
        has_shape = true;
        h.shape = parse_shape();
      } else {
        fail("unexpected key '" + key +
             "' (a .npy header has exactly 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        fail("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++pos_; // '}'
    if (!has_descr)
      fail("missing key 'descr'");
    if (!has_fortran)
      fail("missing key 'fortran_order'");
    if (!has_shape)
      fail("missing key 'shape'");
    // Padding: spaces (tabs tolerated) and one final newline.
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t'))
      ++pos_;
    if (pos_ + 1 != s_.size() || s_[pos_] != '\n')
      fail("expected only space padding and a final '\\n' after the dict");
  }

private:
  char peek() const {
    if (pos_ >= s_.size())
      fail("header ends early");
    return s_[pos_];
  }
  void expect(char c, const std::string &problem) {
    if (peek() != c)
      fail(problem);
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t'))
      ++pos_;
  }
  std::string parse_string(const std::string &what) {
    const char q = peek();
    if (q != '\'' && q != '"')
      fail("expected " + what);
    const std::size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' || s_[pos_] == '\n')
        fail("unsupported character in a string (escape or newline)");
      ++pos_;
    }
    if (pos_ >= s_.size())
      fail("unterminated string");
    return s_.substr(start, pos_++ - start);
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }
  std::size_t parse_dimension() {
    if (peek() == '-')
      fail("negative dimension in 'shape'");
    if (peek() < '0' || peek() > '9')
      fail("expected a dimension (non-negative integer) in 'shape'");
    std::uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const unsigned digit = unsigned(s_[pos_] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10 ||
          v * 10 + digit > std::numeric_limits<std::size_t>::max())
        fail("absurd dimension in 'shape' (does not fit 64 bits)");
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') // Python 2 long literal
      ++pos_;
    return static_cast<std::size_t>(v);
  }
  std::vector<std::size_t> parse_shape() {
    expect('(', "'shape' must be a tuple, e.g. (3, 4), (3,) or ()");
    std::vector<std::size_t> shape;
    skip_ws();
    bool trailing_comma = false;
    while (peek() != ')') {
      if (shape.size() == max_dimensions)
        fail("'shape' has more than " + std::to_string(max_dimensions) + " dimensions");
      shape.push_back(parse_dimension());
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    if (shape.size() == 1 && !trailing_comma)
      fail("'shape' (n) is not a tuple; a 1-d shape is written (n,)");
    return shape;
  }
  std::string excerpt() const {
    std::string e;
    for (char c : s_.substr(0, 120))
      e += (c == '\n') ? ' ' : (static_cast<unsigned char>(c) < 32 ? '?' : c);
    return '"' + e + (s_.size() > 120 ? "...\"" : "\"");
  }

  const std::string &s_;
  const std::string &path_;
  std::uint64_t base_;
  std::size_t pos_ = 0;
};

/// Sets `h.type`, `h.order` from `h.descr`, or throws io_error.
inline void parse_descr(npy_header &h, const std::string &path) {
  const std::string &d = h.descr;
  auto bad = [&](const std::string &why) {
    rawio::fail(path, "header field 'descr': '" + d + "' " + why);
  };
  if (d.size() < 3)
    bad("is not a supported element type");
  const char order = d[0], kind = d[1];
  const std::string size_text = d.substr(2);
  if (order == '=')
    bad("has native byte order '=', which does not say the file's byte order");
  if (order != '<' && order != '>' && order != '|')
    bad("has no byte order character ('<', '>' or '|')");
  std::size_t size = 0;
  if (size_text == "1")
    size = 1;
  else if (size_text == "2")
    size = 2;
  else if (size_text == "4")
    size = 4;
  else if (size_text == "8")
    size = 8;
  else
    bad("has an unsupported item size");
  switch (kind) {
  case 'f':
    if (size == 4)
      h.type = dtype::float32;
    else if (size == 8)
      h.type = dtype::float64;
    else
      bad("is a floating type other than float32 / float64 (unsupported)");
    break;
  case 'i':
    h.type = size == 1   ? dtype::int8
             : size == 2 ? dtype::int16
             : size == 4 ? dtype::int32
                         : dtype::int64;
    break;
  case 'u':
    h.type = size == 1   ? dtype::uint8
             : size == 2 ? dtype::uint16
             : size == 4 ? dtype::uint32
                         : dtype::uint64;
    break;
  default:
    bad("is not a supported element type (float32/64, [u]int8/16/32/64)");
  }
  if (order == '|' && size > 1)
    bad("has byte order '|' (not applicable) for a multi-byte type");
  h.order = order == '>' ? byte_order::big : byte_order::little;
}

} // namespace npyio
} // namespace detail

/// Reads and checks the header of the `.npy` file `path`: magic, version,
/// header length within the file, the dict (strict Python literal syntax
/// as NumPy writes it), element type, shape (product and byte size must
/// not overflow) and that the file holds exactly `data_offset +
/// prod(shape) * itemsize` bytes. Fortran order is reported, not rejected
/// (`read_npy` rejects it).
/// @throws io_error naming the file and the offset or field at fault.
inline npy_header read_npy_header(const std::string &path) {
  namespace rawio = detail::rawio;
  const std::uint64_t file_size = rawio::regular_file_size(path);
  if (file_size < 10)
    rawio::fail(path, "not a .npy file: " + std::to_string(file_size) +
                          " bytes, shorter than the 10-byte minimum header");
  std::ifstream in = rawio::open_read(path);
  unsigned char prefix[12] = {};
  rawio::read_exact(in, path, 0, prefix, file_size >= 12 ? 12 : 10);
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (std::memcmp(prefix, magic, 6) != 0)
    rawio::fail(path, "not a .npy file: bytes 0-5 are not the magic \"\\x93NUMPY\"");
  npy_header h;
  h.major_version = prefix[6];
  h.minor_version = prefix[7];
  if ((h.major_version < 1 || h.major_version > 3) || h.minor_version != 0)
    rawio::fail(path, "offset 6: unsupported .npy version " +
                          std::to_string(h.major_version) + "." +
                          std::to_string(h.minor_version) + " (1.0, 2.0, 3.0 are read)");
  std::uint64_t prefix_len = 10, header_len = 0;
  if (h.major_version == 1) {
    header_len = load_little_endian<std::uint16_t>(prefix + 8);
  } else {
    if (file_size < 12)
      rawio::fail(path, "truncated: " + std::to_string(file_size) +
                            " bytes, version 2/3 header prefix needs 12");
    prefix_len = 12;
    header_len = load_little_endian<std::uint32_t>(prefix + 8);
  }
  if (header_len > file_size - prefix_len)
    rawio::fail(path, "offset 8: header length " + std::to_string(header_len) +
                          " runs past the end of the file (" + std::to_string(file_size) +
                          " bytes, header starts at " + std::to_string(prefix_len) + ")");
  if (header_len > detail::npyio::max_header_length)
    rawio::fail(path, "offset 8: header length " + std::to_string(header_len) +
                          " exceeds the limit of " +
                          std::to_string(detail::npyio::max_header_length) + " bytes");
  if (header_len == 0)
    rawio::fail(path, "offset 8: header length is 0");
  std::string text(static_cast<std::size_t>(header_len), '\0');
  rawio::read_exact(in, path, prefix_len, text.data(), header_len);
  detail::npyio::dict_parser(text, path, prefix_len).parse(h);
  detail::npyio::parse_descr(h, path);
  h.data_offset = prefix_len + header_len;

  // The product of the non-zero dimensions must fit, whatever their order
  // and whether a zero dimension makes the array empty.
  std::uint64_t n = 1;
  bool empty = false;
  for (std::size_t dim : h.shape) {
    if (dim == 0)
      empty = true;
    else if (rawio::mul_overflows(n, dim, n))
      rawio::fail(path, "header field 'shape': " + npy_shape_string(h.shape) +
                            " is absurd (element count overflows 64 bits)");
  }
  if (empty)
    n = 0;
  std::uint64_t bytes = 0;
  if (n > std::numeric_limits<std::size_t>::max() ||
      rawio::mul_overflows(n, dtype_size(h.type), bytes))
    rawio::fail(path, "header field 'shape': " + npy_shape_string(h.shape) +
                          " is absurd (byte size overflows 64 bits)");
  const std::uint64_t remaining = file_size - h.data_offset;
  if (bytes != remaining)
    rawio::fail(path, std::string(bytes > remaining ? "truncated" : "trailing bytes") +
                          ": header says shape " + npy_shape_string(h.shape) + " of " +
                          h.descr + " = " + std::to_string(bytes) +
                          " bytes from offset " + std::to_string(h.data_offset) +
                          ", the file holds " + std::to_string(remaining) +
                          " bytes there");
  return h;
}

} // namespace io
RESPROJ_NAMESPACE_END
