/// @file
/// @brief The `.npy` header model (`npy_header`) and the format: what a
/// header holds, the shape and element type strings NumPy writes.
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
/// Parsing: io/npy_parse.hpp; reading: io/npy_read.hpp; writing:
/// io/npy_write.hpp. Host code, standard library only. The functions share
/// no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/io/dtype.hpp"

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

} // namespace npyio
} // namespace detail

} // namespace io
RESPROJ_NAMESPACE_END
