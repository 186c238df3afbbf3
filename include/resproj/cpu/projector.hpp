/// @file
/// @brief CPU backend: forward and back projection for every operation
/// (`op::non_tof`, `op::tof_sinogram`, `op::tof_listmode`) and every LOR
/// source in host memory, OpenMP-parallel over LORs (serial without
/// OpenMP). One call shape, as on the GPU:
///
///     cpu::forward(operation, image, lors, out[, options]);
///     cpu::back(operation, image, lors, values[, options]);
///     cpu::back(operation, fixed_point_image, lors, values[, options]);
///
/// The last form is the reproducible back projection (docs/projection.md).
/// Runs the same per-LOR math (math/joseph.hpp, math/tof_projection.hpp)
/// as the GPU backend.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/fixed_point_image.hpp"
#include "resproj/math/fixed_point.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/math/tof_projection.hpp"

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

/// Integer adds into a fixed-point accumulator, modulo 2^64 (as the GPU's
/// unsigned atomics): plain (one writer) ...
struct wrapping_add {
  void operator()(std::int64_t *element, std::int64_t q) const {
    *element = static_cast<std::int64_t>(static_cast<std::uint64_t>(*element) +
                                         static_cast<std::uint64_t>(q));
  }
};
/// ... and shared by all threads.
struct atomic_wrapping_add {
  void operator()(std::int64_t *element, std::int64_t q) const {
    std::uint64_t *u = reinterpret_cast<std::uint64_t *>(element);
    const std::uint64_t d = static_cast<std::uint64_t>(q);
#if defined(_OPENMP)
#pragma omp atomic
#endif
    *u += d;
  }
};

/// Where `run_back` accumulates: the element type (of the accumulator and
/// its per-thread copies), the image pointer the per-LOR math gets, plain
/// and shared (atomic) adders, the sum of two elements. Here: the T image.
template <class T> struct image_accumulation {
  using element = T;
  T *image(element *data) const { return data; }
  plain_add plain(element *) const { return {}; }
  atomic_add shared(element *) const { return {}; }
  static void sum_into(element &a, element b) { a += b; }
};

/// A fixed-point accumulator (math::fixed_point_add). The math gets `base`
/// (the accumulator's storage viewed as T, never dereferenced) and voxel
/// pointers relative to it are mapped onto the array being added into.
template <class T> struct fixed_point_accumulation {
  using element = std::int64_t;
  T *base;
  T scale;
  T *image(element *) const { return base; }
  math::fixed_point_add<T, wrapping_add> plain(element *data) const {
    return {base, data, scale, {}};
  }
  math::fixed_point_add<T, atomic_wrapping_add> shared(element *data) const {
    return {base, data, scale, {}};
  }
  static void sum_into(element &a, element b) { wrapping_add{}(&a, b); }
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

/// Runs `per_lor(i, image, add)` for LORs i in [0, n) with the accumulation
/// strategy of `opt` (per-thread copies, atomics, or serial below 1024
/// LORs), adding into `data` (`nv` elements) through the policy `acc`.
template <class Acc, class PerLor>
void run_back(const Acc &acc, typename Acc::element *data, std::int64_t nv,
              std::int64_t n, const options &opt, PerLor &&per_lor) {
  using E = typename Acc::element;
  const int threads = n < 1024 ? 1 : thread_count(opt);
  if (threads == 1) {
    const auto add = acc.plain(data);
    for (std::int64_t i = 0; i < n; ++i)
      per_lor(i, acc.image(data), add);
    return;
  }
  if (choose_accumulation(opt.accumulation, n, nv, threads) ==
      back_accumulation::thread_images) {
    std::vector<E> copies(std::size_t(nv) * std::size_t(threads - 1), E(0));
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
    {
#if defined(_OPENMP)
      const int tid = omp_get_thread_num();
#else
      const int tid = 0;
#endif
      E *mine = tid == 0 ? data : copies.data() + std::size_t(tid - 1) * std::size_t(nv);
      const auto add = acc.plain(mine);
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 64)
#endif
      for (std::int64_t i = 0; i < n; ++i)
        per_lor(i, acc.image(mine), add);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
      for (std::int64_t v = 0; v < nv; ++v)
        for (int c = 0; c < threads - 1; ++c)
          Acc::sum_into(data[v],
                        copies[std::size_t(c) * std::size_t(nv) + std::size_t(v)]);
    }
    return;
  }
  const auto add = acc.shared(data);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads)
#endif
  for (std::int64_t i = 0; i < n; ++i)
    per_lor(i, acc.image(data), add);
}

