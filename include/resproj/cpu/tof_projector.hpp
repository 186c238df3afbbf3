/// @file
/// @brief CPU backend, TOF: sinogram and list-mode forward and back
/// projection (spec/projection.md, "TOF"), OpenMP-parallel over LORs
/// (serial without OpenMP). Runs the per-LOR math of
/// math/tof_projection.hpp, shared with the GPU backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/tof_projection.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

RESPROJ_NAMESPACE_BEGIN
namespace cpu {
namespace detail {

/// Largest number of TOF bins list-mode accepts (bins are std::int16_t).
constexpr int max_lm_tof_bins = 32767;

template <class I, class Lors, class T>
void check_tof_common(const image_view<I> &image, const Lors &lors,
                      const tof_params<T> &tof) {
  resproj::detail::check_image(image, "image");
  lors.check("lors");
  resproj::detail::check_tof(tof, lors.count);
}

template <class T> void check_lm_bins(const tof_params<T> &tof) {
  if (tof.num_bins > max_lm_tof_bins)
    resproj::detail::throw_invalid("tof.num_bins",
                                   "list-mode bins are 16-bit: at most " +
                                       std::to_string(max_lm_tof_bins) + " (got " +
                                       std::to_string(tof.num_bins) + ")");
}

/// Per-LOR body of back_tof_sino.
template <class T, class Lors> struct back_sino_lor {
  math::image_grid<T> grid;
  Lors lors;
  tof_params<T> tof;
  const T *values;
  template <class Add> void operator()(std::int64_t i, T *img, const Add &add) const {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    const auto tl = math::tof_lor_of(tof, std::size_t(i));
    math::back_tof_sino_lor(grid, img, a, b, tl,
                            values + std::size_t(i) * std::size_t(tof.num_bins), add);
  }
};

/// Per-LOR body of back_tof_lm.
template <class T, class Lors> struct back_lm_lor {
  math::image_grid<T> grid;
  Lors lors;
  tof_params<T> tof;
  const std::int16_t *bins;
  const T *values;
  template <class Add> void operator()(std::int64_t i, T *img, const Add &add) const {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    const auto tl = math::tof_lor_of(tof, std::size_t(i));
    math::back_tof_lm_lor(grid, img, a, b, tl, std::int64_t(bins[i]), values[i], add);
  }
};

} // namespace detail

/// TOF sinogram forward projection: `out[i * N + j]` = value of LOR i at
/// TOF bin j (N = `tof.num_bins`). Overwrites `out[0 .. lors.count * N)`.
/// @param image  image in host memory
/// @param lors   LORs in host memory
/// @param tof    TOF parameters; per-LOR arrays in host memory
/// @param out    output, at least `lors.count * N` values
/// @param opt    thread count
/// @throws invalid_argument naming the argument (null pointers, bad TOF
///         parameters, too-small `out`), before anything is written.
/// Synchronous; thread-safe for distinct outputs.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_sino(image_view<const detail::identity_t<T>> image, const Lors &lors_in,
                      const tof_params<detail::identity_t<T>> &tof, span<T> out,
                      const options &opt = {}) {
  const auto lors = lors_in.normalized();
  detail::check_tof_common(image, lors, tof);
  const std::size_t nb = std::size_t(tof.num_bins);
  resproj::detail::check_span(out, lors.count * nb, "out");
  const auto grid = math::image_grid<T>::from(image.geometry);
  const T *img = image.data;
  T *o = out.data();
  detail::for_each_lor(static_cast<std::int64_t>(lors.count), opt, [&](std::int64_t i) {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    const auto tl = math::tof_lor_of(tof, std::size_t(i));
    math::forward_tof_sino_lor(grid, img, a, b, tl, o + std::size_t(i) * nb);
  });
}

