/// @file
/// @brief Parsing and checking of NIfTI-1 headers (`read_nifti_header`):
/// byte order, magic, dimensions, element type, scaling, units and the
/// affine, checked against the file size.
///
/// ## Reading rules
///
/// - Byte order from sizeof_hdr (348 either way); magic must be "n+1\0"
///   ("ni1" = .hdr/.img pair and NIfTI-2 are rejected).
/// - dim[0] = 3, or 4..7 with every extra dimension 1; dim[1..3] >= 1.
/// - datatypes uint8, int8, uint16, int16, uint32, int32, uint64, int64,
///   float32, float64 (bitpix must agree); values are converted to `T`.
/// - scl_slope: 0 or NaN means "no scaling" (NIfTI convention); otherwise
///   value = scl_slope * stored + scl_inter (both must be finite), computed
///   in double.
/// - The file must be a regular file; a FIFO or device is rejected without
///   blocking.
/// - Affine: sform if sform_code > 0, else qform if qform_code > 0, else
///   diag(pixdim[1..3]) with zero translation. It must permute the axes up
///   to sign (each data axis along one world axis; relative tolerance 1e-5
///   on the other entries); oblique or rotated affines are rejected. Data
///   axis a (NIfTI i, j, k) is resproj axis 2 - a whichever world axis it
///   runs along, with that axis' voxel size and translation. A negative
///   entry means the axis is stored reversed: the data are flipped on read
///   so that resproj's voxel size is positive and `origin` is the centre of
///   the voxel read into `[0,0,0]`.
/// - Spatial units: metre and micron are converted to mm; unknown (0) is
///   taken as mm.
/// - Geometry values are float32 in the file: a round trip is exact only for
///   values representable as float.
///
/// Every error is `io_error` ("resproj: <file>: <field or offset>: <problem>").
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/io/dtype.hpp"
#include "resproj/io/nifti_header.hpp"
#include "resproj/io/positional_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

