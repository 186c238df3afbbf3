/// @file
/// @brief Reading NIfTI-1 voxels into a caller's buffer (`read_nifti`):
/// conversion of the stored type, scl_slope / scl_inter scaling and flips
/// of axes stored reversed; the geometry alone (`read_nifti_geometry`).
///
/// Values are converted to `T` and scaled in double (the header rules are
/// in io/nifti_parse.hpp). A finite stored value whose (scaled) value is out
/// of the range of the destination type (float64 data above 3.4e38 read as
/// float, or scaling that overflows) is an error naming the field (voxel
/// data or scl_slope/scl_inter) and the voxel's offset; stored infinities
/// and NaN are read as they are.
///
/// Every error is `io_error` ("resproj: <file>: <field or offset>: <problem>")
/// thrown before the destination is touched.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/nifti_header.hpp"
#include "resproj/io/nifti_parse.hpp"
#include "resproj/io/parallel_read.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

namespace detail {

/// Calls `f(S())` with `S` the C++ type of the element type `t`.
template <class F> void nifti_visit(dtype t, F &&f) {
  switch (t) {
  case dtype::uint8:
    return f(std::uint8_t());
  case dtype::int8:
    return f(std::int8_t());
  case dtype::uint16:
    return f(std::uint16_t());
  case dtype::int16:
    return f(std::int16_t());
  case dtype::uint32:
    return f(std::uint32_t());
  case dtype::int32:
    return f(std::int32_t());
  case dtype::uint64:
    return f(std::uint64_t());
  case dtype::int64:
    return f(std::int64_t());
  case dtype::float32:
    return f(float());
  case dtype::float64:
    return f(double());
  }
}

/// Stored element `i` (storage order) of `raw`, in host byte order.
template <class S>
S nifti_load(const unsigned char *raw, std::uint64_t i, bool swap) noexcept {
  unsigned char b[sizeof(S)];
  std::memcpy(b, raw + std::size_t(i) * sizeof(S), sizeof(S));
  if (swap)
    byteswap_elements(b, 1, sizeof(S));
  S v;
  std::memcpy(&v, b, sizeof(S));
  return v;
}

/// Throws io_error naming the file, the field and the voxel if a finite
/// stored value of `raw` would be read as a value out of the range of `T`
/// (larger in magnitude than its largest finite value): float64 data read as
/// float, or scl_slope / scl_inter scaling that overflows. Stored infinities
/// and NaN pass (they are read as they are). Reads `raw` only.
template <class S, class T>
void nifti_check_range(const std::string &path, const unsigned char *raw,
                       const nifti_image_info &info) {
  constexpr bool narrowing =
      sizeof(S) == 8 && std::is_floating_point_v<S> && std::is_same_v<T, float>;
  if (!info.scaled && !narrowing)
    return; // every stored value fits T
  const double limit = double(std::numeric_limits<T>::max());
  const bool swap = info.order != host_byte_order() && sizeof(S) > 1;
  const double slope = info.scl_slope, inter = info.scl_inter;
  const std::uint64_t n = std::uint64_t(info.num_voxels());
  for (std::uint64_t i = 0; i < n; ++i) {
    const double v = double(nifti_load<S>(raw, i, swap));
    if (!std::isfinite(v))
      continue;
    const double r = info.scaled ? slope * v + inter : v;
    if (std::fabs(r) <= limit)
      continue;
    const std::uint64_t n1 = std::uint64_t(info.shape[1]),
                        n2 = std::uint64_t(info.shape[2]);
    const std::string where =
        "voxel data at offset " + std::to_string(info.vox_offset + i * sizeof(S)) +
        " (NIfTI voxel i,j,k = " + std::to_string(i % n2) + "," +
        std::to_string(i / n2 % n1) + "," + std::to_string(i / (n1 * n2)) + ")";
    const std::string type = dtype_name(dtype_of_v<T>);
    if (info.scaled)
      nifti_fail(path, "scl_slope/scl_inter (offset 112/116): scaling the value " +
                           nifti_num(v) + " of the " + where + " by " + nifti_num(slope) +
                           " and adding " + nifti_num(inter) + " gives " + nifti_num(r) +
                           ", out of the range of the " + type + " destination");
    nifti_fail(path, where + ": value " + nifti_num(v) + " is out of the range of the " +
                         type + " destination");
  }
}

template <class S, class T>
void nifti_convert(const unsigned char *raw, const nifti_image_info &info, T *dst) {
  const std::int64_t n0 = info.shape[0], n1 = info.shape[1], n2 = info.shape[2];
  const bool swap = info.order != host_byte_order() && sizeof(S) > 1;
  const double slope = info.scl_slope, inter = info.scl_inter;
  for (std::int64_t i0 = 0; i0 < n0; ++i0) {
    const std::int64_t s0 = info.flipped[0] ? n0 - 1 - i0 : i0;
    for (std::int64_t i1 = 0; i1 < n1; ++i1) {
      const std::int64_t s1 = info.flipped[1] ? n1 - 1 - i1 : i1;
      const unsigned char *row = raw + std::size_t((s0 * n1 + s1) * n2) * sizeof(S);
      T *out = dst + (i0 * n1 + i1) * n2;
      for (std::int64_t i2 = 0; i2 < n2; ++i2) {
        const std::int64_t s2 = info.flipped[2] ? n2 - 1 - i2 : i2;
        unsigned char b[sizeof(S)];
        std::memcpy(b, row + std::size_t(s2) * sizeof(S), sizeof(S));
        if (swap)
          byteswap_elements(b, 1, sizeof(S));
        S v;
        std::memcpy(&v, b, sizeof(S));
        out[i2] = info.scaled ? T(slope * double(v) + inter) : T(v);
      }
    }
  }
}

} // namespace detail

