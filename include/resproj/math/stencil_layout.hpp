/// @file
/// @brief The "stencil layout" of an image, a back-projection accumulator:
/// for LORs whose principal axis is 0 or 1 (every LOR of a cylindrical PET
/// scanner), the four amounts a Joseph sample adds to its bilinear stencil
/// land in four consecutive values.
///
/// The plain C-ordered image keeps the two neighbours along axis 2
/// adjacent, but the two along the other transaxial axis u are a whole row
/// apart: a sample touches two memory sectors and, when back projected,
/// needs at least two atomics. The layout keeps one array per principal
/// axis d in {0, 1} (u is axis 1 for d = 0 and axis 0 for d = 1; v is
/// axis 2), indexed by plane p and lower neighbour (iu, iv), both padded
/// by one (iu, iv = -1):
///
///     entry(d, p, iu, iv) = start[d] + ((p * rows + iu + 1) * cols + iv + 1) * width
///
/// and the stencil's four amounts, in the order of `bilinear_point`
/// ((iu, iv), (iu + 1, iv), (iu, iv + 1), (iu + 1, iv + 1)), are the four
/// elements from `entry` on. Two widths:
///
/// - width 4: each stencil position owns its four elements (16-byte
///   aligned: one float4 atomic per sample); a voxel's total is the sum of
///   eight elements (four stencil positions x two arrays). About 8 x the
///   image's memory.
/// - width 2: element k of column iv + 1 belongs to voxel (iu + k, iv), so
///   neighbouring stencils share elements and the stencil's last two
///   elements are the next column's first two (one float4 atomic when the
///   entry is 16-byte aligned, two float2 otherwise); a voxel's total is
///   four elements. Columns rounded up to an even count. About 4 x.
///
/// Out-of-image neighbours get zero amounts, so the padding stays zero; a
/// reduction adds each voxel's elements (`stencil_voxel_elements`) into the
/// image. Used by the GPU list-mode back projection
/// (gpu::stencil_workspace); plain C++, so the CPU tests check it against
/// the image form. (As a forward-projection source it measured slower: a
/// larger working set costs more L2 misses than the vector loads save.)
#pragma once

#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// Extents of the stencil layout of an image (see the file comment).
struct stencil_layout {
  int width = 2;                   ///< elements per stencil position: 2 or 4
  std::int64_t planes[2] = {0, 0}; ///< n_d
  std::int64_t rows[2] = {0, 0};   ///< n_u + 1
  std::int64_t size_u[2] = {0, 0}; ///< n_u
  std::int64_t size_v = 0;         ///< n_2
  std::int64_t cols = 0;           ///< n_2 + 1 (width 4); n_2 + 2 rounded up to even (2)
  std::int64_t start[2] = {0, 0};  ///< first element of class d
  std::int64_t size = 0;           ///< elements in all

  /// True if the sample of a LOR with principal axis `axis` whose lower
  /// neighbour is (iu, iv) has its stencil in the layout.
  template <class I> RESPROJ_HD bool covers(int axis, I iu, I iv) const noexcept {
    return axis < 2 && iu >= -1 && iu < size_u[axis] && iv >= -1 && iv < size_v;
  }
  /// First of the four elements of the stencil (iu, iv) on plane p.
  template <class I>
  RESPROJ_HD I entry(int axis, std::int64_t p, I iu, I iv) const noexcept {
    return I(start[axis]) +
           ((I(p) * I(rows[axis]) + iu + 1) * I(cols) + iv + 1) * I(width);
  }
};

/// The layout of `g`'s image with `width` 2 or 4 (other values: 4).
template <class T>
RESPROJ_HD stencil_layout make_stencil_layout(const image_grid<T> &g, int width = 2) {
  stencil_layout l;
  l.width = width == 2 ? 2 : 4;
  l.size_v = g.shape[2];
  l.cols = l.width == 4 ? g.shape[2] + 1 : (g.shape[2] + 2 + 1) / 2 * 2;
  for (int d = 0; d < 2; ++d) {
    l.planes[d] = g.shape[d];
    l.size_u[d] = g.shape[1 - d];
    l.rows[d] = g.shape[1 - d] + 1;
  }
  l.start[0] = 0;
  l.start[1] = l.planes[0] * l.rows[0] * l.cols * l.width;
  l.size = l.start[1] + l.planes[1] * l.rows[1] * l.cols * l.width;
  return l;
}

/// True if every element index of the layout fits a signed 32-bit integer.
inline bool fits_32bit_index(const stencil_layout &l) noexcept {
  return l.size < (std::int64_t(1) << 31) - 1;
}

/// The elements whose sum is voxel (i0, i1, i2)'s share of a back
/// projection into the layout: writes them to `out` and returns their
/// count (4 for width 2, 8 for width 4). The reduction's rule; each element
/// belongs to at most one voxel.
template <class I>
RESPROJ_HD int stencil_voxel_elements(const stencil_layout &l, I i0, I i1, I i2,
                                      I out[8]) noexcept {
  if (l.width == 2) {
    out[0] = l.entry<I>(0, i0, i1, i2);         // row i1 + 1, k = 0
    out[1] = l.entry<I>(0, i0, i1 - 1, i2) + 1; // row i1, k = 1
    out[2] = l.entry<I>(1, std::int64_t(i1), i0, i2);
    out[3] = l.entry<I>(1, std::int64_t(i1), i0 - 1, i2) + 1;
    return 4;
  }
  // Stencils (u, v), (u - 1, v), (u, v - 1), (u - 1, v - 1) hold the voxel
  // as their element 0, 1, 2, 3; in both arrays.
  for (int c = 0; c < 2; ++c) {
    const I p = c == 0 ? i0 : i1, u = c == 0 ? i1 : i0;
    for (int k = 0; k < 4; ++k)
      out[4 * c + k] = l.entry<I>(c, std::int64_t(p), u - (k & 1), i2 - (k >> 1)) + k;
  }
  return 8;
}

} // namespace math
RESPROJ_NAMESPACE_END
