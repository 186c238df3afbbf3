/// @file
/// @brief Forward and back projections (non-TOF, TOF sinogram, TOF
/// list-mode) over LORs split across the devices of a `replicated_image`.
///
/// LORs are given as one LOR source per device (`std::vector<Lors>`, in the
/// set's order), in one of two ways (`multi_options::input`):
///  - `lor_input::replicated` (default): every device's source describes the
///    same LORs (a `sinogram_source` or `detector_pairs` with the tables on
///    that device, or a full copy of the end points); the library gives
///    device d the range of LORs proportional to `weights[d]`.
///  - `lor_input::shares`: source d holds device d's own LORs (events or end
///    points resident on that device); the call's LOR order is the
///    concatenation of the shares in device order.
/// Per-LOR arrays (`out`, `values`, `bins`) are either one array for the
/// whole call (on any device of the set, used by the other devices through
/// peer access) or one per device, on that device: for replicated input
/// indexed like the whole call (device d uses its range), for shares indexed
/// like device d's share. Per-LOR TOF arrays (`tof.sigmas`, ...) are indexed
/// like the whole call and must be reachable from every device. When a call
/// shares an array between devices, it orders the devices' streams against
/// each other before and after its work (event waits, the host never
/// blocks): a shared input may come from work on any of the streams, and a
/// shared output is complete in stream order on every stream. Per-device
/// arrays keep the devices independent.
///
/// Every call validates all arguments for all devices before enqueueing
/// anything, then enqueues each device's part on its stream and returns:
/// no allocation, no synchronisation. Back projections accumulate into each
/// device's replica; sum them with `replica_reducer` (multi_device_reduce.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/tof_projector.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// How the per-device LOR sources of a multi-device call are meant.
enum class lor_input {
  replicated, ///< every source describes the same LORs; the library splits
  shares      ///< source d holds device d's own LORs
};

/// Options of a multi-device projection.
struct multi_options {
  lor_input input = lor_input::replicated;
  /// Relative share of each device for replicated input (empty: equal).
  std::vector<double> weights;
  /// TOF kernel variant of every TOF projection (see tof_kernel_options).
  tof_kernel_options tof_variant;
};

