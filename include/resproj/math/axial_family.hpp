/// @file
/// @brief Axial LOR families (docs/all-lor-sensitivity.md): the LORs
/// (c1, r1 + k) - (c2, r2 + k), k = 0 .. K-1, of a scanner whose ring
/// spacing equals the voxel size along its axis are translates of each
/// other by k voxels. Their non-TOF back projection with attenuation
/// weights is one footprint added at the shifts where the weight changes
/// to a difference image, which a prefix sum along the axis turns into the
/// image. The one implementation of the per-family numbers, for every
/// backend. Standard library only.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/plane_pairs.hpp"
#include "resproj/math/support_box.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

/// What the family walk needs, all views (nothing owned), on `gp`: the
/// image grid with `pad` extra slices on both sides along the scanner axis
/// `ax`, so that the translates of a footprint and the taps that the image
/// grid leaves out at its ends stay in the grid.
/// - `mu`: attenuation image on `gp` (zero in the padding), or null (no
///   attenuation: every weight is 1).
/// - `support[col]`: nonzero where the column of voxels along `ax`
///   through `col` holds a nonzero `mu` (col: `column_of`).
/// - `run_first[j]`, `run_last[j]`: the first and last slice (index along
///   `ax` in `gp`) of the run of bitwise identical `mu` slices holding j.
template <class T> struct family_grid {
  image_grid<T> gp;
  int ax = 2;
  int pad = 2;
  const T *mu = nullptr;
  const unsigned char *support = nullptr;
  const std::int32_t *run_first = nullptr;
  const std::int32_t *run_last = nullptr;
  /// An index box on `gp` holding every column of nonzero `support`,
  /// unbounded along `ax` (the default: unbounded): the attenuation walk
  /// skips the planes whose taps all lie in other columns.
  index_box support_columns;

  /// True if `offset` and the axis' block `stride[ax] * shape[ax]` fit in
  /// 32 bits: the divisions below can then be 32-bit ones.
  RESPROJ_HD bool fits_32bit(std::int64_t offset) const noexcept {
    return offset >= 0 && offset <= 0xffffffffLL &&
           gp.stride[ax] * gp.shape[ax] <= 0xffffffffLL;
  }
  /// Slice index along `ax` of voxel `offset`.
  RESPROJ_HD std::int64_t slice_of(std::int64_t offset) const noexcept {
    if (fits_32bit(offset))
      return std::int64_t((std::uint32_t(offset) / std::uint32_t(gp.stride[ax])) %
                          std::uint32_t(gp.shape[ax]));
    return (offset / gp.stride[ax]) % gp.shape[ax];
  }
  /// `column_of` the voxel of indices (i0, i1, i2), without a division.
  RESPROJ_HD std::int64_t column_at(std::int64_t i0, std::int64_t i1,
                                    std::int64_t i2) const noexcept {
    return ax == 2 ? i0 * gp.shape[1] + i1
                   : (ax == 1 ? i0 * gp.shape[2] + i2 : i1 * gp.shape[2] + i2);
  }
  /// Column index of voxel `offset` (its index with the coordinate along
  /// `ax` removed: 0 .. num_voxels / shape[ax] - 1).
  RESPROJ_HD std::int64_t column_of(std::int64_t offset) const noexcept {
    const std::int64_t s = gp.stride[ax];
    if (fits_32bit(offset)) {
      const std::uint32_t o = std::uint32_t(offset), s32 = std::uint32_t(s);
      return std::int64_t((o / (s32 * std::uint32_t(gp.shape[ax]))) * s32 + o % s32);
    }
    return (offset / (s * gp.shape[ax])) * s + offset % s;
  }
};

/// The lanes that walk one ray together: lane `lane()` of `size()` takes
/// the planes first_plane + lane(), + size(), ...; `sum`, `min` and `max`
/// combine the lanes' partial results (every lane gets the same value).
/// `serial_lanes` is the group of one lane; a GPU backend supplies a warp.
struct serial_lanes {
  RESPROJ_HD int lane() const noexcept { return 0; }
  RESPROJ_HD int size() const noexcept { return 1; }
  template <class V> RESPROJ_HD V sum(V v) const noexcept { return v; }
  template <class V> RESPROJ_HD V min(V v) const noexcept { return v; }
  template <class V> RESPROJ_HD V max(V v) const noexcept { return v; }
};

/// Attenuation line integral of a ray of `f.gp` and the slice range
/// [`lo`, `hi`] of its taps (nonzero weight) in columns of nonzero `mu`;
/// `lo > hi` when it has none.
template <class T> struct attenuation_sample {
  T integral = 0;
  std::int64_t lo = 1, hi = 0;
};

