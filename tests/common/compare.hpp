/// @file
/// @brief Comparing projector outputs with a float64 reference, dot
/// products for adjoint tests, and the bounds of docs/projection.md
/// "Accuracy". Standard library and GoogleTest only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace resproj_test {

/// Bounds per value type. `norm`: relative norm error against the float64
/// reference on LORs without decision flips; `adjoint`: relative adjoint
/// mismatch; `same_image`: relative difference of two back projections
/// that only sum in another order.
template <class T> struct bounds;
template <> struct bounds<float> {
  static constexpr double norm = 1e-5;
  static constexpr double adjoint = 1e-5;
  static constexpr double same_image = 1e-5;
};
template <> struct bounds<double> {
  static constexpr double norm = 1e-12;
  static constexpr double adjoint = 1e-12;
  static constexpr double same_image = 1e-13;
};

/// Fraction of LORs that may disagree with a float64-deciding reference by
/// a whole plane sample (spec: "at most 1e-4 of the LORs").
constexpr double flip_fraction = 1e-4;
/// A LOR whose relative difference from the reference exceeds this took
/// another discrete decision (one plane sample is 0.3-1.5% of a LOR of
/// positive values; rounding is ~1e-6).
constexpr double flip_threshold = 1e-3;

/// Prints `message` when the environment variable RESPROJ_TEST_VERBOSE is
/// set (comparison summaries, for tuning bounds).
inline void note(const std::string &message) {
  if (std::getenv("RESPROJ_TEST_VERBOSE") != nullptr)
    std::printf("  [note] %s\n", message.c_str());
}

/// Flips allowed among n LORs.
inline std::size_t allowed_flips(std::size_t n, double fraction = flip_fraction) {
  return std::size_t(std::floor(fraction * double(n)));
}

/// Dot product accumulated in double.
template <class A, class B> double dot(const A *a, const B *b, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    s += double(a[i]) * double(b[i]);
  return s;
}
template <class A, class B> double dot(const std::vector<A> &a, const std::vector<B> &b) {
  return dot(a.data(), b.data(), std::min(a.size(), b.size()));
}

/// ||a - b|| / ||b|| in double (0 when both are 0).
template <class A, class B> double rel_norm_diff(const A *a, const B *b, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}
template <class A, class B>
double rel_norm_diff(const std::vector<A> &a, const std::vector<B> &b) {
  EXPECT_EQ(a.size(), b.size());
  return rel_norm_diff(a.data(), b.data(), std::min(a.size(), b.size()));
}

/// |<Ax, y> - <x, A^T y>| / |<Ax, y>|.
inline double adjoint_mismatch(double ax_y, double x_aty) {
  return std::fabs(ax_y - x_aty) / std::fabs(ax_y);
}

/// Result of comparing one value per LOR with a reference.
struct lor_comparison {
  std::size_t n = 0;
  /// LORs with |out - ref| > flip_threshold * max(|out|, |ref|).
  std::vector<std::size_t> flipped;
  double rel_error_all = 0;     ///< ||out - ref|| / ||ref|| over every LOR
  double rel_error_kept = 0;    ///< the same over the LORs not flipped
  double max_rel_diff_kept = 0; ///< largest per-LOR relative difference kept
  std::size_t worst_kept = 0;   ///< LOR of max_rel_diff_kept
  std::size_t num_nonzero_ref = 0;

  std::string summary() const {
    std::ostringstream os;
    os.precision(3);
    os << n << " LORs (" << num_nonzero_ref
       << " non-zero in the reference): " << flipped.size()
       << " decision flips, rel. norm error " << rel_error_kept << " without them ("
       << rel_error_all << " with), worst kept LOR " << worst_kept << " at "
       << max_rel_diff_kept;
    return os.str();
  }
};

/// Compares `out` with `ref` LOR by LOR (see lor_comparison).
template <class T>
lor_comparison compare_lors(const T *out, const double *ref, std::size_t n,
                            double threshold = flip_threshold) {
  lor_comparison c;
  c.n = n;
  double num_all = 0, den_all = 0, num_kept = 0, den_kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double o = double(out[i]), r = ref[i];
    const double diff = o - r;
    const double scale = std::max(std::fabs(o), std::fabs(r));
    const double rel = scale > 0 ? std::fabs(diff) / scale : 0.0;
    if (r != 0)
      ++c.num_nonzero_ref;
    num_all += diff * diff;
    den_all += r * r;
    if (!(rel <= threshold)) { // NaN counts as flipped
      c.flipped.push_back(i);
      continue;
    }
    num_kept += diff * diff;
    den_kept += r * r;
    if (rel > c.max_rel_diff_kept) {
      c.max_rel_diff_kept = rel;
      c.worst_kept = i;
    }
  }
  c.rel_error_all = den_all > 0 ? std::sqrt(num_all / den_all) : std::sqrt(num_all);
  c.rel_error_kept = den_kept > 0 ? std::sqrt(num_kept / den_kept) : std::sqrt(num_kept);
  return c;
}
template <class T>
lor_comparison compare_lors(const std::vector<T> &out, const std::vector<double> &ref,
                            double threshold = flip_threshold) {
  EXPECT_EQ(out.size(), ref.size());
  return compare_lors(out.data(), ref.data(), std::min(out.size(), ref.size()),
                      threshold);
}

/// Passes when the flips are at most `fraction` of the LORs and the norm
/// error over the other LORs is below `norm_bound`. Also requires that the
/// reference is not trivially zero.
inline ::testing::AssertionResult within_bounds(const lor_comparison &c,
                                                double norm_bound,
                                                double fraction = flip_fraction) {
  const std::size_t allowed = allowed_flips(c.n, fraction);
  if (c.num_nonzero_ref < c.n / 10)
    return ::testing::AssertionFailure()
           << "test set-up: too few LORs hit the image: " << c.summary();
  if (c.flipped.size() > allowed)
    return ::testing::AssertionFailure()
           << c.flipped.size() << " decision flips, at most " << allowed << " allowed; "
           << c.summary();
  if (!(c.rel_error_kept < norm_bound))
    return ::testing::AssertionFailure() << "relative norm error " << c.rel_error_kept
                                         << " >= " << norm_bound << "; " << c.summary();
  return ::testing::AssertionSuccess() << c.summary();
}

/// Describes up to `max` flipped LORs (end points, value, reference).
template <class Lors, class T>
std::string describe_flips(const lor_comparison &c, const Lors &lors, const T *out,
                           const double *ref, std::size_t max = 5) {
  std::ostringstream os;
  os.precision(9);
  for (std::size_t k = 0; k < c.flipped.size() && k < max; ++k) {
    const std::size_t i = c.flipped[k];
    const auto a = lors.start(i), b = lors.end(i);
    os << "  LOR " << i << " (" << a[0] << ", " << a[1] << ", " << a[2] << ") -> ("
       << b[0] << ", " << b[1] << ", " << b[2] << "): " << double(out[i])
       << " vs reference " << ref[i] << "\n";
  }
  return os.str();
}

} // namespace resproj_test
