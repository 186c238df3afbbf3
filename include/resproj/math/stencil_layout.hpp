/// @file
/// @brief The "stencil layout" of an image, a back-projection accumulator:
/// for LORs whose principal axis is 0 or 1 (every LOR of a cylindrical PET
/// scanner), the four amounts a Joseph sample adds to its bilinear stencil
/// land in four consecutive values.
///
/// The plain C-ordered image keeps the two neighbours along axis 2
/// adjacent, but the two along the other transaxial axis u are a whole row
/// apart: a sample touches two memory sectors and, when back projected,
/// needs at least two atomics. The layout stores, for principal axis d in
/// {0, 1}, plane p, lower neighbour (iu, iv):
///
///     element start[d] + ((p * rows[d] + iu + 1) * cols + iv + 1) * 2 + k
///         <-> voxel (u = iu + k, v = iv) of plane p,   k = 0, 1,
///
/// so the stencil (iu, iv), (iu + 1, iv), (iu, iv + 1), (iu + 1, iv + 1)
/// is the four elements from `entry(d, p, iu, iv)` on (one 16-byte vector
/// when `iv` is odd). Rows and columns are padded by one (iu, iv = -1) and
/// columns rounded up to an even count; out-of-image neighbours get zero
/// amounts, so the padding stays zero. A reduction adds each voxel's four
/// elements (`stencil_voxel_elements`) into the image. u is axis 1 for
/// d = 0 and axis 0 for d = 1; v is axis 2. Size: about 4 x the image
/// (2 classes x 2 copies). Used by the GPU list-mode back projection
/// (gpu::stencil_workspace); plain C++, so the CPU tests check it against
/// the image form. (As a forward-projection source it measured slower: a
/// 4 x larger working set costs more L2 misses than the vector loads save.)
#pragma once

#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// Extents of the stencil layout of an image (see the file comment).
struct stencil_layout {
  std::int64_t planes[2] = {0, 0}; ///< n_d
  std::int64_t rows[2] = {0, 0};   ///< n_u + 1
  std::int64_t size_u[2] = {0, 0}; ///< n_u
  std::int64_t size_v = 0;         ///< n_2
  std::int64_t cols = 0;           ///< n_2 + 2, rounded up to even
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
    return I(start[axis]) + ((I(p) * I(rows[axis]) + iu + 1) * I(cols) + iv + 1) * 2;
  }
};

/// The layout of `g`'s image.
template <class T> RESPROJ_HD stencil_layout make_stencil_layout(const image_grid<T> &g) {
  stencil_layout l;
  l.size_v = g.shape[2];
  l.cols = (g.shape[2] + 2 + 1) / 2 * 2;
  for (int d = 0; d < 2; ++d) {
    l.planes[d] = g.shape[d];
    l.size_u[d] = g.shape[1 - d];
    l.rows[d] = g.shape[1 - d] + 1;
  }
  l.start[0] = 0;
  l.start[1] = l.planes[0] * l.rows[0] * l.cols * 2;
  l.size = l.start[1] + l.planes[1] * l.rows[1] * l.cols * 2;
  return l;
}

/// True if every element index of the layout fits a signed 32-bit integer.
inline bool fits_32bit_index(const stencil_layout &l) noexcept {
  return l.size < (std::int64_t(1) << 31) - 1;
}

/// The four elements whose sum is voxel (i0, i1, i2)'s share of a
/// back projection into the layout (classes 0 and 1, k = 0 and 1). The
/// reduction's rule; each element belongs to exactly one voxel.
template <class I>
RESPROJ_HD void stencil_voxel_elements(const stencil_layout &l, I i0, I i1, I i2,
                                       I out[4]) noexcept {
  out[0] = l.entry<I>(0, i0, i1, i2);               // row i1 + 1, k = 0
  out[1] = l.entry<I>(0, i0, i1 - 1, i2) + 1;       // row i1, k = 1
  out[2] = l.entry<I>(1, std::int64_t(i1), i0, i2); // row i0 + 1, k = 0
  out[3] = l.entry<I>(1, std::int64_t(i1), i0 - 1, i2) + 1;
}

} // namespace math
RESPROJ_NAMESPACE_END