/// Joseph forward projection of `f.mu` along `r` (a ray of `f.gp`), with
/// the slice range of its taps in the support of `mu`, walked by `lanes`.
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Lanes = serial_lanes>
RESPROJ_HD attenuation_sample<T> attenuation_walk(const family_grid<T> &f,
                                                  const joseph_ray<T> &r,
                                                  const Lanes &lanes = Lanes{}) noexcept {
  T acc = 0;
  std::int64_t lo = INT64_MAX, hi = -1;
  // Taps outside the support columns read 0 and record no slice: only the
  // planes that meet those columns, each lane keeping its own planes.
  std::int64_t first, last;
  planes_meeting_box(r, f.support_columns, first, last);
  std::int64_t start = r.first_plane + lanes.lane();
  if (start < first)
    start += (first - start + lanes.size() - 1) / lanes.size() * lanes.size();
  // The taps' slices and columns come from their indices (no division).
  const int pa = r.axis;
  for (std::int64_t p = start; p <= last; p += lanes.size()) {
    const bilinear_point<std::int64_t, T> q = bilinear_at<std::int64_t>(r, p);
    const std::int64_t base = p * r.stride_plane + q.iu * r.stride_u + q.iv * r.stride_v;
    for (int i = 0; i < 4; ++i) {
      if (q.weight[i] == T(0))
        continue;
      const std::int64_t a = i & 1, b = i >> 1;
      acc += q.weight[i] * f.mu[base + a * r.stride_u + b * r.stride_v];
      const std::int64_t iu = q.iu + a, iv = q.iv + b;
      const std::int64_t i0 = pa == 0 ? p : iu;
      const std::int64_t i1 = pa == 1 ? p : (pa == 0 ? iu : iv);
      const std::int64_t i2 = pa == 2 ? p : iv;
      if (f.support[f.column_at(i0, i1, i2)] != 0) {
        const std::int64_t z = f.ax == 0 ? i0 : (f.ax == 1 ? i1 : i2);
        lo = z < lo ? z : lo;
        hi = z > hi ? z : hi;
      }
    }
  }
  attenuation_sample<T> a;
  a.integral = lanes.sum(acc) * r.step;
  lo = lanes.min(lo);
  hi = lanes.max(hi);
  if (lo <= hi) {
    a.lo = lo;
    a.hi = hi;
  }
  return a;
}

namespace detail {
/// Adders that add two taps adjacent along the contiguous axis at once
/// declare `static constexpr bool adds_pairs = true` and a member
/// `pair(Acc *diff, std::int64_t o_lo, T w_lo, std::int64_t o_hi, T w_hi,
/// Acc v)` adding `v * w_lo` at `diff[o_lo]` and `v * w_hi` at
/// `diff[o_hi]` (o_hi = o_lo + 1 where both weights are nonzero; an offset
/// whose weight is 0 is not meaningful and must not be used).
template <class Add, class = void> struct adds_pairs : std::false_type {};
template <class Add>
struct adds_pairs<Add, std::enable_if_t<std::decay_t<Add>::adds_pairs>> : std::true_type {
};
} // namespace detail

/// Adds `amount` times the footprint of `r` (a ray of `f.gp`), shifted by
/// `shift` voxels along `f.ax`, to the difference image `diff` (on `f.gp`)
/// through `add(Acc* voxel, Acc value)` (or the adder's `pair` for taps
/// adjacent along the contiguous axis, see `detail::adds_pairs`, or its
/// `scatter_plane_pair` for a ray along the contiguous axis, see
/// `detail::scatters_plane_pairs`: lane i then takes the plane pairs i,
/// i + size, ...), walked by `lanes`.
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Acc, class Add, class Lanes = serial_lanes>
RESPROJ_HD void scatter_shifted(const family_grid<T> &f, const joseph_ray<T> &r,
                                std::int64_t shift, Acc amount, Acc *diff, Add &&add,
                                const Lanes &lanes = Lanes{}) noexcept {
  const std::int64_t delta = shift * f.gp.stride[f.ax];
  const Acc v = amount * Acc(r.step);
  if constexpr (detail::scatters_plane_pairs<Add>::value) {
    if (planes_contiguous(r)) { // the axis is the contiguous one: pair planes
      for (std::int64_t p = pair_start(r.first_plane, delta) + 2 * lanes.lane();
           p <= r.last_plane; p += 2 * lanes.size())
        add.template scatter_plane_pair<std::int64_t>(
            diff, r, p, p >= r.first_plane ? v : Acc(0),
            p + 1 <= r.last_plane ? v : Acc(0), delta);
      return;
    }
  }
  for (std::int64_t p = r.first_plane + lanes.lane(); p <= r.last_plane;
       p += lanes.size()) {
    const bilinear_stencil<std::int64_t, T> s = stencil_at<std::int64_t>(r, p);
    if constexpr (detail::adds_pairs<Add>::value) {
      if (r.stride_v == 1) { // taps (0, 2) and (1, 3) are neighbours in memory
        add.pair(diff, s.offset[0] + delta, s.weight[0], s.offset[2] + delta, s.weight[2],
                 v);
        add.pair(diff, s.offset[1] + delta, s.weight[1], s.offset[3] + delta, s.weight[3],
                 v);
        continue;
      }
    }
    for (int i = 0; i < 4; ++i)
      if (s.weight[i] != T(0))
        add(diff + s.offset[i] + delta, v * Acc(s.weight[i]));
  }
}

