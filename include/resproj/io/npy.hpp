/// @file
/// @brief NumPy `.npy` files: read the header, read the array into a
/// caller's span, write a span with a shape.
///
/// Format (versions 1.0, 2.0 and 3.0 are read; 1.0 is written, 2.0 when
/// the header would not fit 1.0's 16-bit length):
///
/// | bytes            | content                                              |
/// |------------------|------------------------------------------------------|
/// | 0-5              | magic `"\x93NUMPY"`                                  |
/// | 6, 7             | major, minor version                                 |
/// | 8-9 (1.0)        | header length, uint16 little-endian                  |
/// | 8-11 (2.0, 3.0)  | header length, uint32 little-endian                  |
/// | then             | a Python dict literal with exactly the keys `descr`, |
/// |                  | `fortran_order`, `shape`, padded with spaces and     |
/// |                  | ended by `'\n'`                                      |
/// | then             | the elements, `prod(shape) * itemsize` bytes         |
///
/// Decisions:
/// - Element types: `descr` `<f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8`, the
///   same with `>` (big-endian) and, for 1-byte types, `|`. Big-endian data
///   is accepted and converted to host order on reading. `=` (writer's native
///   order, never written by NumPy), bool, float16, complex, strings and
///   structured types are rejected. No conversion between element types:
///   the file's type must be `dtype_of_v<T>`.
/// - Order: resproj images are C order (x fastest). A file with
///   `fortran_order: True` is rejected unless its layout is the same in both
///   orders (at most one dimension larger than 1); transpose it in NumPy
///   (`np.ascontiguousarray`) instead.
/// - Size: the file must hold exactly `data_offset + prod(shape) * itemsize`
///   bytes; shorter (truncated) and longer files are rejected, as are shapes
///   whose product or byte size overflows 64 bits and more than 64
///   dimensions.
/// - Errors: file problems throw `io_error` naming the file, the field or
///   offset and the problem; a file that does not match what the caller
///   asked for (element type, shape, element count) is also an `io_error`.
///   `invalid_argument` is for arguments inconsistent among themselves.
///   The destination is untouched whenever anything is thrown before the
///   data read starts (see raw.hpp for a file changing under the read).
///
/// Host code, standard library only. The functions share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/raw.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// What the header of a `.npy` file says, checked against the file size.
struct npy_header {
  int major_version = 1;                 ///< format version, 1, 2 or 3
  int minor_version = 0;                 ///< always 0
  std::string descr;                     ///< element type as written, e.g. "<f4"
  dtype type = dtype::float32;           ///< element type
  byte_order order = byte_order::little; ///< byte order of the data
  bool fortran_order = false;            ///< `fortran_order` as written
  std::vector<std::size_t> shape;        ///< dimensions, slowest first; empty for 0-d
  std::uint64_t data_offset = 0;         ///< byte offset of the first element

  /// Product of the dimensions (1 for a 0-d array). Checked not to
  /// overflow by `read_npy_header`.
  std::size_t num_elements() const noexcept {
    std::size_t n = 1;
    for (std::size_t d : shape)
      n *= d;
    return n;
  }
  /// Bytes of data: `num_elements() * dtype_size(type)`.
  std::uint64_t data_bytes() const noexcept {
    return std::uint64_t(num_elements()) * dtype_size(type);
  }
  /// `true` if the data are laid out in C order: `fortran_order` is false,
  /// or at most one dimension is larger than 1 (the orders then agree).
  bool is_c_order() const noexcept {
    if (!fortran_order)
      return true;
    int big = 0;
    for (std::size_t d : shape)
      big += d > 1;
    return big <= 1;
  }
};

