/// @file
/// @brief Forward and back projections of every operation (`op::non_tof`,
/// `op::tof_sinogram`, `op::tof_listmode`) over LORs split across the
/// devices of a `replicated_image`. One call shape:
///
///     gpu::forward(operation, image, lors, out, streams[, multi_options]);
///     gpu::back(operation, image, lors, values, streams[, multi_options]);
///
/// LORs are given as one LOR source per device (`std::vector<Lors>`, in the
/// set's order), in one of two ways (`multi_options::input`):
///  - `lor_input::replicated` (default): every device's source describes the
///    same LORs (a `sinogram_source` or `detector_pairs` with the tables on
///    that device, or a full copy of the end points), with the same layout;
///    the library gives device d the range of LORs proportional to
///    `weights[d]`, in whole sinogram planes when the layout is a sinogram.
///  - `lor_input::shares`: source d holds device d's own LORs (events or end
///    points resident on that device); the call's LOR order is the
///    concatenation of the shares in device order.
/// Each device's part keeps its source's layout, so the kernel choice
/// (gpu/kernel_choice.hpp) is made per part.
///
/// Per-LOR arrays are either one for the whole call or one per device:
///  - `out` / `values`: one array (a list of one), or one per device;
///  - the operation's `bins`, `tof.sigmas`, `tof.center_offsets`: one
///    operation for the whole call, or one operation per device
///    (`std::vector<Op>`, e.g. list-mode bins of each device's share).
/// An array for the whole call is indexed like the whole call and may live
/// on any device of the set; the other devices use it through peer access.
/// A per-device array lives on that device (or a peer): for replicated
/// input it is indexed like the whole call (device d uses its range), for
/// shares like device d's share. When a call shares an array between
/// devices, it orders the devices' streams against each other before and
/// after its work (event waits, the host never blocks): a shared input may
/// come from work on any of the streams, and a shared output is complete in
/// stream order on every stream. Per-device arrays keep the devices
/// independent.
///
/// Every call validates all arguments for all devices before enqueueing
/// anything, then enqueues each device's part on its stream (the
/// single-device `gpu::forward` / `gpu::back`) and returns: no allocation,
/// no synchronisation. Back projections accumulate into each device's
/// replica; sum them with `replica_reducer` (multi_device_reduce.cuh).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/tuning.hpp"

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
  /// Expert overrides for every device's part (see gpu::tuning). With
  /// `check_pointers`, every pointer is checked against the device that
  /// reads it. A stencil workspace lives on one device: one-device sets only.
  gpu::tuning tuning;
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

/// Runs `check()`, prefixing the argument name of an `invalid_argument` it
/// throws with `prefix` ("ops[1]." + "bins").
template <class F> void with_prefix(const std::string &prefix, F &&check) {
  if (prefix.empty()) {
    check();
    return;
  }
  try {
    check();
  } catch (const invalid_argument &e) {
    const std::string &what = e.what();
    const std::string head = "resproj: " + e.argument() + ": ";
    resproj::detail::throw_invalid(
        prefix + e.argument(),
        what.compare(0, head.size(), head) == 0 ? what.substr(head.size()) : what);
  }
}

/// One device's part of a multi-device call.
template <class Op, class Src, class U> struct part_call {
  int index = 0;     ///< entry in the set
  Src src;           ///< the part's LORs (keeps the source's layout)
  Op operation;      ///< the part's operation (per-LOR arrays offset)
  span<U> data;      ///< the part's `out` or `values`
  stream_ref stream; ///< the device's stream
};

