/// @file
/// @brief Joseph's method for one LOR (docs/projection.md): principal axis,
/// ray/box clipping, sampled plane range, bilinear sample and its transpose.
/// The one implementation of the numbers, used by every backend.
#pragma once

#include <cfloat>
#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/image_grid.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// The discrete decisions for one LOR, and the affine maps from plane index
/// to position that the samples need. Planes `first_plane..last_plane`
/// (inclusive) along `axis` are sampled; none when `first_plane > last_plane`.
template <class T> struct joseph_ray {
  int axis = 1;                 ///< principal axis d
  std::int64_t first_plane = 1; ///< first sampled plane index
  std::int64_t last_plane = 0;  ///< last sampled plane index
  /// Fractional voxel index on the first other axis (the lower-numbered
  /// one) at plane p is `u0 + p * du`; likewise `v0 + p * dv` on the second.
  T u0 = 0, du = 0, v0 = 0, dv = 0;
  std::int64_t stride_plane = 0, stride_u = 0, stride_v = 0;
  std::int64_t size_u = 0, size_v = 0;
  /// Path length per plane step: `s_d / |cos theta_d|`.
  T step = 0;
  /// Parameter along the LOR (0 at the start, 1 at the end) of the sample
  /// on plane p: `t0 + p * dt`; `length` = |b - a|. Used by TOF.
  T t0 = 0, dt = 0, length = 0;

  RESPROJ_HD bool empty() const noexcept { return first_plane > last_plane; }
  RESPROJ_HD std::int64_t num_planes() const noexcept {
    return empty() ? 0 : last_plane - first_plane + 1;
  }
};

/// `v[k]` for k in {0, 1, 2}, selected rather than indexed: with a run-time
/// k, indexing an array (a kernel parameter's or a local one) makes the GPU
/// compiler copy it to local memory; a selection keeps it in registers.
template <class T> RESPROJ_HD T axis_value(const T *v, int k) noexcept {
  return k == 0 ? v[0] : (k == 1 ? v[1] : v[2]);
}

/// Principal axis of direction `d`: largest |d_k|; ties: 1 beats 0 and 2,
/// 2 beats 0.
template <class T> RESPROJ_HD int principal_axis(const T d[3]) noexcept {
  const T a0 = abs_of(d[0]), a1 = abs_of(d[1]), a2 = abs_of(d[2]);
  int axis = 1;
  T best = a1;
  if (a2 > best) {
    axis = 2;
    best = a2;
  }
  if (a0 > best)
    axis = 0;
  return axis;
}

/// Clips the segment a + t (b - a), t in [0, 1], against the closed image
/// box (slab method). Returns false if it misses. Division only, no
/// multiply-add: the result is the same on every backend.
template <class T>
RESPROJ_HD bool clip_to_box(const image_grid<T> &g, const T a[3], const T d[3], T &t_in,
                            T &t_out) noexcept {
  T lo = 0, hi = 1;
  for (int k = 0; k < 3; ++k) {
    if (d[k] == T(0)) {
      if (a[k] < g.box_min[k] || a[k] > g.box_max[k])
        return false;
      continue;
    }
    T t1 = (g.box_min[k] - a[k]) / d[k];
    T t2 = (g.box_max[k] - a[k]) / d[k];
    if (t1 > t2) {
      const T tmp = t1;
      t1 = t2;
      t2 = tmp;
    }
    if (t1 > lo)
      lo = t1;
    if (t2 < hi)
      hi = t2;
  }
  t_in = lo;
  t_out = hi;
  return lo <= hi; // false for NaN too
}

/// True unless x is NaN or +-inf (a comparison only: same on host and device).
RESPROJ_HD inline bool finite_of(float x) { return abs_of(x) <= FLT_MAX; }
RESPROJ_HD inline bool finite_of(double x) { return abs_of(x) <= DBL_MAX; }

