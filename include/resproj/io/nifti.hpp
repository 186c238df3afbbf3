/// @file
/// @brief NIfTI-1 single-file (`.nii`) images: strict header parsing, reading
/// into a caller's buffer with voxel size and origin from the affine, and
/// writing with an axis-aligned affine.
///
/// Why no dependency (Debian's libnifti2-dev would be the candidate):
/// resproj needs one narrow slice of the format - single-file NIfTI-1, one
/// 3D volume, a handful of scalar types, an affine that is diagonal up to
/// sign. That is one fixed 348-byte struct, a few dozen lines to read and
/// write, all of it publicly specified. The reference library would add a
/// build- and run-time dependency (and zlib) to a header-only library that
/// promises "standard library + POSIX" for `io/`, would still need the same
/// strict checks (it is permissive by design), and could not report errors
/// through resproj's exceptions. So the header code is written here.
///
/// ## Axis mapping (no transposition)
///
/// resproj images are C-ordered `[i0][i1][i2]` with `i2` fastest; NIfTI data
/// are Fortran-ordered with NIfTI `i` (dim[1]) fastest. The bytes are kept
/// as they are, so the axes map in reverse:
///
/// | NIfTI               | resproj                         |
/// |---------------------|---------------------------------|
/// | dim[1], index i, x  | shape[2], index i2, world axis 2 |
/// | dim[2], index j, y  | shape[1], index i1, world axis 1 |
/// | dim[3], index k, z  | shape[0], index i0, world axis 0 |
/// | pixdim[1..3]        | voxel_size[2], [1], [0]          |
/// | srow/qoffset x,y,z  | origin[2], [1], [0]              |
///
/// i.e. a PET image `[slice][row][column]` written by resproj has its columns
/// along NIfTI x and its slices along NIfTI z. Written files carry the
/// affine `diag(s2, s1, s0)` with translation `(o2, o1, o0)` as both sform
/// and qform (code 1, scanner anatomical), units mm (xyzt_units = 2).
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
/// - A finite stored value whose (scaled) value is out of the range of the
///   destination type (float64 data above 3.4e38 read as float, or scaling
///   that overflows) is an error naming the field (voxel data or
///   scl_slope/scl_inter) and the voxel's offset; stored infinities and NaN
///   are read as they are.
/// - The file must be a regular file; a FIFO or device is rejected without
///   blocking.
/// - Affine: sform if sform_code > 0, else qform if qform_code > 0, else
///   diag(pixdim[1..3]) with zero translation. It must be diagonal up to
///   sign (relative off-diagonal tolerance 1e-5); oblique, rotated or
///   axis-permuting affines are rejected. A negative diagonal entry means
///   the axis is stored reversed: the data are flipped on read so that
///   resproj's voxel size is positive and `origin` is the centre of the
///   voxel read into `[0,0,0]`.
/// - Spatial units: metre and micron are converted to mm; unknown (0) is
///   taken as mm.
/// - Geometry values are float32 in the file: a round trip is exact only for
///   values representable as float.
///
/// Every error is `io_error` ("resproj: <file>: <field or offset>: <problem>")
/// thrown before the destination is touched.
///
/// `write_nifti` checks every argument first, then writes a temporary file
/// beside the target and renames it over the target on success (see
/// raw.hpp): a failed write leaves the old file as it was.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
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
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/raw.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Everything `read_nifti_header` learned from a `.nii` header, already
/// checked against the file. Arrays indexed by axis are in resproj order.
struct nifti_image_info {
  std::array<std::int64_t, 3> shape{};   ///< (n0, n1, n2) = (dim[3], dim[2], dim[1])
  std::array<double, 3> voxel_size{};    ///< mm, > 0, resproj order
  std::array<double, 3> origin{};        ///< mm, centre of voxel [0,0,0] after flips
  std::array<bool, 3> flipped{};         ///< resproj axis k is stored reversed
  dtype type = dtype::float32;           ///< element type in the file
  int datatype_code = 0;                 ///< NIfTI datatype code (16 = float32, ...)
  byte_order order = byte_order::little; ///< byte order of header and data
  std::uint64_t vox_offset = 0;          ///< byte offset of the voxel data
  std::uint64_t data_bytes = 0;          ///< bytes of voxel data (n0 n1 n2 size)
  bool scaled = false;                   ///< scl_slope / scl_inter are applied
  double scl_slope = 0;                  ///< as stored
  double scl_inter = 0;                  ///< as stored
  int qform_code = 0;                    ///< as stored
  int sform_code = 0;                    ///< as stored
  int xyzt_units = 0;                    ///< as stored
  /// Which transform gave the geometry: "sform", "qform" or "pixdim".
  std::string geometry_source;
  /// The 3x4 affine (NIfTI voxel index (i,j,k,1) -> world x,y,z), in the
  /// file's spatial units, before any flip.
  std::array<std::array<double, 4>, 3> affine{};