namespace detail {

/// Throws unless `pointer` is usable by kernels on entry `i` of `set`: device
/// memory of that device, managed memory, or memory of a device of the set
/// that entry i has peer access to.
inline void require_reachable(const device_set &set, int i, const void *pointer,
                              const std::string &name) {
  if (pointer == nullptr)
    return;
  const pointer_info info = query_pointer(pointer);
  if (!info.device_accessible)
    resproj::detail::throw_invalid(name, "points to host memory, not device memory");
  if (info.managed || info.device == set.device(i))
    return;
  const int j = set.index_of(info.device);
  if (j < 0)
    resproj::detail::throw_invalid(name, "points to memory on device " +
                                             std::to_string(info.device) +
                                             ", which is not in the device set");
  if (!set.peer_access(i, j))
    resproj::detail::throw_invalid(
        name, "points to memory on device " + std::to_string(info.device) +
                  ", which device " + std::to_string(set.device(i)) +
                  " cannot access (no peer access); pass one array per device");
}

/// One device's part of a multi-device call.
template <class T, class Src> struct part_call {
  const device_set *set = nullptr;
  int index = 0;       ///< entry in the set
  lor_range lors;      ///< LORs of this device, in its source
  std::size_t offset;  ///< position of the part's first LOR in the call
  std::size_t total;   ///< LORs of the whole call
  lor_input input;     ///< how the sources are meant
  bool check_pointers; ///< the caller's launch_options::check_pointers
  device_image_view<const T> image;
  Src src;            ///< the part's LORs
  launch_options opt; ///< the part's options (pointers already checked)
  stream_ref stream;
  /// Set when the call uses an array shared by several devices (one `out`
  /// or `values` for the whole call, per-LOR TOF arrays): the devices' streams
  /// are then ordered against each other before and after the call.
  bool *shares_arrays = nullptr;

  /// The part's slice of a per-LOR array list (one shared array or one per
  /// device; see the file comment), `stride` values per LOR, checked for
  /// size and (with check_pointers) reachability.
  template <class U>
  span<U> slice(const std::vector<span<U>> &arrays, std::size_t stride,
                const char *name) const {
    const std::size_t n = std::size_t(set->size());
    std::string label(name);
    span<U> a;
    std::size_t first = offset, needed = total;
    if (arrays.size() == 1) {
      a = arrays[0];
      if (n > 1)
        *shares_arrays = true;
    } else if (arrays.size() == n) {
      label += "[" + std::to_string(index) + "]";
      a = arrays[std::size_t(index)];
      if (input == lor_input::shares) {
        first = 0;
        needed = lors.count;
      }
    } else {
      resproj::detail::throw_invalid(
          name, "has " + std::to_string(arrays.size()) +
                    " arrays; pass one for the whole call or one per device (" +
                    std::to_string(n) + ")");
    }
    if (a.size() < needed * stride)
      resproj::detail::throw_invalid(
          label, "too small: holds " + std::to_string(a.size()) + " elements, needs " +
                     std::to_string(needed * stride));
    if (needed > 0 && a.data() == nullptr)
      resproj::detail::throw_invalid(label, "null pointer");
    if (check_pointers && lors.count > 0)
      require_reachable(*set, index, a.data(), label);
    return a.subspan(first * stride, lors.count * stride);
  }

  /// The part's TOF parameters (per-LOR arrays offset to the part).
  tof_params<T> tof(const tof_params<T> &all) const {
    for (const span<const T> *s : {&all.sigmas, &all.center_offsets}) {
      const char *name = s == &all.sigmas ? "tof.sigmas" : "tof.center_offsets";
      if (s->empty())
        continue;
      if (set->size() > 1)
        *shares_arrays = true;
      if (s->size() < total)
        resproj::detail::throw_invalid(name,
                                       "too small: holds " + std::to_string(s->size()) +
                                           " values, needs " + std::to_string(total));
      if (check_pointers && lors.count > 0)
        require_reachable(*set, index, s->data(), name);
    }
    return all.subview(offset, lors.count);
  }
};

/// Plans the parts of a call over `lors` (one source per device) and runs
/// `f(part, enqueue)` for every device with LORs: first with `enqueue ==
/// false` for every device (checks only), then with `true`.
template <class T, class Lors, class F>
void run_parts(const replicated_image<T> &image, const std::vector<Lors> &lors,
               const launch_options &opt, const multi_options &m,
               const std::vector<stream_ref> &streams, F &&f) {
  const device_set &set = image.devices();
  const int n = set.size();
  check_streams(set.devices(), streams);
  if (lors.size() != std::size_t(n))
    resproj::detail::throw_invalid("lors", "has " + std::to_string(lors.size()) +
                                               " sources for " + std::to_string(n) +
                                               " devices (one per device)");
  using src_t = decltype(lors[0].normalized());
  std::vector<src_t> sources;
  for (int i = 0; i < n; ++i) {
    const std::string name = "lors[" + std::to_string(i) + "]";
    sources.push_back(lors[std::size_t(i)].normalized());
    sources.back().check(name.c_str());
    if (opt.check_pointers && sources.back().count > 0)
      sources.back().for_each_region([&](const void *p, const char *region) {
        // region is "lors.<member>"
        require_device_pointer(p, set.device(i), (name + (region + 4)).c_str());
      });
  }
  std::vector<lor_range> ranges(static_cast<std::size_t>(n));
  std::vector<std::size_t> offsets(std::size_t(n), 0);
  std::size_t total = 0;
  std::size_t granule = 1;
  if (m.input == lor_input::replicated) {
    total = sources[0].count;
    for (int i = 1; i < n; ++i)
      if (sources[std::size_t(i)].count != total)
        resproj::detail::throw_invalid(
            "lors", "replicated sources differ in LOR count (" + std::to_string(total) +
                        " on entry 0, " + std::to_string(sources[std::size_t(i)].count) +
                        " on entry " + std::to_string(i) + ")");
    (void)make_lor_order(opt, total); // options.rows must divide the count
    if (opt.rows > 1 && total > 0)
      granule = total / opt.rows;
    ranges = split_lors(total, n, m.weights, granule);
    for (int i = 0; i < n; ++i)
      offsets[std::size_t(i)] = ranges[std::size_t(i)].first;
  } else {
    if (!m.weights.empty())
      resproj::detail::throw_invalid("weights", "apply to replicated input only");
    for (int i = 0; i < n; ++i) {
      ranges[std::size_t(i)] = lor_range{0, sources[std::size_t(i)].count};
      offsets[std::size_t(i)] = total;
      total += sources[std::size_t(i)].count;
    }
  }
  bool shares_arrays = false;
  std::vector<part_call<T, src_t>> parts;
  for (int i = 0; i < n; ++i) {
    const lor_range r = ranges[std::size_t(i)];
    if (r.count == 0)
      continue;
    part_call<T, src_t> p{&set,
                          i,
                          r,
                          offsets[std::size_t(i)],
                          total,
                          m.input,
                          opt.check_pointers,
                          image.view(i),
                          sources[std::size_t(i)].subview(r.first, r.count),
                          opt,
                          streams[std::size_t(i)],
                          &shares_arrays};
    p.opt.check_pointers = false; // checked here, against the right devices
    if (m.input == lor_input::replicated && opt.rows > 1)
      p.opt.rows = r.count / granule;
    parts.push_back(p);
  }
  for (const auto &p : parts)
    f(p, false);
  // A shared array is written or read by every device: its producer's work
  // (on any stream) comes first, and the whole result is complete on every
  // stream afterwards.
  if (shares_arrays)
    image.order_streams(streams);
  for (const auto &p : parts)
    f(p, true);
  if (shares_arrays)
    image.order_streams(streams);
}

/// A replica as a writable view (the multi-device back projections take the
/// image by non-const reference).
template <class T> device_image_view<T> writable(const device_image_view<const T> &v) {
  return device_image_view<T>(const_cast<T *>(v.data), v.geometry, v.device);
}

} // namespace detail

