/// @file
/// @brief List-mode OSEM on several GPUs: `multi_device_listmode` splits the
/// events of a reconstruction set up on one device (`gpu_listmode_data`)
/// across the devices of a `gpu::device_set` (device d keeps its share of
/// every subset, with their corrections and the detector table) and
/// replicates the sensitivity image; `multi_device_listmode_backend` runs
/// `recon::osem` over it with one image replica per device and one sum of
/// the back projections over the devices per subset, after which every
/// device applies the same EM update to its replica (the replicas stay
/// equal). With one device it is the single-device backend. Needs nvcc.
///
///   const gpu::device_set set = gpu::device_set::all();
///   const gpu::stream_set streams(set);
///   recon::multi_device_listmode split(data, set, streams);
///   recon::multi_device_listmode_backend b(split, x0, streams);
///   recon::osem(b, iterations);
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/multi_device_reduce.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/recon/gpu_em.cuh"
#include "resproj/recon/gpu_listmode_events.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// Device `d` of `devices`' part of every subset of events grouped by
/// `offset` (`offset.size()` = subsets + 1): subset k's events
/// `[offset[k] + c d / D, offset[k] + c (d + 1) / D)`, c its count. Returns
/// the first event of each part in the whole (one per subset) and the
/// part's offsets (subsets + 1 entries). Host only.
/// @throws invalid_argument ("offset") unless non-decreasing with at least
///         two entries; ("d") outside `[0, devices)`.
inline std::pair<std::vector<std::size_t>, std::vector<std::size_t>>
device_share_of_subsets(const std::vector<std::size_t> &offset, int d, int devices) {
  if (offset.size() < 2)
    resproj::detail::throw_invalid("offset", "needs at least one subset");
  for (std::size_t k = 0; k + 1 < offset.size(); ++k)
    if (offset[k + 1] < offset[k])
      resproj::detail::throw_invalid("offset",
                                     "decreases at subset " + std::to_string(k));
  if (devices < 1 || d < 0 || d >= devices)
    resproj::detail::throw_invalid("d", "device " + std::to_string(d) + " of " +
                                            std::to_string(devices));
  const std::size_t S = offset.size() - 1, D = std::size_t(devices);
  std::vector<std::size_t> first(S), share(S + 1, 0);
  for (std::size_t k = 0; k < S; ++k) {
    const std::size_t c = offset[k + 1] - offset[k];
    const std::size_t lo = c * std::size_t(d) / D, hi = c * (std::size_t(d) + 1) / D;
    first[k] = offset[k] + lo;
    share[k + 1] = share[k] + (hi - lo);
  }
  return {std::move(first), std::move(share)};
}

/// One device's share of a list-mode reconstruction: its events of every
/// subset (the order of the whole kept), their corrections and the
/// detector table, in that device's memory.
struct device_listmode_share {
  device_events events;
  gpu::device_buffer<float> m, a;      ///< per-event corrections
  gpu::device_buffer<float> detectors; ///< xyz per detector
};

