/// @file
/// @brief Projection operations as values: `op::non_tof`,
/// `op::tof_sinogram<T>` and `op::tof_listmode<T>`. Every executor (CPU,
/// GPU, host-LOR streamer, several GPUs, the compiled target) takes one as
/// the first argument of `forward` and `back`, and checks a call's
/// arguments with the one contract check below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace op {

/// Non-TOF projection: one value per LOR, the Joseph line integral.
struct non_tof {
  /// Values per LOR in a projection: 1.
  constexpr std::size_t values_per_lor() const noexcept { return 1; }
};

/// TOF sinogram projection: `tof.num_bins` values per LOR, laid out
/// `[lor][bin]`. Per-LOR `tof.sigmas` / `tof.center_offsets`, when given,
/// are indexed like the call's LORs and live where they do.
template <class T> struct tof_sinogram {
  tof_params<T> tof;

  tof_sinogram() = default;
  explicit tof_sinogram(const tof_params<T> &tof_) noexcept : tof(tof_) {}
  std::size_t values_per_lor() const noexcept {
    return std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
  }
};

/// TOF list-mode projection: one value per event, the TOF sinogram value of
/// the event's LOR at its bin `bins[i]` (0 for a bin outside [0, num_bins)).
/// `bins` is indexed like the call's LORs and lives where they do; it may
/// be left empty only where the LOR source carries the bins itself (packed
/// list-mode records on the host-LOR streamer).
template <class T> struct tof_listmode {
  tof_params<T> tof;
  span<const std::int16_t> bins;

  tof_listmode() = default;
  tof_listmode(const tof_params<T> &tof_, span<const std::int16_t> bins_) noexcept
      : tof(tof_), bins(bins_) {}
  explicit tof_listmode(const tof_params<T> &tof_) noexcept : tof(tof_) {}
  constexpr std::size_t values_per_lor() const noexcept { return 1; }
};

template <class T> tof_sinogram(const tof_params<T> &) -> tof_sinogram<T>;
template <class T> tof_listmode(const tof_params<T> &) -> tof_listmode<T>;
template <class T>
tof_listmode(const tof_params<T> &, span<const std::int16_t>) -> tof_listmode<T>;

} // namespace op

namespace detail {

template <class Op> struct is_operation : std::false_type {};
template <> struct is_operation<op::non_tof> : std::true_type {};
template <class T> struct is_operation<op::tof_sinogram<T>> : std::true_type {};
template <class T> struct is_operation<op::tof_listmode<T>> : std::true_type {};

/// The operation fits LORs of value type T (TOF parameters of the same
/// precision).
template <class Op, class T> struct operation_fits : std::false_type {};
template <class T> struct operation_fits<op::non_tof, T> : std::true_type {};
template <class T> struct operation_fits<op::tof_sinogram<T>, T> : std::true_type {};
template <class T> struct operation_fits<op::tof_listmode<T>, T> : std::true_type {};

/// Enables an executor's `forward` / `back` for an operation and a LOR
/// source of matching precision.
template <class Op, class Lors>
using if_projection =
    std::enable_if_t<is_operation<Op>::value && is_lor_source<Lors>::value &&
                     operation_fits<Op, typename Lors::value_type>::value>;

/// The value type of LOR source `Lors` (what images and values hold).
template <class Lors> using value_of = typename Lors::value_type;

/// Largest number of TOF bins list-mode accepts (bins are std::int16_t).
constexpr int max_listmode_tof_bins = 32767;

inline void check_values(std::size_t size, const void *data, std::size_t needed,
                         const char *name) {
  if (size < needed)
    throw_invalid(name, "too small: holds " + std::to_string(size) + " elements, needs " +
                            std::to_string(needed));
  if (needed > 0 && data == nullptr)
    throw_invalid(name, "null pointer with size " + std::to_string(size));
}

/// The operation's own checks for a call over `count` LORs.
inline void check_operation(const op::non_tof &, std::size_t) {}
template <class T> void check_operation(const op::tof_sinogram<T> &o, std::size_t count) {
  check_tof(o.tof, count);
}
/// `bins_in_source`: the LOR source carries the bins (then `o.bins` may be
/// empty).
template <class T>
void check_operation(const op::tof_listmode<T> &o, std::size_t count,
                     bool bins_in_source = false) {
  check_tof(o.tof, count);
  if (o.tof.num_bins > max_listmode_tof_bins)
    throw_invalid("tof.num_bins", "list-mode bins are 16-bit: at most " +
                                      std::to_string(max_listmode_tof_bins) + " (got " +
                                      std::to_string(o.tof.num_bins) + ")");
  if (bins_in_source && o.bins.empty())
    return;
  check_values(o.bins.size(), o.bins.data(), count, "bins");
}

/// The contract check every executor runs first: the image geometry in the
/// value type of the LORs (`check_geometry_in`), the LOR source, the
/// operation (TOF parameters, list-mode bins) and the size of the values
/// (`out` or `values`: `count * values_per_lor` elements). Executors add
/// only their residency checks (where each pointer lives) and, where the
/// arrays are host memory, checks of per-LOR values.
/// @throws invalid_argument naming the argument ("image.geometry.voxel_size[0]",
///         "lors.starts", "tof.sigma", "bins", "out", ...).
template <class Op, class Lors>
void check_projection(const Op &o, const image_geometry &geometry, const Lors &lors,
                      std::size_t data_size, const void *data, const char *data_name) {
  check_geometry_in<value_of<Lors>>(geometry, "image.geometry");
  lors.check("lors");
  check_operation(o, lors.count);
  check_values(data_size, data, lors.count * o.values_per_lor(), data_name);
}

/// Calls `f(pointer, name)` for every per-LOR array of the operation.
template <class F> void for_each_operation_region(const op::non_tof &, F &&) {}
template <class T, class F>
void for_each_operation_region(const op::tof_sinogram<T> &o, F &&f) {
  if (!o.tof.sigmas.empty())
    f(static_cast<const void *>(o.tof.sigmas.data()), "tof.sigmas");
  if (!o.tof.center_offsets.empty())
    f(static_cast<const void *>(o.tof.center_offsets.data()), "tof.center_offsets");
}
template <class T, class F>
void for_each_operation_region(const op::tof_listmode<T> &o, F &&f) {
  for_each_operation_region(op::tof_sinogram<T>(o.tof), f);
  if (!o.bins.empty())
    f(static_cast<const void *>(o.bins.data()), "bins");
}

/// The operation restricted to LORs `[first, first + n)` of a call (per-LOR
/// arrays offset accordingly; unchecked).
inline op::non_tof operation_part(const op::non_tof &o, std::size_t, std::size_t) {
  return o;
}
template <class T>
op::tof_sinogram<T> operation_part(const op::tof_sinogram<T> &o, std::size_t first,
                                   std::size_t n) {
  return op::tof_sinogram<T>(o.tof.subview(first, n));
}
template <class T>
op::tof_listmode<T> operation_part(const op::tof_listmode<T> &o, std::size_t first,
                                   std::size_t n) {
  return op::tof_listmode<T>(o.tof.subview(first, n),
                             o.bins.empty() ? o.bins : o.bins.subspan(first, n));
}

} // namespace detail
RESPROJ_NAMESPACE_END