/// Sets up the Joseph walk of LOR a -> b. All discrete decisions (axis,
/// plane range) are taken here with uncontracted arithmetic. A LOR with a
/// non-finite end-point coordinate (or whose b - a overflows T) gives an
/// empty ray: it contributes nothing.
template <class T>
RESPROJ_HD joseph_ray<T> make_joseph_ray(const image_grid<T> &g, const T a[3],
                                         const T b[3]) noexcept {
  joseph_ray<T> r;
  const T d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  // b_k - a_k is finite exactly when both are and the difference does not
  // overflow: one test per axis, before any float-to-integer conversion.
  if (!(finite_of(d[0]) && finite_of(d[1]) && finite_of(d[2])))
    return r;
  const int ax = principal_axis(d);
  r.axis = ax;
  const T d_ax = axis_value(d, ax), a_ax = axis_value(a, ax), b_ax = axis_value(b, ax);
  const T origin_ax = axis_value(g.origin, ax), voxel_ax = axis_value(g.voxel_size, ax);
  if (d_ax == T(0))
    return r; // zero length
  T t_in, t_out;
  if (!clip_to_box(g, a, d, t_in, t_out))
    return r;
  // Entry and exit along the principal axis in plane units. At t == 1 the
  // point is b itself: a + 1 * (b - a) can miss b by an ulp and drop (or
  // add) the plane of an end point lying exactly on a plane centre.
  T f_in =
      ((t_in == T(1) ? b_ax : a_ax + mul_no_contract(t_in, d_ax)) - origin_ax) / voxel_ax;
  T f_out = ((t_out == T(1) ? b_ax : a_ax + mul_no_contract(t_out, d_ax)) - origin_ax) /
            voxel_ax;
  if (f_in > f_out) {
    const T tmp = f_in;
    f_in = f_out;
    f_out = tmp;
  }
  std::int64_t first = std::int64_t(floor_of(f_in)) + 1;
  std::int64_t last = std::int64_t(floor_of(f_out));
  // Rounding can only push the edges by an ulp; keep indices in the image.
  if (first < 0)
    first = 0;
  const std::int64_t planes = axis_value(g.shape, ax);
  if (last > planes - 1)
    last = planes - 1;
  r.first_plane = first;
  r.last_plane = last;
  if (first > last)
    return r;

  const int au = ax == 0 ? 1 : 0;
  const int av = ax == 2 ? 1 : 2;
  r.stride_plane = axis_value(g.stride, ax);
  r.stride_u = axis_value(g.stride, au);
  r.stride_v = axis_value(g.stride, av);
  r.size_u = axis_value(g.shape, au);
  r.size_v = axis_value(g.shape, av);
  // World coordinate of plane p along d: origin_d + p * s_d.
  // t(p) = (origin_d + p s_d - a_d) / d_d; x_k(p) = a_k + t(p) d_k.
  const T inv_dd = T(1) / d_ax;
  r.t0 = (origin_ax - a_ax) * inv_dd;
  r.dt = voxel_ax * inv_dd;
  const T voxel_u = axis_value(g.voxel_size, au), voxel_v = axis_value(g.voxel_size, av);
  const T d_u = axis_value(d, au), d_v = axis_value(d, av);
  r.u0 = (axis_value(a, au) + r.t0 * d_u - axis_value(g.origin, au)) / voxel_u;
  r.du = r.dt * d_u / voxel_u;
  r.v0 = (axis_value(a, av) + r.t0 * d_v - axis_value(g.origin, av)) / voxel_v;
  r.dv = r.dt * d_v / voxel_v;
  r.length = sqrt_of(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  r.step = voxel_ax * r.length / abs_of(d_ax);
  return r;
}

/// Bilinear interpolation weights and voxel offsets of the sample on plane
/// p, with out-of-image neighbours given weight 0 and offset 0. `I` is the
/// voxel index type: std::int64_t always works; backends may pick a 32-bit
/// type when every offset fits (see `fits_32bit_index`), which saves the
/// GPU's 64-bit integer arithmetic.
template <class I, class T> struct bilinear_stencil {
  I offset[4];
  T weight[4];
};

/// True if every voxel offset of `g` (plus one stride either side, as the
/// stencil forms them before masking) fits in a signed 32-bit integer.
template <class T> RESPROJ_HD bool fits_32bit_index(const image_grid<T> &g) noexcept {
  return g.shape[0] * g.stride[0] + g.stride[0] < (std::int64_t(1) << 31) - 1;
}

/// The linear interpolation of a sample along one of the two other axes:
/// lower neighbour `i` of the fractional voxel index `x0 + p * dx`
/// (floored), the weights of `i` and `i + 1`, and whether each lies in
/// `[0, size)`. `bilinear_at` forms both axes with it, and so does every
/// kernel that splits the bilinear weight into its two factors.
template <class I, class T> struct axis_point {
  I i;
  T w0, w1;
  bool in0, in1;
};

template <class I, class T>
RESPROJ_HD axis_point<I, T> axis_point_at(T x0, T dx, std::int64_t p,
                                          std::int64_t size) noexcept {
  const T x = x0 + T(p) * dx;
  const T f = floor_of(x);
  axis_point<I, T> a;
  a.i = I(f);
  a.w1 = x - f;
  a.w0 = T(1) - a.w1;
  a.in0 = a.i >= 0 && a.i < I(size);
  a.in1 = a.i >= -1 && a.i < I(size) - 1;
  return a;
}

/// Lower neighbour `(iu, iv)` of the sample on plane p (fractional voxel
/// indices floored; -1 .. size - 1 inside the box) and its four bilinear
/// weights, in the order (iu, iv), (iu + 1, iv), (iu, iv + 1),
/// (iu + 1, iv + 1); out-of-image neighbours get weight 0.
template <class I, class T> struct bilinear_point {
  I iu, iv;
  T weight[4];
};

/// `bilinear_point` of the sample on plane p: the one place where the
/// bilinear weights are formed (every stencil and layout uses it).
template <class I = std::int64_t, class T>
RESPROJ_HD bilinear_point<I, T> bilinear_at(const joseph_ray<T> &r,
                                            std::int64_t p) noexcept {
  const axis_point<I, T> u = axis_point_at<I>(r.u0, r.du, p, r.size_u);
  const axis_point<I, T> v = axis_point_at<I>(r.v0, r.dv, p, r.size_v);
  bilinear_point<I, T> q;
  q.iu = u.i;
  q.iv = v.i;
  q.weight[0] = (u.in0 && v.in0) ? u.w0 * v.w0 : T(0);
  q.weight[1] = (u.in1 && v.in0) ? u.w1 * v.w0 : T(0);
  q.weight[2] = (u.in0 && v.in1) ? u.w0 * v.w1 : T(0);
  q.weight[3] = (u.in1 && v.in1) ? u.w1 * v.w1 : T(0);
  return q;
}

template <class I = std::int64_t, class T>
RESPROJ_HD bilinear_stencil<I, T> stencil_at(const joseph_ray<T> &r,
                                             std::int64_t p) noexcept {
  const bilinear_point<I, T> q = bilinear_at<I>(r, p);
  const I stride_u = I(r.stride_u), stride_v = I(r.stride_v);
  const I base = I(p) * I(r.stride_plane) + q.iu * stride_u + q.iv * stride_v;
  bilinear_stencil<I, T> s;
  s.offset[0] = base;
  s.offset[1] = base + stride_u;
  s.offset[2] = base + stride_v;
  s.offset[3] = base + stride_u + stride_v;
  for (int i = 0; i < 4; ++i) {
    s.weight[i] = q.weight[i];
    if (s.weight[i] == T(0))
      s.offset[i] = 0; // never dereference outside the image
  }
  return s;
}

/// Bilinear sample of the image on plane p (zero-padded image).
template <class I = std::int64_t, class T>
RESPROJ_HD T sample(const T *image, const joseph_ray<T> &r, std::int64_t p) noexcept {
  const bilinear_stencil<I, T> s = stencil_at<I>(r, p);
  T acc = 0;
  for (int i = 0; i < 4; ++i)
    if (s.weight[i] != T(0))
      acc += s.weight[i] * image[s.offset[i]];
  return acc;
}

/// Transpose of `sample`: adds `value * weight` to each in-image neighbour
/// through `add(T* voxel, T amount)` (plain or atomic, backend's choice).
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void scatter(T *image, const joseph_ray<T> &r, std::int64_t p, T value,
                        Add &&add) noexcept {
  const bilinear_stencil<I, T> s = stencil_at<I>(r, p);
  for (int i = 0; i < 4; ++i)
    if (s.weight[i] != T(0))
      add(image + s.offset[i], value * s.weight[i]);
}

/// Non-TOF forward projection of one LOR over planes
/// `first, first + stride, ...` up to `ray.last_plane` (stride > 1 lets
/// several threads share a LOR; they add their partial sums).
template <class I = std::int64_t, class T>
RESPROJ_HD T forward_planes(const T *image, const joseph_ray<T> &r, std::int64_t first,
                            std::int64_t stride) noexcept {
  T acc = 0;
#if RESPROJ_IN_DEVICE_CODE
#pragma unroll 4 // several planes' loads in flight
#endif
  for (std::int64_t p = first; p <= r.last_plane; p += stride)
    acc += sample<I>(image, r, p);
  return acc * r.step;
}

/// Non-TOF back projection of `value` along one LOR, planes as in
/// `forward_planes`.
RESPROJ_EXEC_CHECK_DISABLE
template <class I = std::int64_t, class T, class Add>
RESPROJ_HD void back_planes(T *image, const joseph_ray<T> &r, T value, std::int64_t first,
                            std::int64_t stride, Add &&add) noexcept {
  const T v = value * r.step;
  for (std::int64_t p = first; p <= r.last_plane; p += stride)
    scatter<I>(image, r, p, v, add);
}

/// Non-TOF forward projection of LOR a -> b.
template <class T>
RESPROJ_HD T forward_lor(const image_grid<T> &g, const T *image, const T a[3],
                         const T b[3]) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  return forward_planes(image, r, r.first_plane, 1);
}

/// Non-TOF back projection of `value` along LOR a -> b.
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Add>
RESPROJ_HD void back_lor(const image_grid<T> &g, T *image, const T a[3], const T b[3],
                         T value, Add &&add) noexcept {
  const joseph_ray<T> r = make_joseph_ray(g, a, b);
  back_planes(image, r, value, r.first_plane, 1, add);
}

} // namespace math
RESPROJ_NAMESPACE_END
