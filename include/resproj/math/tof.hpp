/// @file
/// @brief TOF weights of one Joseph sample (docs/projection.md, "TOF"):
/// Gaussian integrated over each bin, truncated window, normalised over the
/// window. Shared by every backend.
#pragma once

#include <cstdint>

#include "resproj/core/config.hpp"
#include "resproj/math/fast_erfc.hpp"
#include "resproj/math/fp.hpp"
#include "resproj/math/joseph.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace math {

RESPROJ_HD inline float erfc_of(float x) { return erfcf(x); }
RESPROJ_HD inline double erfc_of(double x) { return erfc(x); }
RESPROJ_HD inline float ceil_of(float x) { return ceilf(x); }
RESPROJ_HD inline double ceil_of(double x) { return ceil(x); }

/// TOF constants of one LOR.
template <class T> struct tof_lor {
  T bin_width;      ///< w
  int num_bins;     ///< N
  T center_offset;  ///< delta
  T half_range;     ///< (N - 1) / 2
  T reach;          ///< n_sigma * sigma / w, in bins
  T inv_edge_scale; ///< 1 / (sqrt(2) sigma)
  /// Edge values from `fast_erfc` and the window's reciprocal from
  /// `approx_reciprocal` (float: far cheaper on the GPU, relative error
  /// ~1e-6) instead of the library erfc and an IEEE division. Off unless
  /// a caller opts in (the GPU float kernels do by default).
  bool fast_erfc = false;
};

template <class T>
RESPROJ_HD tof_lor<T> make_tof_lor(T bin_width, int num_bins, T sigma, T center_offset,
                                   T num_sigmas) noexcept {
  tof_lor<T> t;
  t.bin_width = bin_width;
  t.num_bins = num_bins;
  t.center_offset = center_offset;
  t.half_range = T(num_bins - 1) / T(2); // exact
  t.reach = mul_no_contract(num_sigmas, sigma) / bin_width;
  t.inv_edge_scale = T(1) / (T(1.4142135623730950488) * sigma);
  return t;
}

/// Signed distance of the sample on plane p from the midpoint of the
/// unclipped LOR, positive towards the end point. Uncontracted: it feeds
/// the window decision.
template <class T>
RESPROJ_HD T tof_position(const joseph_ray<T> &r, std::int64_t p) noexcept {
  const T t = r.t0 + mul_no_contract(T(p), r.dt);
  return mul_no_contract(t - T(0.5), r.length);
}

/// Fractional bin coordinate of position s: `(s - delta) / w + (N - 1)/2`.
template <class T> RESPROJ_HD T tof_bin_coordinate(const tof_lor<T> &t, T s) noexcept {
  return (s - t.center_offset) / t.bin_width + t.half_range;
}

/// The (unclipped) window of bins of the sample at position s:
/// `floor(t_p - reach) .. ceil(t_p + reach)`. The discrete decision,
/// taken without contraction. Bins are 32-bit (cheap conversions on the
/// GPU); coordinates beyond +-2^30 bins are clamped (such samples are
/// outside every window of a real TOF histogram anyway).
template <class T>
RESPROJ_HD void tof_window(const tof_lor<T> &t, T s, int &first, int &last) noexcept {
  const T limit = T(1 << 30);
  T lo = floor_of(tof_bin_coordinate(t, s) - t.reach);
  T hi = ceil_of(tof_bin_coordinate(t, s) + t.reach);
  lo = lo < -limit ? -limit : (lo > limit ? limit : lo);
  hi = hi < -limit ? -limit : (hi > limit ? limit : hi);
  first = int(lo);
  last = int(hi);
}

/// erfc(|x|): one evaluation per bin edge; differences of edges are formed
/// from it so that tails keep their accuracy (see `edge_difference`).
template <class T> RESPROJ_HD T edge_value(T x) noexcept { return erfc_of(abs_of(x)); }

/// erfc(|x|) with the LOR's choice of erfc (`tof_lor::fast_erfc`).
template <class T> RESPROJ_HD T edge_value(const tof_lor<T> &t, T x) noexcept {
  return t.fast_erfc ? fast_erfc(abs_of(x)) : erfc_of(abs_of(x));
}

/// 1 / total of a window, with the LOR's choice (`tof_lor::fast_erfc`:
/// the hardware reciprocal on the device, whose ~1 ulp is below the fast
/// edge values' error; the total is in (0, 2]).
template <class T> RESPROJ_HD T window_scale(const tof_lor<T> &t, T total) noexcept {
  return t.fast_erfc ? approx_reciprocal(total) : T(1) / total;
}

/// erf(a) - erf(b) for a >= b, from ga = erfc(|a|), gb = erfc(|b|):
/// both >= 0: erfc(b) - erfc(a); both <= 0: erfc(-a) - erfc(-b);
/// otherwise 2 - erfc(|a|) - erfc(|b|). No cancellation in the tails.
template <class T> RESPROJ_HD T edge_difference(T a, T ga, T b, T gb) noexcept {
  if (b >= T(0))
    return gb - ga;
  if (a <= T(0))
    return ga - gb;
  return (T(2) - ga) - gb;
}

/// Scaled coordinate of the lower edge of bin j for a sample at s:
/// `(s - e_j) / (sqrt(2) sigma)` with `e_j = (j - N/2) w + delta`.
/// Decreases with j.
template <class T>
RESPROJ_HD T edge_coordinate(const tof_lor<T> &t, T s, int j) noexcept {
  const T edge = (T(j) - t.half_range - T(0.5)) * t.bin_width + t.center_offset;
  return (s - edge) * t.inv_edge_scale;
}