/// Reads the image `path` into `dst` (C order, see the axis mapping in the
/// file comment), converting the stored type to `T` and applying
/// scl_slope / scl_inter; axes stored reversed are flipped.
/// @param dst          exactly `n0 * n1 * n2` elements
/// @param geometry_out if not null, receives the image geometry
/// @throws invalid_argument ("dst") if `dst` is null with a nonzero size
///         (checked first) or `dst.size()` is not the voxel count; io_error
///         as `read_nifti_header`, if reading fails, or if a finite stored
///         value is out of the range of `T` once converted and scaled (the
///         message names the field, voxel data or scl_slope/scl_inter, and
///         the voxel's offset). On any error neither `dst` nor
///         `*geometry_out` is modified.
template <class T>
void read_nifti(const std::string &path, span<T> dst,
                image_geometry *geometry_out = nullptr) {
  static_assert(std::is_floating_point_v<T> && !std::is_const_v<T>,
                "read_nifti: T must be float or double");
  resproj::detail::check_span(dst, dst.size(), "dst");
  const nifti_image_info info = read_nifti_header(path);
  if (dst.size() != std::uint64_t(info.num_voxels()))
    resproj::detail::throw_invalid(
        "dst", "has " + std::to_string(dst.size()) + " elements but " + path + " holds " +
                   std::to_string(info.num_voxels()) + " voxels");
  const image_geometry geometry = info.geometry();
  std::vector<unsigned char> raw(std::size_t(info.data_bytes));
  read_range_into(path, info.vox_offset, span<unsigned char>(raw.data(), raw.size()));
  detail::nifti_visit(info.type, [&](auto stored) {
    detail::nifti_check_range<decltype(stored), T>(path, raw.data(), info);
  });
  // Nothing below throws: dst is written only after every check and read.
  detail::nifti_visit(info.type, [&](auto stored) {
    detail::nifti_convert<decltype(stored)>(raw.data(), info, dst.data());
  });
  if (geometry_out)
    *geometry_out = geometry;
}

/// The geometry of the image `path` (shape, voxel size and origin in mm,
/// resproj axis order), from its header alone.
/// @tparam T unused (kept so that call sites can name the element type they
///           will read; any type is accepted).
/// @throws io_error as `read_nifti_header`.
template <class T = float> image_geometry read_nifti_geometry(const std::string &path) {
  return read_nifti_header(path).geometry();
}

} // namespace io
RESPROJ_NAMESPACE_END