  /// n0 * n1 * n2.
  std::int64_t num_voxels() const noexcept { return shape[0] * shape[1] * shape[2]; }
  /// The image geometry (throws invalid_argument only on impossible values,
  /// which the header checks already exclude).
  image_geometry geometry() const { return image_geometry(shape, voxel_size, origin); }
};

namespace detail {

constexpr std::size_t nifti_header_size = 348;
constexpr std::uint64_t nifti_min_vox_offset = 352;

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
  for (int d = 1; d <= 3; ++d) {
    const int n = f.i16(40 + 2 * d);
    if (n < 1)
      nifti_fail(path, "dim[" + std::to_string(d) + "] (offset " +
                           std::to_string(40 + 2 * d) + "): must be >= 1, got " +
                           std::to_string(n));
    info.shape[3 - d] = n;
  }
  for (int d = 4; d <= ndim; ++d) {
    const int n = f.i16(40 + 2 * d);
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
  for (int d = 0; d < 4; ++d)
    pixdim[d] = f.f32(76 + 4 * d);
  auto check_pixdim = [&](const char *why) {
    for (int d = 1; d <= 3; ++d)
      if (!std::isfinite(pixdim[d]) || !(pixdim[d] > 0))
        nifti_fail(path, "pixdim[" + std::to_string(d) + "] (offset " +
                             std::to_string(76 + 4 * d) + "): must be finite and > 0 " +
                             why + ", got " + nifti_num(pixdim[d]));
  };
  if (info.sform_code > 0) {
    info.geometry_source = "sform";
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
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
    for (int r = 0; r < 3; ++r) {
      for (int col = 0; col < 3; ++col)
        A[r][col] = R[r][col] * scale[col];
      A[r][3] = f.f32(268 + 4 * r);
    }
  } else {
    info.geometry_source = "pixdim";
    check_pixdim("(no sform or qform)");
    for (int r = 0; r < 3; ++r)
      A[r][r] = pixdim[r + 1];
  }
  const std::string src = info.geometry_source;
  double maxdiag = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      if (!std::isfinite(A[r][c]))
        nifti_fail(path, src + " affine: entry (" + std::to_string(r) + "," +
                             std::to_string(c) + ") is not finite");
  for (int r = 0; r < 3; ++r)
    maxdiag = std::max(maxdiag, std::fabs(A[r][r]));
  for (int r = 0; r < 3; ++r) {
    if (!(std::fabs(A[r][r]) > 1.0e-5 * maxdiag) || A[r][r] == 0)
      nifti_fail(path, src + " affine: not axis-aligned (diagonal entry (" +
                           std::to_string(r) + "," + std::to_string(r) + ") is " +
                           nifti_num(A[r][r]) +
                           "); oblique, rotated or axis-permuted images are not "
                           "supported");
    for (int c = 0; c < 3; ++c)
      if (c != r && std::fabs(A[r][c]) > 1.0e-5 * maxdiag)
        nifti_fail(path, src + " affine: oblique or rotated (entry (" +
                             std::to_string(r) + "," + std::to_string(c) +
                             ") = " + nifti_num(A[r][c]) +
                             "); only affines that are diagonal up to sign are "
                             "supported");
  }
  for (int a = 0; a < 3; ++a) {
    const int k = 2 - a; // NIfTI axis a <-> resproj axis k
    const double m = A[a][a] * unit, t = A[a][3] * unit;
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
  const pio_file file = pio_file::open_read(path, size_out);
  if (size_out < nifti_header_size)
    nifti_fail(path, "truncated header: file has " + std::to_string(size_out) +
                         " bytes, a NIfTI-1 header needs 348");
  unsigned char hdr[nifti_header_size];
  file.pread_exact(path, hdr, nifti_header_size, 0);
  return parse_nifti_header(path, hdr, size_out);
}

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

/// Reads and checks the header of the single-file NIfTI-1 image `path`,
/// including that the file holds all the voxel data it claims.
/// @throws io_error naming the file and the field (with its byte offset)
///         for a missing/unreadable file, a truncated or corrupt header,
///         unsupported content (see the file comment) or a short file.
inline nifti_image_info read_nifti_header(const std::string &path) {
  std::uint64_t size = 0;
  return detail::read_nifti_header_impl(path, size);
}

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

namespace detail {
/// The 352 bytes (header + empty extension flag) that `write_nifti` puts
/// before the voxel data of `count` elements of `T` with `geometry`.
/// @throws invalid_argument as `write_nifti` (`data_name` names the data).
template <class T>
std::array<unsigned char, nifti_min_vox_offset>
nifti_header_bytes(const image_geometry &geometry, std::size_t count,
                   const char *data_name) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "write_nifti: T must be float or double");
  const auto &shape = geometry.shape();
  if (count != std::uint64_t(geometry.num_voxels()))
    resproj::detail::throw_invalid(
        data_name, "has " + std::to_string(count) + " elements, geometry has " +
                       std::to_string(geometry.num_voxels()) + " voxels");
  for (int k = 0; k < 3; ++k) {
    const std::string idx = "[" + std::to_string(k) + "]";
    if (shape[k] > 32767)
      resproj::detail::throw_invalid("geometry.shape" + idx,
                                     "NIfTI-1 dimensions are at most 32767, got " +
                                         std::to_string(shape[k]));
    const float s = float(geometry.voxel_size()[k]);
    if (!std::isfinite(s) || !(s > 0))
      resproj::detail::throw_invalid("geometry.voxel_size" + idx, "does not fit a float");
    if (!std::isfinite(float(geometry.origin()[k])))
      resproj::detail::throw_invalid("geometry.origin" + idx, "does not fit a float");
  }
  std::array<unsigned char, nifti_min_vox_offset> hdr{};
  auto put = [&hdr](std::size_t off, auto v) {
    std::memcpy(hdr.data() + off, &v, sizeof v);
  };
  put(0, std::int32_t(348));
  hdr[38] = 'r'; // "regular"
  put(40, std::int16_t(3));
  for (int d = 1; d <= 3; ++d)
    put(40 + 2 * d, std::int16_t(shape[3 - d]));
  for (int d = 4; d <= 7; ++d)
    put(40 + 2 * d, std::int16_t(1));
  put(70, std::int16_t(std::is_same_v<T, float> ? 16 : 64));
  put(72, std::int16_t(8 * sizeof(T)));
  put(76, 1.0f); // pixdim[0] = qfac = 1
  for (int d = 1; d <= 3; ++d)
    put(76 + 4 * d, float(geometry.voxel_size()[3 - d]));
  put(108, float(nifti_min_vox_offset));
  put(112, 1.0f); // scl_slope
  put(116, 0.0f); // scl_inter
  hdr[123] = 2;   // NIFTI_UNITS_MM
  const char descrip[] = "resproj";
  std::memcpy(hdr.data() + 148, descrip, sizeof descrip);
  put(252, std::int16_t(1)); // qform_code: scanner anatomical
  put(254, std::int16_t(1)); // sform_code: scanner anatomical
  // quatern_b/c/d = 0 (identity rotation)
  for (int a = 0; a < 3; ++a) {
    const float o = float(geometry.origin()[2 - a]);
    put(268 + 4 * a, o); // qoffset
    for (int c = 0; c < 4; ++c)
      put(280 + 16 * a + 4 * c, c == a   ? float(geometry.voxel_size()[2 - a])
                                : c == 3 ? o
                                         : 0.0f);
  }
  std::memcpy(hdr.data() + 344, "n+1\0", 4);
  // hdr[348..351]: extension flag 0 (no extensions).

  return hdr;
}
} // namespace detail

