/// @file
/// @brief CPU backend: non-TOF Joseph forward and back projection over a LOR
/// view, OpenMP-parallel over LORs (serial without OpenMP). Runs the same
/// per-LOR math (math/joseph.hpp) as the GPU backend.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/views.hpp"
#include "resproj/math/joseph.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

RESPROJ_NAMESPACE_BEGIN
namespace cpu {

/// How back projection accumulates into the shared image.
enum class back_accumulation {
  /// Every thread adds into the image with `omp atomic` (no extra memory).
  atomic,
  /// Every thread adds into its own zeroed copy of the image; the copies
  /// are summed at the end (one extra image per thread).
  thread_images,
  /// `thread_images` when the call has enough LORs to pay for zeroing and
  /// summing the copies, else `atomic` (see `detail::choose_accumulation`).
  automatic,
};

/// Options of the CPU projectors.
struct options {
  /// Accumulation of `back`. Per-thread images measured 1.6-3.9x faster
  /// than atomics on the reference problem with 2 threads (x86 float
  /// atomics are compare-and-swap loops), but each call zeroes and sums one
  /// image per extra thread: with many threads and small chunks (an OSEM
  /// subset of list-mode events) that costs more than the projection. The
  /// default picks per call.
  back_accumulation accumulation = back_accumulation::automatic;
  /// OpenMP threads; 0 = the OpenMP default.
  int num_threads = 0;
};

namespace detail {
template <class T> struct identity { using type = T; };
template <class T> using identity_t = typename identity<T>::type;

/// Plain accumulation (one writer per image copy). A named functor, not a
/// lambda: lambdas are constexpr, which nvcc rejects inside the
/// __host__ __device__ math when this header is compiled as CUDA.
struct plain_add {
  template <class T> void operator()(T *voxel, T amount) const { *voxel += amount; }
};

/// Accumulation shared by all threads.
struct atomic_add {
  template <class T> void operator()(T *voxel, T amount) const {
#if defined(_OPENMP)
#pragma omp atomic
#endif
    *voxel += amount;
  }
};

inline int thread_count(const options &opt) {
#if defined(_OPENMP)
  return opt.num_threads > 0 ? opt.num_threads : omp_get_max_threads();
#else
  (void)opt;
  return 1;
#endif
}

/// Runs `body(i)` for every LOR i in [0, n), OpenMP-parallel over LORs
/// (one thread below 1024 LORs: not worth waking the team). For calls whose
/// LORs write disjoint outputs (forward projections).
template <class Body> void for_each_lor(std::int64_t n, const options &opt, Body &&body) {
  const int threads = n < 1024 ? 1 : thread_count(opt);
  (void)threads;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
#endif
  for (std::int64_t i = 0; i < n; ++i)
    body(i);
}
/// Runs `per_lor(i, image, add)` for LORs i in [0, n) with the accumulation
/// strategy of `opt` (per-thread images, atomics, or serial below 1024
/// LORs); `add` is plain_add or atomic_add.
/// The accumulation `automatic` resolves to: per-thread images when the
/// call's scattered samples (about 4 x cbrt(voxels) per LOR) outnumber the
/// voxels the extra images make it zero and sum, else atomics.
inline back_accumulation choose_accumulation(back_accumulation requested, std::int64_t n,
                                             std::int64_t nv, int threads) {
  if (requested != back_accumulation::automatic)
    return requested;
  const double scattered = 4.0 * std::cbrt(double(nv)) * double(n);
  const double copied = 2.0 * double(threads - 1) * double(nv);
  return scattered >= copied ? back_accumulation::thread_images
                             : back_accumulation::atomic;
}

template <class T, class PerLor>
void run_back(T *img, std::int64_t nv, std::int64_t n, const options &opt,
              PerLor &&per_lor) {
  const int threads = n < 1024 ? 1 : thread_count(opt);
  if (threads == 1) {
    const plain_add add;
    for (std::int64_t i = 0; i < n; ++i)
      per_lor(i, img, add);
    return;
  }
  if (choose_accumulation(opt.accumulation, n, nv, threads) ==
      back_accumulation::thread_images) {
    std::vector<T> copies(std::size_t(nv) * std::size_t(threads - 1), T(0));
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
    {
#if defined(_OPENMP)
      const int tid = omp_get_thread_num();
#else
      const int tid = 0;
#endif
      T *mine = tid == 0 ? img : copies.data() + std::size_t(tid - 1) * std::size_t(nv);
      const plain_add add;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 64)
#endif
      for (std::int64_t i = 0; i < n; ++i)
        per_lor(i, mine, add);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
      for (std::int64_t v = 0; v < nv; ++v)
        for (int c = 0; c < threads - 1; ++c)
          img[v] += copies[std::size_t(c) * std::size_t(nv) + std::size_t(v)];
    }
    return;
  }
  const atomic_add add;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
#endif
  for (std::int64_t i = 0; i < n; ++i)
    per_lor(i, img, add);
}

/// Per-LOR body of `back`.
template <class T, class Lors> struct back_lor_body {
  math::image_grid<T> grid;
  Lors lors;
  const T *values;
  template <class Add> void operator()(std::int64_t i, T *img, const Add &add) const {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    math::back_lor(grid, img, a, b, values[i], add);
  }
};

} // namespace detail

/// Forward projection: `out[i]` = line integral of `image` along LOR i
/// (Joseph's method). Overwrites `out[0 .. lors.count)`.
/// @param image  image in host memory
/// @param lors   LORs in host memory
/// @param out    output, at least `lors.count` values
/// @param opt    thread count
/// @throws invalid_argument on a null pointer or a too-small `out`, before
///         anything is written.
/// Synchronous; thread-safe for distinct outputs.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward(image_view<const detail::identity_t<T>> image, const Lors &lors_in,
             span<T> out, const options &opt = {}) {
  const auto lors = lors_in.normalized();
  resproj::detail::check_image(image, "image");
  lors.check("lors");
  resproj::detail::check_span(out, lors.count, "out");
  const auto grid = math::image_grid<T>::from(image.geometry);
  const T *img = image.data;
  detail::for_each_lor(static_cast<std::int64_t>(lors.count), opt, [&](std::int64_t i) {
    T a[3], b[3];
    lors.load(std::size_t(i), a, b);
    out[std::size_t(i)] = math::forward_lor(grid, img, a, b);
  });
}

/// Back projection: adds `values[i]` times the weights of LOR i into
/// `image` (exact transpose of `forward`). Accumulates: zero the image first
/// for a plain back projection.
/// @param image   image in host memory, updated in place
/// @param lors    LORs in host memory
/// @param values  at least `lors.count` values
/// @param opt     threads and accumulation strategy
/// @throws invalid_argument on a null pointer or too few values, before
///         anything is written.
/// Synchronous; not thread-safe for the same image.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(image_view<T> image, const Lors &lors_in,
          span<const detail::identity_t<T>> values, const options &opt = {}) {
  const auto lors = lors_in.normalized();
  resproj::detail::check_image(image, "image");
  lors.check("lors");
  resproj::detail::check_span(values, lors.count, "values");
  const auto grid = math::image_grid<T>::from(image.geometry);
  detail::run_back(image.data, image.geometry.num_voxels(),
                   static_cast<std::int64_t>(lors.count), opt,
                   detail::back_lor_body<T, decltype(lors)>{grid, lors, values.data()});
}

} // namespace cpu
RESPROJ_NAMESPACE_END
