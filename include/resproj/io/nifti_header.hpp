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