/// TOF sinogram back projection: adds, for every LOR i and bin j,
/// `values[i * N + j]` times the weights of (i, j) into `image` (exact
/// transpose of `forward_tof_sino`). Accumulates: zero the image first for
/// a plain back projection.
/// @param image   image in host memory, updated in place
/// @param lors    LORs in host memory
/// @param tof     TOF parameters; per-LOR arrays in host memory
/// @param values  at least `lors.count * N` values
/// @param opt     threads and accumulation strategy
/// @throws invalid_argument naming the argument, before anything is written.
/// Synchronous; not thread-safe for the same image.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(image_view<T> image, const Lors &lors_in,
                   const tof_params<detail::identity_t<T>> &tof,
                   span<const detail::identity_t<T>> values, const options &opt = {}) {
  const auto lors = lors_in.normalized();
  detail::check_tof_common(image, lors, tof);
  resproj::detail::check_span(values, lors.count * std::size_t(tof.num_bins), "values");
  const detail::back_sino_lor<T, decltype(lors)> body{
      math::image_grid<T>::from(image.geometry), lors, tof, values.data()};
  detail::run_back(image.data, image.geometry.num_voxels(),
                   static_cast<std::int64_t>(lors.count), opt, body);
}

/// TOF list-mode forward projection: `out[i]` = value of LOR i at TOF bin
/// `bins[i]`, equal to `forward_tof_sino`'s value at that LOR and bin (to
/// float rounding); 0 for a bin outside [0, N-1]. Visits only the planes
/// within reach of the bin. Overwrites `out[0 .. lors.count)`.
/// @param image  image in host memory
/// @param lors   LORs (events) in host memory
/// @param bins   TOF bin of each event, at least `lors.count`
/// @param tof    TOF parameters (N <= 32767); per-LOR arrays in host memory
/// @param out    output, at least `lors.count` values
/// @param opt    thread count
/// @throws invalid_argument naming the argument, before anything is written.
/// Synchronous; thread-safe for distinct outputs.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_lm(image_view<const detail::identity_t<T>> image, const Lors &lors_in,
                    span<const std::int16_t> bins,
                    const tof_params<detail::identity_t<T>> &tof, span<T> out,
                    const options &opt = {}) {
  const auto lors = lors_in.normalized();
  detail::check_tof_common(image, lors, tof);
  detail::check_lm_bins(tof);
  resproj::detail::check_span(bins, lors.count, "bins");
  resproj::detail::check_span(out, lors.count, "out");
  const auto grid = math::image_grid<T>::from(image.geometry);
  const T *img = image.data;
  const std::int16_t *bn = bins.data();
  T *o = out.data();
  detail::for_each_lor(static_cast<std::int64_t>(lors.count), opt, [&](std::int64_t i) {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    const auto tl = math::tof_lor_of(tof, std::size_t(i));
    o[i] = math::forward_tof_lm_lor(grid, img, a, b, tl, std::int64_t(bn[i]));
  });
}

/// TOF list-mode back projection: adds `values[i]` times the weights of
/// LOR i at bin `bins[i]` into `image` (exact transpose of
/// `forward_tof_lm`; events with a bin outside [0, N-1] add nothing).
/// Accumulates: zero the image first for a plain back projection.
/// @param image   image in host memory, updated in place
/// @param lors    LORs (events) in host memory
/// @param bins    TOF bin of each event, at least `lors.count`
/// @param tof     TOF parameters (N <= 32767); per-LOR arrays in host memory
/// @param values  at least `lors.count` values
/// @param opt     threads and accumulation strategy
/// @throws invalid_argument naming the argument, before anything is written.
/// Synchronous; not thread-safe for the same image.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(image_view<T> image, const Lors &lors_in, span<const std::int16_t> bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 span<const detail::identity_t<T>> values, const options &opt = {}) {
  const auto lors = lors_in.normalized();
  detail::check_tof_common(image, lors, tof);
  detail::check_lm_bins(tof);
  resproj::detail::check_span(bins, lors.count, "bins");
  resproj::detail::check_span(values, lors.count, "values");
  const detail::back_lm_lor<T, decltype(lors)> body{
      math::image_grid<T>::from(image.geometry), lors, tof, bins.data(), values.data()};
  detail::run_back(image.data, image.geometry.num_voxels(),
                   static_cast<std::int64_t>(lors.count), opt, body);
}

} // namespace cpu
RESPROJ_NAMESPACE_END