/// Forward projection over LORs split across the devices of `image`: each
/// device projects its part against its replica into its part of `out`.
/// @param image    the replicated image (every replica holds the image)
/// @param lors     one LOR source per device (see the file comment)
/// @param out      one output for the whole call or one per device
/// @param opt      thread-to-LOR mapping; `rows` refers to the whole call
///                 (replicated input: parts are whole rows) or to each share
/// @param streams  one stream per device, in the set's order
/// @param m        input kind and per-device weights
/// @throws invalid_argument naming the argument ("lors[1].detectors",
///         "out[0]", "streams", "weights", ...) before anything is enqueued.
/// Asynchronous on every stream; no allocation.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward(const replicated_image<T> &image, const std::vector<Lors> &lors,
             const std::vector<span<T>> &out, const launch_options &opt,
             const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<T> o = p.slice(out, 1, "out");
    if (enqueue)
      forward<T>(p.image, p.src, o, p.opt, p.stream);
    else
      detail::check_projection<T>(p.image, p.src, o.data(), o.size(), "out", p.opt,
                                  p.stream);
  });
}

/// Back projection over LORs split across the devices: each device adds its
/// part into its own replica (zero the replicas first for a plain back
/// projection); the replicas then hold partial sums until
/// `replica_reducer::sum`. Arguments and throws as the multi-device
/// `forward` ("values" instead of "out"). Asynchronous; no allocation.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back(replicated_image<T> &image, const std::vector<Lors> &lors,
          const std::vector<span<const detail::identity_t<T>>> &values,
          const launch_options &opt, const std::vector<stream_ref> &streams,
          const multi_options &m = {}) {
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<const T> v = p.slice(values, 1, "values");
    if (enqueue)
      back<T>(detail::writable(p.image), p.src, v, p.opt, p.stream);
    else
      detail::check_projection<T>(p.image, p.src, v.data(), v.size(), "values", p.opt,
                                  p.stream);
  });
}

