/// @file
/// @brief The NIfTI-1 image model: `nifti_image_info` (what a single-file
/// `.nii` header says, in resproj axis order) and the header constants.
///
/// ## Axis mapping (no transposition)
///
/// resproj images are C-ordered `[i0][i1][i2]` with `i2` fastest; NIfTI data
/// are Fortran-ordered with NIfTI `i` (dim[1]) fastest. The bytes are kept
/// as they are, so the axes map in reverse:
///
/// | NIfTI                        | resproj                            |
/// |------------------------------|------------------------------------|
/// | dim[1], data index i         | shape[2], index i2                 |
/// | dim[2], data index j         | shape[1], index i1                 |
/// | dim[3], data index k         | shape[0], index i0                 |
/// | pixdim[1..3]                 | voxel_size[2], [1], [0]            |
/// | world x, y, z (srow, qoffset)| world axis 0, 1, 2 (origin[0..2])  |
///
/// Written files carry an affine that maps i to world z, j to y and k to x
/// (sform rows `(0 0 s0 o0) (0 s1 0 o1) (s2 0 0 o2)`, the same as qform
/// with quatern (0, -1/sqrt2, 0) and qfac -1; code 1, scanner anatomical,
/// units mm): resproj's axis 2, the scanner axis of the reference
/// problems, is the superior axis in viewers, with the right voxel sizes
/// and origin. Reading accepts any affine that permutes the axes up to sign
/// (io/nifti_parse.hpp), so files written before with `diag(s2, s1, s0)`
/// read the same.
///
/// Parsing and checking of headers: io/nifti_parse.hpp; reading voxels:
/// io/nifti_read.hpp; writing: io/nifti_write.hpp. Standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/io/dtype.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Bytes of a NIfTI-1 header (`sizeof_hdr`).
inline constexpr std::size_t nifti_header_size = 348;
/// Smallest `vox_offset` of a single-file NIfTI-1 image (the header and the
/// 4-byte extension flag); where `write_nifti` puts the voxel data.
inline constexpr std::uint64_t nifti_min_vox_offset = 352;

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

} // namespace io
RESPROJ_NAMESPACE_END