/// Calls `f(j, weight_j)` for every bin j of the sample's window that lies
/// inside [0, N-1], in increasing j; weights are normalised over the whole
/// window (bins outside [0, N-1] are dropped after normalisation). Costs
/// m + 1 erfc evaluations for m bins inside: the total's two edges are the
/// outer edges of the loop whenever the window is not clipped, and their
/// values are reused (bit for bit the same numbers); a clipped window costs
/// one or two more.
template <class T, class F>
RESPROJ_HD void for_each_tof_weight(const tof_lor<T> &t, T s, F &&f) noexcept {
  int first, last;
  tof_window(t, s, first, last);
  const int lo = first < 0 ? 0 : first;
  const int hi = last > t.num_bins - 1 ? t.num_bins - 1 : last;
  if (lo > hi)
    return;
  // Total over the whole window: edges `first` and `last + 1`.
  const T x_first = edge_coordinate(t, s, first);
  const T x_end = edge_coordinate(t, s, last + 1);
  const T g_first = edge_value(t, x_first);
  const T g_end = edge_value(t, x_end);
  const T total = edge_difference(x_first, g_first, x_end, g_end);
  if (!(total > T(0)))
    return;
  const T scale = window_scale(t, total); // K_j / W = erf diff_j / erf diff
  T x = x_first, g = g_first;
  if (lo != first) {
    x = edge_coordinate(t, s, lo);
    g = edge_value(t, x);
  }
  for (int j = lo; j <= hi; ++j) {
    T x_next = x_end, g_next = g_end; // edge last + 1
    if (j != last) {
      x_next = edge_coordinate(t, s, j + 1);
      g_next = edge_value(t, x_next);
    }
    f(j, edge_difference(x, g, x_next, g_next) * scale);
    x = x_next;
    g = g_next;
  }
}

/// Weight of bin j for the sample at s (0 if j is outside the window or
/// outside [0, N-1]); equals the value `for_each_tof_weight` gives bin j.
template <class T>
RESPROJ_HD T tof_weight(const tof_lor<T> &t, T s, std::int64_t bin) noexcept {
  if (bin < 0 || bin > t.num_bins - 1)
    return T(0);
  const int j = int(bin);
  int first, last;
  tof_window(t, s, first, last);
  if (j < first || j > last)
    return T(0);
  const T x_first = edge_coordinate(t, s, first);
  const T x_end = edge_coordinate(t, s, last + 1);
  const T total =
      edge_difference(x_first, edge_value(t, x_first), x_end, edge_value(t, x_end));
  if (!(total > T(0)))
    return T(0);
  const T scale = window_scale(t, total); // as for_each_tof_weight, bit for bit
  const T xa = edge_coordinate(t, s, j), xb = edge_coordinate(t, s, j + 1);
  return edge_difference(xa, edge_value(t, xa), xb, edge_value(t, xb)) * scale;
}

/// True if the window of the sample on plane p holds bin j (the decision
/// `tof_weight` takes; bins outside [0, N-1] included).
template <class T>
RESPROJ_HD bool tof_window_holds(const joseph_ray<T> &r, const tof_lor<T> &t,
                                 std::int64_t p, std::int64_t j) noexcept {
  int first, last;
  tof_window(t, tof_position(r, p), first, last);
  return j >= first && j <= last;
}

/// Planes of `r` whose window holds bin j: from the first such plane to the
/// last (`tof_window_holds` is true at both ends; the planes between hold it
/// too, as the bin coordinate grows monotonically along the LOR, and
/// callers still take the decision per plane). Empty when `first > last`.
template <class T>
RESPROJ_HD void tof_plane_range(const joseph_ray<T> &r, const tof_lor<T> &t,
                                std::int64_t j, std::int64_t &first,
                                std::int64_t &last) noexcept {
  first = r.first_plane;
  last = r.last_plane;
  if (r.empty())
    return;
  // Bin j is in the window iff c - reach < j + 1 and c + reach > j - 1,
  // with c = (s - delta)/w + half and s = (t0 + p dt - 1/2) * length.
  // Solve for p in floating point and widen by one plane each side.
  const T c_lo = T(j) - T(1) - t.reach, c_hi = T(j) + T(1) + t.reach;
  const T s_lo = (c_lo - t.half_range) * t.bin_width + t.center_offset;
  const T s_hi = (c_hi - t.half_range) * t.bin_width + t.center_offset;
  const T k = r.dt * r.length; // ds/dp
  if (k == T(0))
    return;
  T p_a = ((s_lo / r.length + T(0.5)) - r.t0) / r.dt;
  T p_b = ((s_hi / r.length + T(0.5)) - r.t0) / r.dt;
  if (p_a > p_b) {
    const T tmp = p_a;
    p_a = p_b;
    p_b = tmp;
  }
  const T lo_plane = floor_of(p_a) - T(1), hi_plane = ceil_of(p_b) + T(1);
  if (lo_plane > T(last) || hi_plane < T(first)) {
    first = 1;
    last = 0;
    return;
  }
  if (lo_plane > T(first))
    first = std::int64_t(lo_plane);
  if (hi_plane < T(last))
    last = std::int64_t(hi_plane);
  // Trim the widened ends to the planes whose window holds the bin: the
  // planes dropped have weight 0 for j, so no value changes.
  while (first <= last && !tof_window_holds(r, t, first, j))
    ++first;
  while (last >= first && !tof_window_holds(r, t, last, j))
    --last;
}

} // namespace math
RESPROJ_NAMESPACE_END