/// TOF sinogram forward projection split across the devices (`out` holds
/// `tof.num_bins` values per LOR). As the multi-device `forward`.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_sino(const replicated_image<T> &image, const std::vector<Lors> &lors,
                      const tof_params<detail::identity_t<T>> &tof,
                      const std::vector<span<T>> &out, const launch_options &opt,
                      const std::vector<stream_ref> &streams,
                      const multi_options &m = {}) {
  const std::size_t bins = std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<T> o = p.slice(out, bins, "out");
    const tof_params<T> t = p.tof(tof);
    if (enqueue)
      forward_tof_sino<T>(p.image, p.src, t, o, p.opt, m.tof_variant, p.stream);
    else
      detail::check_tof_projection<T>(p.image, p.src, t, nullptr, 0, false, o.data(),
                                      o.size(), p.src.count * bins, "out", p.opt,
                                      p.stream);
  });
}

/// TOF sinogram back projection split across the devices (into each
/// replica). As the multi-device `back`.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_sino(replicated_image<T> &image, const std::vector<Lors> &lors,
                   const tof_params<detail::identity_t<T>> &tof,
                   const std::vector<span<const detail::identity_t<T>>> &values,
                   const launch_options &opt, const std::vector<stream_ref> &streams,
                   const multi_options &m = {}) {
  const std::size_t bins = std::size_t(tof.num_bins > 0 ? tof.num_bins : 0);
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<const T> v = p.slice(values, bins, "values");
    const tof_params<T> t = p.tof(tof);
    if (enqueue)
      back_tof_sino<T>(detail::writable(p.image), p.src, t, v, p.opt, m.tof_variant,
                       p.stream);
    else
      detail::check_tof_projection<T>(p.image, p.src, t, nullptr, 0, false, v.data(),
                                      v.size(), p.src.count * bins, "values", p.opt,
                                      p.stream);
  });
}

/// TOF list-mode forward projection split across the devices; `bins` like
/// `out` (one array or one per device). As the multi-device `forward`.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void forward_tof_lm(const replicated_image<T> &image, const std::vector<Lors> &lors,
                    const std::vector<span<const std::int16_t>> &bins,
                    const tof_params<detail::identity_t<T>> &tof,
                    const std::vector<span<T>> &out, const launch_options &opt,
                    const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<const std::int16_t> b = p.slice(bins, 1, "bins");
    const span<T> o = p.slice(out, 1, "out");
    const tof_params<T> t = p.tof(tof);
    if (enqueue)
      forward_tof_lm<T>(p.image, p.src, b, t, o, p.opt, m.tof_variant, p.stream);
    else
      detail::check_tof_projection<T>(p.image, p.src, t, b.data(), b.size(), true,
                                      o.data(), o.size(), p.src.count, "out", p.opt,
                                      p.stream);
  });
}

/// TOF list-mode back projection split across the devices (into each
/// replica). As the multi-device `back`, with `bins` as in `forward_tof_lm`.
template <class T, class Lors, class = resproj::detail::if_lor_source_of<Lors, T>>
void back_tof_lm(replicated_image<T> &image, const std::vector<Lors> &lors,
                 const std::vector<span<const std::int16_t>> &bins,
                 const tof_params<detail::identity_t<T>> &tof,
                 const std::vector<span<const detail::identity_t<T>>> &values,
                 const launch_options &opt, const std::vector<stream_ref> &streams,
                 const multi_options &m = {}) {
  detail::run_parts(image, lors, opt, m, streams, [&](const auto &p, bool enqueue) {
    const span<const std::int16_t> b = p.slice(bins, 1, "bins");
    const span<const T> v = p.slice(values, 1, "values");
    const tof_params<T> t = p.tof(tof);
    if (enqueue)
      back_tof_lm<T>(detail::writable(p.image), p.src, b, t, v, p.opt, m.tof_variant,
                     p.stream);
    else
      detail::check_tof_projection<T>(p.image, p.src, t, b.data(), b.size(), true,
                                      v.data(), v.size(), p.src.count, "values", p.opt,
                                      p.stream);
  });
}

} // namespace gpu
RESPROJ_NAMESPACE_END