/// Per-LOR forward values of each operation: `out` holds the LOR's
/// `values_per_lor` values.
template <class T, class Lors>
void forward_lor(const op::non_tof &, const math::image_grid<T> &grid, const T *img,
                 const Lors &lors, std::size_t i, T *out) {
  T a[3], b[3];
  lors.load(i, a, b);
  *out = math::forward_lor(grid, img, a, b);
}
template <class T, class Lors>
void forward_lor(const op::tof_sinogram<T> &o, const math::image_grid<T> &grid,
                 const T *img, const Lors &lors, std::size_t i, T *out) {
  T a[3], b[3];
  lors.load(i, a, b);
  math::forward_tof_sino_lor(grid, img, a, b, math::tof_lor_of(o.tof, i), out);
}
template <class T, class Lors>
void forward_lor(const op::tof_listmode<T> &o, const math::image_grid<T> &grid,
                 const T *img, const Lors &lors, std::size_t i, T *out) {
  T a[3], b[3];
  lors.load(i, a, b);
  *out = math::forward_tof_lm_lor(grid, img, a, b, math::tof_lor_of(o.tof, i),
                                  std::int64_t(o.bins[i]));
}

/// Per-LOR back projection of each operation: adds the LOR's
/// `values_per_lor` values (at `values`) times its weights through `add`.
template <class T, class Lors, class Add>
void back_lor(const op::non_tof &, const math::image_grid<T> &grid, T *img,
              const Lors &lors, std::size_t i, const T *values, const Add &add) {
  T a[3], b[3];
  lors.load(i, a, b);
  math::back_lor(grid, img, a, b, *values, add);
}
template <class T, class Lors, class Add>
void back_lor(const op::tof_sinogram<T> &o, const math::image_grid<T> &grid, T *img,
              const Lors &lors, std::size_t i, const T *values, const Add &add) {
  T a[3], b[3];
  lors.load(i, a, b);
  math::back_tof_sino_lor(grid, img, a, b, math::tof_lor_of(o.tof, i), values, add);
}
template <class T, class Lors, class Add>
void back_lor(const op::tof_listmode<T> &o, const math::image_grid<T> &grid, T *img,
              const Lors &lors, std::size_t i, const T *values, const Add &add) {
  T a[3], b[3];
  lors.load(i, a, b);
  math::back_tof_lm_lor(grid, img, a, b, math::tof_lor_of(o.tof, i),
                        std::int64_t(o.bins[i]), *values, add);
}

/// Per-LOR body of `back` (a named functor, not a lambda: lambdas are
/// constexpr, which nvcc rejects inside the __host__ __device__ math).
template <class T, class Op, class Lors> struct back_lor_body {
  Op operation;
  math::image_grid<T> grid;
  Lors lors;
  const T *values;
  template <class Add> void operator()(std::int64_t i, T *img, const Add &add) const {
    const std::size_t k = std::size_t(i);
    back_lor(operation, grid, img, lors, k, values + k * operation.values_per_lor(), add);
  }
};

/// Per-LOR values of the operation, which the CPU backend can read (host
/// memory): per-LOR TOF sigmas and centre offsets.
inline void check_operation_values(const op::non_tof &, std::size_t) {}
template <class T>
void check_operation_values(const op::tof_sinogram<T> &o, std::size_t count) {
  resproj::detail::check_tof_values(o.tof, count);
}
template <class T>
void check_operation_values(const op::tof_listmode<T> &o, std::size_t count) {
  resproj::detail::check_tof_values(o.tof, count);
}

/// Detector indices of sources that have them (`check_indices`: detector
/// pairs, list-mode records), against their table.
template <class Lors, class = void> struct has_indices : std::false_type {};
template <class Lors>
struct has_indices<Lors, std::void_t<decltype(std::declval<const Lors &>().check_indices(
                             static_cast<const char *>(nullptr)))>> : std::true_type {};

/// Checks a CPU projection call before anything is written: a non-null
/// image, the shared contract, then what only host memory lets the CPU
/// read: per-LOR TOF values and detector indices.
template <class T, class Op, class Lors>
void check_cpu_projection(const Op &o, const image_view<T> &image, const Lors &lors,
                          std::size_t data_size, const void *data,
                          const char *data_name) {
  resproj::detail::check_image(image, "image");
  resproj::detail::check_projection(o, image.geometry, lors, data_size, data, data_name);
  check_operation_values(o, lors.count);
  if constexpr (has_indices<Lors>::value)
    lors.check_indices("lors");
}

} // namespace detail