/// Checks a multi-device call over `lors` (one source per device) with
/// `ops[0 .. num_ops)` (one for the whole call, or one per device with
/// `per_device`) and the per-LOR `data` arrays (`out` or `values`), then
/// runs `launch(part, tuning)` for every device with LORs. Nothing is
/// enqueued unless every check passes.
template <class T, class Op, class Lors, class U, class F>
void run_parts(const replicated_image<T> &image, const Op *ops, std::size_t num_ops,
               bool per_device, const std::vector<Lors> &lors,
               const std::vector<span<U>> &data, const char *data_name,
               const std::vector<stream_ref> &streams, const multi_options &m,
               F &&launch) {
  const device_set &set = image.devices();
  const int n = set.size();
  const std::size_t nn = std::size_t(n);
  const bool check_pointers = m.tuning.check_pointers;
  check_streams(set.devices(), streams);
  if (lors.size() != nn)
    resproj::detail::throw_invalid("lors", "has " + std::to_string(lors.size()) +
                                               " sources for " + std::to_string(n) +
                                               " devices (one per device)");
  if (per_device && num_ops != nn)
    resproj::detail::throw_invalid("ops", "has " + std::to_string(num_ops) +
                                              " operations for " + std::to_string(n) +
                                              " devices (one per device)");
  if (data.size() != 1 && data.size() != nn)
    resproj::detail::throw_invalid(
        data_name, "has " + std::to_string(data.size()) +
                       " arrays; pass one for the whole call or one per device (" +
                       std::to_string(n) + ")");

  using src_t = decltype(lors[0].normalized());
  std::vector<src_t> sources;
  sources.reserve(nn);
  for (int i = 0; i < n; ++i) {
    const std::string name = "lors[" + std::to_string(i) + "]";
    sources.push_back(lors[std::size_t(i)].normalized());
    sources.back().check(name.c_str());
    if (check_pointers && sources.back().count > 0)
      sources.back().for_each_region([&](const void *p, const char *region) {
        // region is "lors.<member>"
        require_device_pointer(p, set.device(i), (name + (region + 4)).c_str());
      });
  }

  // The devices' ranges, in their sources, and their offsets in the call.
  std::vector<lor_range> ranges(nn);
  std::vector<std::size_t> offsets(nn, 0);
  std::size_t total = 0;
  if (m.input == lor_input::replicated) {
    total = sources[0].count;
    for (int i = 1; i < n; ++i) {
      const src_t &s = sources[std::size_t(i)];
      if (s.count != total)
        resproj::detail::throw_invalid(
            "lors", "replicated sources differ in LOR count (" + std::to_string(total) +
                        " on entry 0, " + std::to_string(s.count) + " on entry " +
                        std::to_string(i) + ")");
      if (s.layout != sources[0].layout)
        resproj::detail::throw_invalid("lors", "replicated sources differ in layout "
                                               "(entry 0 and entry " +
                                                   std::to_string(i) + ")");
    }
    // A sinogram is split in whole planes (each part keeps lanes along
    // planes).
    const lor_layout &layout = sources[0].layout;
    const std::size_t granule = layout.planes_in(total) > 0 ? layout.lors_per_plane : 1;
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
  // One operation for the whole call: its per-LOR arrays cover the call.
  if (!per_device)
    resproj::detail::check_operation(ops[0], total);

  tuning part_tuning = m.tuning;
  part_tuning.check_pointers = false; // checked here, against the right devices
  bool shares_arrays = false;
  std::vector<part_call<Op, src_t, U>> parts;
  for (int i = 0; i < n; ++i) {
    const std::size_t k = std::size_t(i);
    const lor_range r = ranges[k];
    if (r.count == 0)
      continue;
    // Per-device arrays: indexed like the whole call (replicated input) or
    // like the device's share.
    const std::size_t own_first = m.input == lor_input::shares ? 0 : r.first;
    const std::size_t own_total = m.input == lor_input::shares ? r.count : total;

    // The operation.
    Op o;
    std::string op_prefix;
    if (per_device) {
      op_prefix = "ops[" + std::to_string(i) + "].";
      with_prefix(op_prefix,
                  [&] { resproj::detail::check_operation(ops[k], own_total); });
      o = resproj::detail::operation_part(ops[k], own_first, r.count);
    } else {
      o = resproj::detail::operation_part(ops[0], offsets[k], r.count);
    }
    resproj::detail::for_each_operation_region(o, [&](const void *p, const char *name) {
      if (!per_device && n > 1)
        shares_arrays = true;
      if (check_pointers)
        require_reachable(set, i, p, op_prefix + name);
    });

    // `out` / `values`.
    const std::size_t per_lor = o.values_per_lor();
    std::string label(data_name);
    span<U> a;
    std::size_t first = offsets[k], needed = total;
    if (data.size() == 1) {
      a = data[0];
      if (n > 1)
        shares_arrays = true;
    } else {
      label += "[" + std::to_string(i) + "]";
      a = data[k];
      first = own_first;
      needed = own_total;
    }
    resproj::detail::check_values(a.size(), a.data(), needed * per_lor, label.c_str());
    if (check_pointers)
      require_reachable(set, i, a.data(), label);
    const span<U> slice = a.subspan(first * per_lor, r.count * per_lor);

    const src_t src = sources[k].subview(r.first, r.count);
    check_gpu_projection<T>(o, image.view(i), src, slice.data(), slice.size(),
                            label.c_str(), streams[k], part_tuning);
    parts.push_back(part_call<Op, src_t, U>{i, src, o, slice, streams[k]});
  }

  // A shared array is written or read by every device: its producer's work
  // (on any stream) comes first, and the whole result is complete on every
  // stream afterwards.
  if (shares_arrays)
    image.order_streams(streams);
  for (const auto &p : parts)
    launch(p, part_tuning);
  if (shares_arrays)
    image.order_streams(streams);
}

} // namespace detail