/// The events of a list-mode reconstruction split across the devices of a
/// set, and its sensitivity image replicated on them. Keeps a copy of the
/// device set; owns the shares.
class multi_device_listmode {
public:
  /// Copies device d's share of `data` (its events, corrections and
  /// detector table) to device d and the sensitivity image to every device
  /// (peer copies where possible, staged by the runtime otherwise), queued
  /// on `streams` after the work queued on `data.s`. Does not block; `data`
  /// must stay alive until the streams have run.
  /// @param data    a reconstruction set up on one device (events grouped by
  ///                subset, in any order `gpu_order_subsets` gave them)
  /// @param set     the devices, in the order of `streams`
  /// @param streams one stream per device of `set`
  /// @throws invalid_argument ("streams") for a wrong stream list;
  ///         gpu_out_of_memory / gpu_error from the runtime.
  multi_device_listmode(const gpu_listmode_data &data, const gpu::device_set &set,
                        const std::vector<gpu::stream_ref> &streams)
      : set_(set), tof_(data.tof),
        sensitivity_(set, data.sensitivity.geometry(), streams) {
    const int D = set.size();
    const int from = data.sensitivity.device();
    const gpu::event ready = [&] { // on the data's device, after its work
      const gpu::device_guard guard(from);
      gpu::event e;
      e.record(data.s);
      return e;
    }();
    const auto peer_copy = [&](void *dst, int to, const void *src, std::size_t bytes,
                               gpu::stream_ref s) {
      if (bytes > 0)
        RESPROJ_CUDA_TRY(cudaMemcpyPeerAsync(dst, to, src, from, bytes, s.get()));
    };
    const device_events &all = data.events;
    shares_.reserve(std::size_t(D));
    for (int d = 0; d < D; ++d) {
      const int device = set.device(d);
      const gpu::stream_ref s = streams[std::size_t(d)];
      const gpu::device_guard guard(device);
      ready.make_wait(s);
      auto [first, offset] = device_share_of_subsets(all.offset, d, D);
      const std::size_t n = offset.back();
      device_listmode_share sh;
      sh.events.offset = offset;
      sh.events.layout = all.layout;
      sh.events.pairs = gpu::device_buffer<std::int32_t>(2 * n, s);
      sh.events.bins = gpu::device_buffer<std::int16_t>(n, s);
      sh.m = gpu::device_buffer<float>(n, s);
      sh.a = gpu::device_buffer<float>(n, s);
      sh.detectors = gpu::device_buffer<float>(data.detectors().size(), s);
      peer_copy(sh.detectors.data(), device, data.detectors().data(),
                sh.detectors.size_bytes(), s);
      for (std::size_t k = 0; k + 1 < offset.size(); ++k) {
        const std::size_t c = offset[k + 1] - offset[k], at = offset[k], src = first[k];
        peer_copy(sh.events.pairs.data() + 2 * at, device, all.pairs.data() + 2 * src,
                  2 * c * sizeof(std::int32_t), s);
        peer_copy(sh.events.bins.data() + at, device, all.bins.data() + src,
                  c * sizeof(std::int16_t), s);
        peer_copy(sh.m.data() + at, device, data.m.data() + src, c * sizeof(float), s);
        peer_copy(sh.a.data() + at, device, data.a.data() + src, c * sizeof(float), s);
      }
      peer_copy(sensitivity_.replica(d).data(), device, data.sensitivity.data(),
                sensitivity_.num_voxels() * sizeof(float), s);
      shares_.push_back(std::move(sh));
    }
  }

  const gpu::device_set &devices() const noexcept { return set_; }
  int size() const noexcept { return set_.size(); }
  /// Device d's share.
  const device_listmode_share &share(int d) const { return shares_.at(std::size_t(d)); }
  /// The total sensitivity image, one replica per device.
  const gpu::replicated_image<float> &sensitivity() const noexcept {
    return sensitivity_;
  }
  const tof_params<float> &tof() const noexcept { return tof_; }
  int num_subsets() const { return shares_.front().events.num_subsets(); }
  /// Events of all devices.
  std::size_t count() const {
    std::size_t n = 0;
    for (const auto &s : shares_)
      n += s.events.count();
    return n;
  }

private:
  gpu::device_set set_;
  tof_params<float> tof_;
  gpu::replicated_image<float> sensitivity_;
  std::vector<device_listmode_share> shares_;
};

/// OSEM backend over a `multi_device_listmode`: device d projects its share
/// of each subset with its replica of the image; the back projections are
/// summed over the devices once per subset (`gpu::replica_reducer`, into
/// every replica), and every device applies the EM update to its replica.
/// Nothing is synchronised between subsets. Keeps a reference to the data.
struct multi_device_listmode_backend {
  const multi_device_listmode &data;
  std::vector<gpu::stream_ref> streams;
  gpu::replicated_image<float> x, g;        ///< image, back projected ratio
  std::vector<gpu::device_buffer<float>> q; ///< per device: projection / ratio
  gpu::replica_reducer<float> reducer;
  gpu::tuning opt; ///< expert overrides of every device's projections