/// Work done for one family (for the statistics).
struct family_work {
  std::uint64_t attenuation_walks = 0; ///< forward walks through `mu`
  std::uint64_t scatter_walks = 0;     ///< footprints added to the difference image
};

/// The middle member of a family and the members sharing its weight:
/// members [`lo`, `hi`] have the weight `shared` (1 without `mu`); `ray`
/// is the middle member's (member `kr` = K / 2), whose footprint every
/// member's is, shifted. `ray.empty()`: the family misses the image.
template <class T, class Acc> struct family_head {
  joseph_ray<T> ray;
  int kr = 0, lo = 0, hi = -1;
  Acc shared = 1;
  bool walked = false; ///< whether an attenuation walk was taken

  /// True when every one of the `K` members has the weight `shared`: the
  /// family is then `shared` times the footprint added at shift `-kr` and
  /// subtracted at shift `K - kr`.
  RESPROJ_HD bool uniform(int K) const noexcept { return lo == 0 && hi == K - 1; }
};

/// The first step of `back_project_family`: the middle member's ray and
/// attenuation walk, and the members that share its weight (members whose
/// attenuation taps stay in one run of identical `mu` slices).
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Acc, class End, class Lanes = serial_lanes>
RESPROJ_HD family_head<T, Acc> walk_family_head(const family_grid<T> &f, int K, End &&end,
                                                const Lanes &lanes = Lanes{}) noexcept {
  family_head<T, Acc> h;
  h.kr = K / 2;
  h.hi = K - 1;
  T a[3], b[3];
  end(h.kr, a, b);
  h.ray = make_joseph_ray(f.gp, a, b);
  if (h.ray.empty() || f.mu == nullptr)
    return h; // its translates miss the box as well / every weight is 1
  const attenuation_sample<T> s = attenuation_walk(f, h.ray, lanes);
  h.walked = true;
  h.shared = Acc(exp(-double(s.integral)));
  if (s.lo <= s.hi) {
    const std::int64_t first = f.run_first[s.lo], last = f.run_last[s.lo];
    if (last >= s.hi) {
      const std::int64_t down = s.lo - first, up = last - s.hi;
      h.lo = int(h.kr - down > 0 ? h.kr - down : 0);
      h.hi = int(h.kr + up < K - 1 ? h.kr + up : K - 1);
    } else {
      h.lo = h.hi = h.kr;
    }
  }
  return h;
}

/// The second step of `back_project_family`: the weight as a step function
/// of the member, one footprint of `h.ray` added where it changes (members
/// outside [`h.lo`, `h.hi`] get their own attenuation walk). Needs
/// `!h.ray.empty()`. Returns the walks of this step.
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Acc, class End, class Add, class Lanes = serial_lanes>
RESPROJ_HD family_work back_project_members(const family_grid<T> &f, int K, End &&end,
                                            const family_head<T, Acc> &h, Acc *diff,
                                            Add &&add,
                                            const Lanes &lanes = Lanes{}) noexcept {
  family_work work;
  T a[3], b[3];
  Acc previous = 0;
  for (int k = 0; k <= K; ++k) {
    Acc w = 0;
    if (k < K && k >= h.lo && k <= h.hi) {
      w = h.shared;
    } else if (k < K) {
      end(k, a, b);
      const attenuation_sample<T> s =
          attenuation_walk(f, make_joseph_ray(f.gp, a, b), lanes);
      ++work.attenuation_walks;
      w = Acc(exp(-double(s.integral)));
    }
    if (w != previous) {
      scatter_shifted(f, h.ray, std::int64_t(k - h.kr), w - previous, diff, add, lanes);
      ++work.scatter_walks;
    }
    previous = w;
  }
  return work;
}

/// Back projects the family of `K` LORs `(a(k), b(k))`, k = 0 .. K-1, each
/// weighted by `exp(-attenuation)` (1 without `mu`), into the difference
/// image `diff` on `f.gp`. `end(k, a, b)` fills the end points (T[3]) of
/// member k, which must be the translate of member 0 by k voxels along
/// `f.ax`, inside the unpadded image box along `f.ax` (so that no member
/// is clipped along the axis). The footprint is walked at
/// the middle member; members whose attenuation taps stay in one run of
/// identical `mu` slices share its weight, the others get their own
/// forward walk (`walk_family_head`, then `back_project_members`). Exact
/// up to the rounding of the members' coordinates. Every walk is shared
/// by `lanes` (all of them take the same branches).
RESPROJ_EXEC_CHECK_DISABLE
template <class T, class Acc, class End, class Add, class Lanes = serial_lanes>
RESPROJ_HD family_work back_project_family(const family_grid<T> &f, int K, End &&end,
                                           Acc *diff, Add &&add,
                                           const Lanes &lanes = Lanes{}) noexcept {
  const family_head<T, Acc> h = walk_family_head<T, Acc>(f, K, end, lanes);
  if (h.ray.empty())
    return family_work{};
  family_work work = back_project_members(f, K, end, h, diff, add, lanes);
  work.attenuation_walks += h.walked ? 1 : 0;
  return work;
}

} // namespace math
RESPROJ_NAMESPACE_END