/// Forward projection over LORs split across the devices of `image`: each
/// device projects its part against its replica into its part of `out`.
/// @param operation  `op::non_tof{}`, `op::tof_sinogram{tof}` or
///                   `op::tof_listmode{tof, bins}`; its per-LOR arrays are
///                   indexed like the whole call (see the file comment)
/// @param image      the replicated image (every replica holds the image)
/// @param lors       one LOR source per device (see the file comment)
/// @param out        one output for the whole call or one per device
///                   (`values_per_lor` values per LOR)
/// @param streams    one stream per device, in the set's order
/// @param m          input kind, per-device weights, tuning
/// @throws invalid_argument naming the argument ("lors[1].detectors",
///         "out[0]", "bins", "streams", "weights", ...) before anything is
///         enqueued.
/// Asynchronous on every stream; no allocation.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void forward(const Op &operation,
             const replicated_image<resproj::detail::value_of<Lors>> &image,
             const std::vector<Lors> &lors,
             const std::vector<span<resproj::detail::value_of<Lors>>> &out,
             const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, &operation, 1, false, lors, out, "out", streams, m,
                    [&](const auto &p, const tuning &t) {
                      gpu::forward(p.operation, image.view(p.index), p.src, p.data,
                                   p.stream, t);
                    });
}

/// As the multi-device `forward` with one operation per device
/// (`operations[d]`'s per-LOR arrays, e.g. list-mode bins, on device d:
/// indexed like the whole call for replicated input, like device d's share
/// for shares).
/// @throws invalid_argument as above; ("ops") unless there is one
///         operation per device, ("ops[1].bins", ...) for one of them.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void forward(const std::vector<Op> &operations,
             const replicated_image<resproj::detail::value_of<Lors>> &image,
             const std::vector<Lors> &lors,
             const std::vector<span<resproj::detail::value_of<Lors>>> &out,
             const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, operations.data(), operations.size(), true, lors, out, "out",
                    streams, m, [&](const auto &p, const tuning &t) {
                      gpu::forward(p.operation, image.view(p.index), p.src, p.data,
                                   p.stream, t);
                    });
}

/// Back projection over LORs split across the devices: each device adds its
/// part into its own replica (zero the replicas first for a plain back
/// projection); the replicas then hold partial sums until
/// `replica_reducer::sum`. Arguments and throws as the multi-device
/// `forward` ("values" instead of "out"). Asynchronous; no allocation.
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const Op &operation, replicated_image<resproj::detail::value_of<Lors>> &image,
          const std::vector<Lors> &lors,
          const std::vector<span<const resproj::detail::value_of<Lors>>> &values,
          const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, &operation, 1, false, lors, values, "values", streams, m,
                    [&](const auto &p, const tuning &t) {
                      gpu::back(p.operation, image.view(p.index), p.src, p.data, p.stream,
                                t);
                    });
}

/// As the multi-device `back` with one operation per device (see the
/// per-device `forward`).
template <class Op, class Lors, class = resproj::detail::if_projection<Op, Lors>>
void back(const std::vector<Op> &operations,
          replicated_image<resproj::detail::value_of<Lors>> &image,
          const std::vector<Lors> &lors,
          const std::vector<span<const resproj::detail::value_of<Lors>>> &values,
          const std::vector<stream_ref> &streams, const multi_options &m = {}) {
  detail::run_parts(image, operations.data(), operations.size(), true, lors, values,
                    "values", streams, m, [&](const auto &p, const tuning &t) {
                      gpu::back(p.operation, image.view(p.index), p.src, p.data, p.stream,
                                t);
                    });
}

} // namespace gpu
RESPROJ_NAMESPACE_END
