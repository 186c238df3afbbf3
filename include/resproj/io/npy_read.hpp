/// @file
/// @brief Reading `.npy` arrays into a caller's span or a new vector
/// (`read_npy`, `read_npy_vector`), with the check that a header can be read
/// into a given element type (`check_npy_readable`). Big-endian data are
/// converted to host order. Host code, standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/span.hpp"
#include "resproj/io/detail/stream_file.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/npy_header.hpp"
#include "resproj/io/npy_parse.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Checks that the array described by `h` can be read into elements of `T`
/// in C order: the file's element type must be `dtype_of_v<T>` (no
/// conversion is done) and its layout C order (see `npy_header::is_c_order`).
/// @param h     the header of `path`, from `read_npy_header`
/// @param path  the file, for messages
/// @throws io_error naming the file and the header field ('descr' or
///         'fortran_order') at fault.
template <class T> void check_npy_readable(const npy_header &h, const std::string &path) {
  namespace rawio = detail::rawio;
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
  check_npy_readable<T>(h, path);
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
  check_npy_readable<T>(h, path);
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
  check_npy_readable<T>(h, path);
  std::vector<T> out(h.num_elements());
  npy_header h2 = read_npy(path, span<T>(out.data(), out.size()));
  if (header != nullptr)
    *header = std::move(h2);
  return out;
}

} // namespace io
RESPROJ_NAMESPACE_END