  /// Checks `x0`, allocates on `streams` and uploads `x0` to every replica
  /// (no synchronisation but the reducer's set-up).
  /// @throws invalid_argument ("streams") for a wrong stream list, ("x0")
  ///         for a size that does not match the image; gpu_error.
  multi_device_listmode_backend(const multi_device_listmode &d,
                                const std::vector<float> &x0,
                                const std::vector<gpu::stream_ref> &s)
      : data(d), streams(s), x(checked(d, x0), d.sensitivity().geometry(), s),
        g(d.devices(), d.sensitivity().geometry(), s),
        reducer(d.devices(), d.sensitivity().geometry(), s) {
    for (int i = 0; i < d.size(); ++i) {
      const gpu::device_guard guard(d.devices().device(i));
      q.emplace_back(d.share(i).events.max_count(), s[std::size_t(i)]);
    }
    x.upload(span<const float>(x0.data(), x0.size()), streams);
  }
  int num_subsets() const { return data.num_subsets(); }

  void forward(int k) {
    each(k, [&](int i, std::size_t n, const device_listmode_share &sh) {
      const auto out = q[std::size_t(i)].span().subspan(0, n);
      const auto lors = sh.events.lors(k, sh.detectors.cspan());
      if (data.tof().num_bins > 0)
        gpu::forward(op::tof_listmode<float>(data.tof(), sh.events.bins_of(k)),
                     x.replica(i).cview(), lors, out, streams[std::size_t(i)], opt);
      else
        gpu::forward(op::non_tof{}, x.replica(i).cview(), lors, out,
                     streams[std::size_t(i)], opt);
    });
  }
  void ratio(int k) {
    each(k, [&](int i, std::size_t n, const device_listmode_share &sh) {
      const std::size_t o = sh.events.first(k);
      gpu_em_ratio(q[std::size_t(i)].span().subspan(0, n), sh.m.cspan().subspan(o, n),
                   sh.a.cspan().subspan(o, n), streams[std::size_t(i)]);
    });
  }
  void back(int k) {
    g.zero(streams);
    each(k, [&](int i, std::size_t n, const device_listmode_share &sh) {
      const span<const float> v(q[std::size_t(i)].data(), n);
      const auto lors = sh.events.lors(k, sh.detectors.cspan());
      if (data.tof().num_bins > 0)
        gpu::back(op::tof_listmode<float>(data.tof(), sh.events.bins_of(k)),
                  g.replica(i).view(), lors, v, streams[std::size_t(i)], opt);
      else
        gpu::back(op::non_tof{}, g.replica(i).view(), lors, v, streams[std::size_t(i)],
                  opt);
    });
    reducer.sum(g, streams, gpu::all_replicas);
  }
  void update(int) {
    for (int i = 0; i < data.size(); ++i) {
      const gpu::device_guard guard(data.devices().device(i));
      gpu_em_update(x.replica(i), g.replica(i), data.sensitivity().replica(i),
                    1.f / float(num_subsets()), streams[std::size_t(i)]);
    }
  }
  void finish() {
    for (const gpu::stream_ref s : streams)
      s.synchronize();
  }
  /// The image (replica 0), downloaded (synchronises every stream).
  std::vector<float> image() {
    finish();
    std::vector<float> h(x.num_voxels());
    const gpu::device_guard guard(data.devices().device(0));
    x.replica(0).download(span<float>(h.data(), h.size()), streams[0]);
    streams[0].synchronize();
    return h;
  }

private:
  /// The device set of `d`, after checking `x0` against its image.
  static const gpu::device_set &checked(const multi_device_listmode &d,
                                        const std::vector<float> &x0) {
    if (x0.size() != d.sensitivity().num_voxels())
      resproj::detail::throw_invalid("x0", "size does not match the image");
    return d.devices();
  }
  /// f(i, n, share) for every device i with n > 0 events in subset k, with
  /// that device current.
  template <class F> void each(int k, F &&f) {
    for (int i = 0; i < data.size(); ++i) {
      const device_listmode_share &sh = data.share(i);
      const std::size_t n = sh.events.count(k);
      if (n == 0)
        continue;
      const gpu::device_guard guard(data.devices().device(i));
      f(i, n, sh);
    }
  }
};

} // namespace recon
RESPROJ_NAMESPACE_END
