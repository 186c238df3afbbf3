/// @file
/// @brief Writing `.npy` files: the header NumPy would write for a C-order
/// little-endian array (`npy_header_bytes`) and whole-file writes of a span
/// with a shape (`write_npy`). Host code, standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/detail/replace_file.hpp"
#include "resproj/io/detail/stream_file.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/npy_header.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// The complete header (magic, version, length, padded dict) that
/// `write_npy` puts before the data of a C-order little-endian `.npy` file:
/// version 1.0, or 2.0 when the header needs more than 65535 bytes. The data
/// start right after it (a multiple of 64 bytes).
/// @param type       element type
/// @param shape      dimensions, slowest first ({} for a 0-d array)
/// @param count      number of elements of the data
/// @param data_name  names the data in messages (e.g. "data", "src")
/// @throws invalid_argument ("shape") if the shape has more than 64
///         dimensions, overflows or does not hold `count` elements.
inline std::string npy_header_bytes(dtype type, const std::vector<std::size_t> &shape,
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
  const std::string bytes = npy_header_bytes(dtype_of_v<T>, shape, data.size(), "data");
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