/// Formats a shape as Python does: "()", "(3,)", "(3, 4)".
inline std::string npy_shape_string(const std::vector<std::size_t> &shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

/// The `descr` NumPy writes for `t` in little-endian order: "<f4", "|u1", ...
inline std::string npy_descr(dtype t) {
  std::string s;
  s += dtype_size(t) == 1 ? '|' : '<';
  s += dtype_is_floating(t) ? 'f' : dtype_is_signed_integer(t) ? 'i' : 'u';
  s += std::to_string(dtype_size(t));
  return s;
}

namespace detail {
namespace npyio {

constexpr std::uint64_t max_header_length = std::uint64_t(1) << 20;
constexpr std::size_t max_dimensions = 64;

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

  std::uint64_t n = 1;
  for (std::size_t dim : h.shape)
    if (rawio::mul_overflows(n, dim, n))
      rawio::fail(path, "header field 'shape': " + npy_shape_string(h.shape) +
                            " is absurd (element count overflows 64 bits)");
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

namespace detail {
namespace npyio {
/// Checks that `h` (of the file `path`) can be read into `T` in C order.
template <class T> void check_readable(const npy_header &h, const std::string &path) {
  if (h.type != dtype_of_v<T>)
    rawio::fail(path, "header field 'descr': the file holds '" + h.descr + "' (" +
                          dtype_name(h.type) + "), the destination is " +
                          dtype_name(dtype_of_v<T>) + " (no conversion is done)");
  if (!h.is_c_order())
    rawio::fail(path, "header field 'fortran_order': the array of shape " +
                          npy_shape_string(h.shape) +
                          " is in Fortran (column-major) order; resproj needs C order "
                          "(save np.ascontiguousarray(a) instead)");
}
} // namespace npyio
} // namespace detail

/// Reads the array of the `.npy` file `path` into `dst`, which must hold
/// exactly as many elements as the file. Big-endian data are converted to
/// host order. Returns the header.
/// @throws io_error (destination untouched) for any problem
///         `read_npy_header` finds, an element type other than
///         `dtype_of_v<T>`, Fortran order (see file comment), or an element
///         count other than `dst.size()`; io_error also if the read fails.
/// @throws invalid_argument ("dst") for a null pointer with a nonzero size.
template <class T> npy_header read_npy(const std::string &path, span<T> dst) {
  static_assert(!std::is_const_v<T>, "read_npy: destination must be writable");
  static_assert(is_dtype_type_v<T>, "read_npy: T must map to an io::dtype");
  if (!dst.empty() && dst.data() == nullptr)
    resproj::detail::throw_invalid("dst", "null pointer with size " +
                                              std::to_string(dst.size()));
  npy_header h = read_npy_header(path);
  detail::npyio::check_readable<T>(h, path);
  if (h.num_elements() != dst.size())
    detail::rawio::fail(path, "holds " + std::to_string(h.num_elements()) +
                                  " elements (shape " + npy_shape_string(h.shape) +
                                  "), the destination holds " +
                                  std::to_string(dst.size()));
  if (!dst.empty()) {
    std::ifstream in = detail::rawio::open_read(path);
    detail::rawio::read_exact(in, path, h.data_offset, dst.data(), h.data_bytes());
    convert_byte_order(dst.data(), dst.size(), sizeof(T), h.order);
  }
  return h;
}

/// As above, and the file's shape must equal `expected_shape` (slowest
/// dimension first, e.g. {nz, ny, nx} for an image).
/// @throws invalid_argument ("expected_shape") if its product is not
///         `dst.size()` (checked before the file is opened).
/// @throws io_error if the file's shape differs, and as above.
template <class T>
npy_header read_npy(const std::string &path, span<T> dst,
                    const std::vector<std::size_t> &expected_shape) {
  std::uint64_t n = 1;
  for (std::size_t d : expected_shape)
    if (detail::rawio::mul_overflows(n, d, n))
      resproj::detail::throw_invalid("expected_shape", "element count overflows");
  if (n != dst.size())
    resproj::detail::throw_invalid("expected_shape", npy_shape_string(expected_shape) +
                                                         " holds " + std::to_string(n) +
                                                         " elements, dst holds " +
                                                         std::to_string(dst.size()));
  const npy_header h = read_npy_header(path);
  detail::npyio::check_readable<T>(h, path);
  if (h.shape != expected_shape)
    detail::rawio::fail(path, "header field 'shape': " + npy_shape_string(h.shape) +
                                  " differs from the expected " +
                                  npy_shape_string(expected_shape));
  return read_npy(path, dst);
}

/// Reads the whole array of `path` into a new vector (allocated after the
/// header has been checked against the file size). `header`, if not null,
/// receives the header (shape etc.).
/// @throws io_error as `read_npy(path, dst)`.
template <class T>
std::vector<T> read_npy_vector(const std::string &path, npy_header *header = nullptr) {
  const npy_header h = read_npy_header(path);
  detail::npyio::check_readable<T>(h, path);
  std::vector<T> out(h.num_elements());
  npy_header h2 = read_npy(path, span<T>(out.data(), out.size()));
  if (header != nullptr)
    *header = std::move(h2);
  return out;
}

namespace detail {
namespace npyio {
/// The complete header (magic, version, length, padded dict) of a C-order
/// little-endian `.npy` file of `count` elements of `type` with `shape`; the
/// data start right after it (a multiple of 64 bytes).
/// @throws invalid_argument ("shape") if the shape has more than 64
///         dimensions, overflows or does not hold `count` elements
///         (`data_name` names the data in the message).
inline std::string header_bytes(dtype type, const std::vector<std::size_t> &shape,
                                std::size_t count, const char *data_name) {
  if (shape.size() > detail::npyio::max_dimensions)
    resproj::detail::throw_invalid("shape", "more than 64 dimensions");
  std::uint64_t n = 1;
  for (std::size_t d : shape)
    if (detail::rawio::mul_overflows(n, d, n))
      resproj::detail::throw_invalid("shape", "element count overflows");
  if (n != count)
    resproj::detail::throw_invalid(
        "shape", npy_shape_string(shape) + " holds " + std::to_string(n) + " elements, " +
                     std::string(data_name) + " holds " + std::to_string(count));
  std::string dict = "{'descr': '" + npy_descr(type) +
                     "', 'fortran_order': False, 'shape': " + npy_shape_string(shape) +
                     ", }";
  std::size_t prefix_len = 10;
  std::size_t total = prefix_len + dict.size() + 1; // + '\n'
  total = (total + 63) / 64 * 64;
  if (total - prefix_len > 65535) {
    prefix_len = 12;
    total = (prefix_len + dict.size() + 1 + 63) / 64 * 64;
  }
  const std::size_t header_len = total - prefix_len;
  std::string header = dict + std::string(header_len - dict.size() - 1, ' ') + '\n';
  std::string bytes = "\x93NUMPY";
  bytes += prefix_len == 10 ? '\x01' : '\x02';
  bytes += '\0';
  unsigned char len[4];
  if (prefix_len == 10) {
    store_little_endian(static_cast<std::uint16_t>(header_len), len);
    bytes.append(reinterpret_cast<const char *>(len), 2);
  } else {
    store_little_endian(static_cast<std::uint32_t>(header_len), len);
    bytes.append(reinterpret_cast<const char *>(len), 4);
  }
  bytes += header;
  return bytes;
}
} // namespace npyio
} // namespace detail

/// Writes `data` with shape `shape` (slowest dimension first; {} for a
/// 0-d array holding one element) as a C-order little-endian `.npy` file,
/// version 1.0 (2.0 if the header needs more than 65535 bytes), creating
/// or replacing `path`. The header is padded so the data start at a
/// multiple of 64 bytes, as NumPy does. The file is written beside `path`
/// and renamed over it on success (see raw.hpp): on any error an existing
/// `path` is left as it was.
/// @throws invalid_argument ("shape") if `prod(shape) != data.size()`,
///         ("data") for a null pointer with a nonzero size; nothing is
///         created then.
/// @throws io_error if `path` is a directory or not a regular file (checked
///         first), or the file cannot be created or written.
template <class T>
void write_npy(const std::string &path, span<const T> data,
               const std::vector<std::size_t> &shape) {
  static_assert(is_dtype_type_v<T>, "write_npy: T must map to an io::dtype");
  if (!data.empty() && data.data() == nullptr)
    resproj::detail::throw_invalid("data", "null pointer with size " +
                                               std::to_string(data.size()));
  const std::string bytes =
      detail::npyio::header_bytes(dtype_of_v<T>, shape, data.size(), "data");
  detail::rawio::replace_file(path, [&](std::fstream &f) {
    detail::rawio::write_exact(f, path, false, 0, bytes.data(), bytes.size(), 1);
    detail::rawio::write_exact(f, path, true, 0, data.data(),
                               std::uint64_t(data.size()) * sizeof(T), sizeof(T));
  });
}

/// As above for a `span<T>`.
template <class T>
void write_npy(const std::string &path, span<T> data,
               const std::vector<std::size_t> &shape) {
  write_npy(path, span<const T>(data), shape);
}

} // namespace io
RESPROJ_NAMESPACE_END