/// Forward projection: for every LOR of `lors`, the operation's values
/// (`op::non_tof`, `op::tof_listmode`: one per LOR; `op::tof_sinogram`:
/// `tof.num_bins` per LOR, `[lor][bin]`). Overwrites
/// `out[0 .. count * values_per_lor)`.
/// @param operation  `op::non_tof{}`, `op::tof_sinogram{tof}` or
///                   `op::tof_listmode{tof, bins}`; per-LOR TOF arrays and
///                   bins in host memory
/// @param image      image in host memory
/// @param lors       LOR source in host memory
/// @param out        output
/// @param opt        thread count
/// @throws invalid_argument naming the argument (null pointers, a geometry
///         that does not hold in T, bad TOF parameters or per-LOR TOF
///         values, detector indices outside the table, too-small arrays),
///         before anything is written.
/// Synchronous; thread-safe for distinct outputs.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void forward(const Op &operation, image_view<const resproj::detail::value_of<Lors>> image,
             const Lors &lors_in, span<resproj::detail::value_of<Lors>> out,
             const options &opt = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto lors = lors_in.normalized();
  detail::check_cpu_projection(operation, image, lors, out.size(), out.data(), "out");
  const auto grid = math::image_grid<T>::from(image.geometry);
  const std::size_t stride = operation.values_per_lor();
  detail::for_each_lor(static_cast<std::int64_t>(lors.count), opt, [&](std::int64_t i) {
    detail::forward_lor(operation, grid, image.data, lors, std::size_t(i),
                        out.data() + std::size_t(i) * stride);
  });
}

/// Back projection: adds the transpose of `forward` applied to `values`
/// into `image`. Accumulates: zero the image first for a plain back
/// projection.
/// @param operation  as `forward`
/// @param image      image in host memory, updated in place
/// @param lors       LOR source in host memory
/// @param values     `count * values_per_lor` values
/// @param opt        threads and accumulation strategy
/// @throws invalid_argument naming the argument, before anything is written.
/// Synchronous; not thread-safe for the same image.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const Op &operation, image_view<resproj::detail::value_of<Lors>> image,
          const Lors &lors_in, span<const resproj::detail::value_of<Lors>> values,
          const options &opt = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto lors = lors_in.normalized();
  detail::check_cpu_projection(operation, image, lors, values.size(), values.data(),
                               "values");
  const detail::back_lor_body<T, Op, decltype(lors)> body{
      operation, math::image_grid<T>::from(image.geometry), lors, values.data()};
  detail::run_back(detail::image_accumulation<T>{}, image.data,
                   image.geometry.num_voxels(), static_cast<std::int64_t>(lors.count),
                   opt, body);
}

/// Reproducible back projection: adds the transpose of `forward` applied
/// to `values` into the fixed-point accumulator `image`, each contribution
/// (the plain `back`'s amount) rounded to its resolution 2^-e. Integer adds
/// make the bits independent of the thread count, the accumulation strategy
/// and how the LORs are split into calls. Read it with `image.add_to` /
/// `to_image`. Voxels and contributions must stay within +-2^(63 - e):
/// nothing checks it.
/// @param operation  as `forward`
/// @param image      fixed-point accumulator, updated in place
/// @param lors       LOR source in host memory
/// @param values     `count * values_per_lor` values
/// @param opt        threads and accumulation strategy (same bits for all)
/// @throws invalid_argument naming the argument, before anything is written.
/// Synchronous; not thread-safe for the same accumulator.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const Op &operation, fixed_point_image<resproj::detail::value_of<Lors>> &image,
          const Lors &lors_in, span<const resproj::detail::value_of<Lors>> values,
          const options &opt = {}) {
  using T = resproj::detail::value_of<Lors>;
  const auto lors = lors_in.normalized();
  // The accumulator's storage as T: the math only forms voxel pointers.
  const image_view<T> base(reinterpret_cast<T *>(image.data()), image.geometry());
  detail::check_cpu_projection(operation, base, lors, values.size(), values.data(),
                               "values");
  const detail::back_lor_body<T, Op, decltype(lors)> body{
      operation, math::image_grid<T>::from(image.geometry()), lors, values.data()};
  const detail::fixed_point_accumulation<T> acc{
      base.data, math::exact_power_of_two<T>(image.exponent())};
  detail::run_back(acc, image.data(), image.geometry().num_voxels(),
                   static_cast<std::int64_t>(lors.count), opt, body);
}

} // namespace cpu
RESPROJ_NAMESPACE_END