namespace detail {

/// Reads little- or big-endian fields out of a raw header.
struct nifti_fields {
  const unsigned char *p;
  bool swap;
  template <class U> U get(std::size_t off) const noexcept {
    unsigned char b[sizeof(U)];
    std::memcpy(b, p + off, sizeof(U));
    if (swap)
      byteswap_elements(b, 1, sizeof(U));
    U v;
    std::memcpy(&v, b, sizeof(U));
    return v;
  }
  std::int16_t i16(std::size_t off) const noexcept { return get<std::int16_t>(off); }
  float f32(std::size_t off) const noexcept { return get<float>(off); }
};

inline bool nifti_dtype_from_code(int code, dtype &t) noexcept {
  switch (code) {
  case 2:
    t = dtype::uint8;
    return true;
  case 4:
    t = dtype::int16;
    return true;
  case 8:
    t = dtype::int32;
    return true;
  case 16:
    t = dtype::float32;
    return true;
  case 64:
    t = dtype::float64;
    return true;
  case 256:
    t = dtype::int8;
    return true;
  case 512:
    t = dtype::uint16;
    return true;
  case 768:
    t = dtype::uint32;
    return true;
  case 1024:
    t = dtype::int64;
    return true;
  case 1280:
    t = dtype::uint64;
    return true;
  default:
    return false;
  }
}

[[noreturn]] inline void nifti_fail(const std::string &path, const std::string &what) {
  throw io_error("resproj: " + path + ": " + what);
}

inline std::string nifti_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// Parses and checks a 348-byte header of a file of `file_size` bytes.
inline nifti_image_info parse_nifti_header(const std::string &path,
                                           const unsigned char *hdr,
                                           std::uint64_t file_size) {
  nifti_image_info info;
  // Byte order from sizeof_hdr.
  std::int32_t sizeof_hdr;
  std::memcpy(&sizeof_hdr, hdr, 4);
  bool swap = false;
  if (sizeof_hdr != 348) {
    std::int32_t swapped = sizeof_hdr;
    byteswap_elements(&swapped, 1, 4);
    if (swapped != 348)
      nifti_fail(path,
                 "sizeof_hdr (offset 0): expected 348 in either byte order, got " +
                     std::to_string(sizeof_hdr) +
                     (sizeof_hdr == 540 || swapped == 540 ? " (NIfTI-2 is not supported)"
                                                          : " (not a NIfTI-1 file)"));
    swap = true;
  }
  info.order = swap ? (host_byte_order() == byte_order::little ? byte_order::big
                                                               : byte_order::little)
                    : host_byte_order();
  const nifti_fields f{hdr, swap};

  // Magic at 344.
  const unsigned char *magic = hdr + 344;
  if (std::memcmp(magic, "ni1\0", 4) == 0)
    nifti_fail(path, "magic (offset 344): \"ni1\" is a two-file .hdr/.img pair; only "
                     "single-file .nii (\"n+1\") is supported");
  if (std::memcmp(magic, "n+1\0", 4) != 0)
    nifti_fail(path, "magic (offset 344): expected \"n+1\\0\" (single-file NIfTI-1)");

  // dim.
  const int ndim = f.i16(40);
  if (ndim < 3 || ndim > 7)
    nifti_fail(path, "dim[0] (offset 40): expected 3 dimensions (or up to 7 with the "
                     "extra ones 1), got " +
                         std::to_string(ndim));
  for (std::size_t d = 1; d <= 3; ++d) {
    const int n = f.i16(40 + 2 * d);
    if (n < 1)
      nifti_fail(path, "dim[" + std::to_string(d) + "] (offset " +
                           std::to_string(40 + 2 * d) + "): must be >= 1, got " +
                           std::to_string(n));
    info.shape[3 - d] = n;
  }
  for (int d = 4; d <= ndim; ++d) {
    const int n = f.i16(std::size_t(40 + 2 * d));
    if (n != 1)
      nifti_fail(path,
                 "dim[" + std::to_string(d) + "] (offset " + std::to_string(40 + 2 * d) +
                     "): only single 3D volumes are supported, got " + std::to_string(n));
  }

  // datatype / bitpix.
  info.datatype_code = f.i16(70);
  if (!nifti_dtype_from_code(info.datatype_code, info.type))
    nifti_fail(path, "datatype (offset 70): unsupported NIfTI datatype code " +
                         std::to_string(info.datatype_code));
  const int bitpix = f.i16(72);
  if (bitpix != int(8 * dtype_size(info.type)))
    nifti_fail(path, "bitpix (offset 72): " + std::to_string(bitpix) +
                         " does not match datatype " +
                         std::to_string(info.datatype_code) + " (" +
                         dtype_name(info.type) + ", " +
                         std::to_string(8 * dtype_size(info.type)) + " bits)");
  info.data_bytes = std::uint64_t(info.num_voxels()) * dtype_size(info.type);

  // vox_offset and file size.
  const float vox = f.f32(108);
  if (!std::isfinite(vox) || vox < float(nifti_min_vox_offset) ||
      vox != std::floor(vox) || vox > 1.0e15f)
    nifti_fail(path, "vox_offset (offset 108): must be an integer >= 352, got " +
                         nifti_num(vox));
  info.vox_offset = std::uint64_t(vox);
  if (info.vox_offset > file_size || info.data_bytes > file_size - info.vox_offset)
    nifti_fail(path, "vox_offset (offset 108) + data size: header claims " +
                         std::to_string(info.data_bytes) + " data bytes at offset " +
                         std::to_string(info.vox_offset) + " but the file has " +
                         std::to_string(file_size) + " bytes");

  // Scaling.
  info.scl_slope = f.f32(112);
  info.scl_inter = f.f32(116);
  if (info.scl_slope != 0 && !std::isnan(info.scl_slope)) {
    if (!std::isfinite(info.scl_slope) || !std::isfinite(info.scl_inter))
      nifti_fail(path, "scl_slope/scl_inter (offset 112/116): not finite (" +
                           nifti_num(info.scl_slope) + ", " + nifti_num(info.scl_inter) +
                           ")");
    info.scaled = !(info.scl_slope == 1 && info.scl_inter == 0);
  }

  // Units.
  info.xyzt_units = hdr[123];
  double unit = 1.0;
  switch (info.xyzt_units & 0x07) {
  case 0: // unknown: taken as mm
  case 2:
    unit = 1.0;
    break;
  case 1:
    unit = 1000.0;
    break;
  case 3:
    unit = 1.0e-3;
    break;
  default:
    nifti_fail(path, "xyzt_units (offset 123): invalid spatial unit code " +
                         std::to_string(info.xyzt_units & 0x07));
  }

  // Affine.
  info.qform_code = f.i16(252);
  info.sform_code = f.i16(254);
  auto &A = info.affine;
  std::array<double, 4> pixdim{};
  for (std::size_t d = 0; d < 4; ++d)
    pixdim[d] = f.f32(76 + 4 * d);
  auto check_pixdim = [&](const char *why) {
    for (std::size_t d = 1; d <= 3; ++d)
      if (!std::isfinite(pixdim[d]) || !(pixdim[d] > 0))
        nifti_fail(path, "pixdim[" + std::to_string(d) + "] (offset " +
                             std::to_string(76 + 4 * d) + "): must be finite and > 0 " +
                             why + ", got " + nifti_num(pixdim[d]));
  };
  if (info.sform_code > 0) {
    info.geometry_source = "sform";
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 0; c < 4; ++c)
        A[r][c] = f.f32(280 + 16 * r + 4 * c);
  } else if (info.qform_code > 0) {
    info.geometry_source = "qform";
    check_pixdim("(qform)");
    double b = f.f32(256), c = f.f32(260), d = f.f32(264);
    double a = 1.0 - (b * b + c * c + d * d);
    if (!std::isfinite(a))
      nifti_fail(path, "quatern_b/c/d (offset 256): not finite");
    if (a < 1.0e-7) { // 180-degree rotation: renormalise (b, c, d)
      const double s = 1.0 / std::sqrt(b * b + c * c + d * d);
      b *= s, c *= s, d *= s, a = 0.0;
    } else {
      a = std::sqrt(a);
    }
    const double qfac = pixdim[0] < 0 ? -1.0 : 1.0;
    const double R[3][3] = {
        {a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
        {2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)},
        {2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b}};
    const double scale[3] = {pixdim[1], pixdim[2], pixdim[3] * qfac};
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t col = 0; col < 3; ++col)
        A[r][col] = R[r][col] * scale[col];
      A[r][3] = f.f32(268 + 4 * r);
    }
  } else {
    info.geometry_source = "pixdim";
    check_pixdim("(no sform or qform)");
    for (std::size_t r = 0; r < 3; ++r)
      A[r][r] = pixdim[r + 1];
  }
  const std::string src = info.geometry_source;
  double maxabs = 0;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 4; ++c) {
      if (!std::isfinite(A[r][c]))
        nifti_fail(path, src + " affine: entry (" + std::to_string(r) + "," +
                             std::to_string(c) + ") is not finite");
      if (c < 3)
        maxabs = std::max(maxabs, std::fabs(A[r][c]));
    }
  // Each data axis (column a) runs along one world axis (row r): the affine
  // is a permutation up to sign. resproj keeps the data order, so NIfTI data
  // axis a is resproj axis 2 - a, with the voxel size and origin of its row.
  std::array<bool, 3> row_used{};
  for (std::size_t a = 0; a < 3; ++a) {
    std::size_t r = 0;
    for (std::size_t q = 1; q < 3; ++q)
      if (std::fabs(A[q][a]) > std::fabs(A[r][a]))
        r = q;
    if (!(std::fabs(A[r][a]) > 1.0e-5 * maxabs))
      nifti_fail(path, src + " affine: not axis-aligned (column " + std::to_string(a) +
                           " is zero); degenerate affines are not supported");
    for (std::size_t q = 0; q < 3; ++q)
      if (q != r && std::fabs(A[q][a]) > 1.0e-5 * maxabs)
        nifti_fail(path, src + " affine: oblique or rotated (entry (" +
                             std::to_string(q) + "," + std::to_string(a) +
                             ") = " + nifti_num(A[q][a]) +
                             "); only affines that permute the axes, up to sign, are "
                             "supported");
    if (row_used[r])
      nifti_fail(path, src +
                           " affine: not axis-aligned (two data axes along world axis " +
                           std::to_string(r) + ")");
    row_used[r] = true;
    const std::size_t k = 2 - a; // NIfTI data axis a <-> resproj axis k
    const double m = A[r][a] * unit, t = A[r][3] * unit;
    info.voxel_size[k] = std::fabs(m);
    info.flipped[k] = m < 0;
    info.origin[k] = m < 0 ? t + m * double(info.shape[k] - 1) : t;
    if (!std::isfinite(info.voxel_size[k]) || !std::isfinite(info.origin[k]))
      nifti_fail(path, src + " affine: voxel size or origin out of range");
  }
  return info;
}

/// Reads and parses the header of `path`; `size_out` gets the file size.
inline nifti_image_info read_nifti_header_impl(const std::string &path,
                                               std::uint64_t &size_out) {
  const positional_file file = positional_file::open_read(path, size_out);
  if (size_out < nifti_header_size)
    nifti_fail(path, "truncated header: file has " + std::to_string(size_out) +
                         " bytes, a NIfTI-1 header needs 348");
  unsigned char hdr[nifti_header_size];
  file.pread_exact(path, hdr, nifti_header_size, 0);
  return parse_nifti_header(path, hdr, size_out);
}
} // namespace detail

/// Reads and checks the header of the single-file NIfTI-1 image `path`,
/// including that the file holds all the voxel data it claims.
/// @throws io_error naming the file and the field (with its byte offset)
///         for a missing/unreadable file, a truncated or corrupt header,
///         unsupported content (see the file comment) or a short file.
inline nifti_image_info read_nifti_header(const std::string &path) {
  std::uint64_t size = 0;
  return detail::read_nifti_header_impl(path, size);
}

} // namespace io
RESPROJ_NAMESPACE_END
