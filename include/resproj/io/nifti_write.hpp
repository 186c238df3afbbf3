/// @file
/// @brief Writing NIfTI-1 images: the 352 header bytes for an image
/// geometry (`nifti_header_bytes`) and whole-file writes of a float or
/// double image (`write_nifti`) with an axis-aligned affine.
///
/// `write_nifti` checks every argument first, then writes a temporary file
/// beside the target and renames it over the target on success (see
/// io/detail/replace_file.hpp): a failed write leaves the old file as it was.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/io/detail/replace_file.hpp"
#include "resproj/io/detail/stream_file.hpp"
#include "resproj/io/nifti_header.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// The 352 bytes (header and empty extension flag) that `write_nifti` puts
/// before the voxel data of an image of `T` (float: float32, double:
/// float64) with `geometry`; the voxel data follow at `nifti_min_vox_offset`.
/// @param geometry   shape, voxel size and origin of the image
/// @param count      number of voxels of the data (must be the geometry's)
/// @param data_name  names the data in messages (e.g. "data", "image")
/// @throws invalid_argument as `write_nifti`: (`data_name`) for a count
///         other than the voxel count, ("geometry.shape[k]") for a dimension
///         above 32767, ("geometry.voxel_size[k]", "geometry.origin[k]") for
///         a value that does not fit a float.
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
  for (std::size_t k = 0; k < 3; ++k) {
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
  for (std::size_t d = 1; d <= 3; ++d)
    put(40 + 2 * d, std::int16_t(shape[3 - d]));
  for (std::size_t d = 4; d <= 7; ++d)
    put(40 + 2 * d, std::int16_t(1));
  put(70, std::int16_t(std::is_same_v<T, float> ? 16 : 64));
  put(72, std::int16_t(8 * sizeof(T)));
  // qfac = -1: the permutation below (i -> z, j -> y, k -> x) is a reflection.
  put(76, -1.0f);
  for (std::size_t d = 1; d <= 3; ++d)
    put(76 + 4 * d, float(geometry.voxel_size()[3 - d]));
  put(108, float(nifti_min_vox_offset));
  put(112, 1.0f); // scl_slope
  put(116, 0.0f); // scl_inter
  hdr[123] = 2;   // NIFTI_UNITS_MM
  const char descrip[] = "resproj";
  std::memcpy(hdr.data() + 148, descrip, sizeof descrip);
  put(252, std::int16_t(1)); // qform_code: scanner anatomical
  put(254, std::int16_t(1)); // sform_code: scanner anatomical
  // Rotation of the qform: -90 degrees about y (a = 1/sqrt2, c = -1/sqrt2),
  // with qfac -1 giving the permutation i -> z, j -> y, k -> x.
  put(256, 0.0f);                        // quatern_b
  put(260, float(-0.70710678118654752)); // quatern_c
  put(264, 0.0f);                        // quatern_d
  // World axis w is resproj axis w: NIfTI data axis a (resproj axis 2 - a)
  // runs along world axis 2 - a.
  for (std::size_t w = 0; w < 3; ++w) {
    const float o = float(geometry.origin()[w]);
    put(268 + 4 * w, o); // qoffset x, y, z
    for (std::size_t c = 0; c < 4; ++c)
      put(280 + 16 * w + 4 * c, c == 2 - w ? float(geometry.voxel_size()[w])
                                : c == 3   ? o
                                           : 0.0f);
  }
  std::memcpy(hdr.data() + 344, "n+1\0", 4);
  // hdr[348..351]: extension flag 0 (no extensions).

  return hdr;
}

/// Writes `data` (C order `[i0][i1][i2]`, `geometry.shape()`) as the
/// single-file NIfTI-1 image `path` (created or replaced): float32 for
/// `float`, float64 for `double`, host byte order, vox_offset 352, no
/// extensions, scl_slope 1, sform = qform (code 1) taking NIfTI i, j, k
/// (resproj axes 2, 1, 0) to world z, y, x with voxel sizes s2, s1, s0 and
/// translation (o0, o1, o2), units mm: resproj axis 2, the scanner axis,
/// is the superior axis in viewers. See the axis mapping in the
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
  const auto hdr = nifti_header_bytes<T>(geometry, data.size(), "data");
  detail::rawio::replace_file(path, [&](std::fstream &f) {
    // Host byte order: no conversion (element size 1).
    detail::rawio::write_exact(f, path, false, 0, hdr.data(), hdr.size(), 1);
    detail::rawio::write_exact(f, path, true, 0, data.data(),
                               std::uint64_t(data.size()) * sizeof(T), 1);
  });
}

} // namespace io
RESPROJ_NAMESPACE_END