/// Writes `data` (C order `[i0][i1][i2]`, `geometry.shape()`) as the
/// single-file NIfTI-1 image `path` (created or replaced): float32 for
/// `float`, float64 for `double`, host byte order, vox_offset 352, no
/// extensions, scl_slope 1, sform = qform (code 1) =
/// `diag(s2, s1, s0)` + `(o2, o1, o0)`, units mm. See the axis mapping in the
/// file comment. Every argument is checked before the file system is
/// touched; the file is then written beside `path` and renamed over it
/// only on success, so on any error an existing `path` is left as it was
/// and no temporary file remains.
/// @throws invalid_argument if `data` is null with a nonzero size or its
///         size is not the voxel count ("data"), a dimension exceeds 32767
///         ("geometry.shape[k]") or a voxel size or origin does not fit a
///         float ("geometry.voxel_size[k]", "geometry.origin[k]"); io_error
///         if `path` is a directory or not a regular file, or the file
///         cannot be written.
template <class T>
void write_nifti(const std::string &path, span<const T> data,
                 const image_geometry &geometry) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "write_nifti: T must be float or double");
  resproj::detail::check_span(data, data.size(), "data");
  const auto hdr = detail::nifti_header_bytes<T>(geometry, data.size(), "data");
  detail::rawio::replace_file(path, [&](std::fstream &f) {
    // Host byte order: no conversion (element size 1).
    detail::rawio::write_exact(f, path, false, 0, hdr.data(), hdr.size(), 1);
    detail::rawio::write_exact(f, path, true, 0, data.data(),
                               std::uint64_t(data.size()) * sizeof(T), 1);
  });
}

} // namespace io
RESPROJ_NAMESPACE_END
