/// @file
/// @brief Several GPUs: a set of devices (`device_set`) with one stream per
/// device (`stream_set`), an image replicated on every device of the set
/// (`replicated_image`), forward and back projections whose LORs are split
/// across the devices (multi_device_projector.cuh) and the sum of the
/// back-projected replicas on the GPUs (multi_device_reduce.cuh).
///
/// Every multi-device call takes one stream per device (in the set's order),
/// enqueues work on all of them and returns without blocking the host; work
/// that crosses devices is ordered with events, never host waits.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Most devices in one `device_set`.
inline constexpr int max_set_devices = 16;

/// An ordered set of distinct CUDA devices. Construction enables peer
/// access between every pair of devices of the set that supports it
/// (`cudaDeviceEnablePeerAccess`) and grants each such peer read/write
/// access to the device's current stream-ordered memory pool
/// (`cudaMemPoolSetAccess`; device peer access alone does not cover pool
/// memory), so that `device_buffer`s of one device are usable by kernels and
/// copies of another. These grants are process-wide and stay after the set
/// is destroyed. Host-side only: does not block on device work.
class device_set {
public:
  /// Every visible device, in id order.
  /// @throws invalid_argument("devices") when no device is visible.
  static device_set all() {
    std::vector<int> ids(std::size_t(std::min(device_count(), max_set_devices)));
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = int(i);
    return device_set(ids);
  }

  /// @param devices  device ids (any subset of the visible devices, in the
  ///                 order replicas and streams are indexed)
  /// @throws invalid_argument("devices") if empty, longer than
  ///         `max_set_devices`, with an id that does not exist, or with a
  ///         duplicate id; gpu_error on runtime failure.
  explicit device_set(std::vector<int> devices) : ids_(std::move(devices)) {
    if (ids_.empty())
      resproj::detail::throw_invalid("devices", "empty device set");
    if (ids_.size() > std::size_t(max_set_devices))
      resproj::detail::throw_invalid(
          "devices", "more than " + std::to_string(max_set_devices) + " devices");
    for (std::size_t i = 0; i < ids_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (ids_[j] == ids_[i])
          resproj::detail::throw_invalid("devices", "device " + std::to_string(ids_[i]) +
                                                        " appears twice");
    const int visible = device_count();
    for (const int id : ids_)
      if (id < 0 || id >= visible)
        resproj::detail::throw_invalid(
            "devices", "device " + std::to_string(id) + " does not exist (" +
                           std::to_string(visible) + " visible)");
    const std::size_t n = ids_.size();
    peer_.assign(n * n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      peer_[i * n + i] = 1;
      for (std::size_t j = 0; j < n; ++j) {
        if (i == j)
          continue;
        int can = 0;
        RESPROJ_CUDA_TRY(cudaDeviceCanAccessPeer(&can, ids_[i], ids_[j]));
        if (!can)
          continue;
        {
          const device_guard guard(ids_[i]);
          const cudaError_t err = cudaDeviceEnablePeerAccess(ids_[j], 0);
          if (err == cudaErrorPeerAccessAlreadyEnabled)
            detail::discard_error(err);
          else
            RESPROJ_CUDA_TRY(err);
        }
        // Device i may use device j's pool allocations.
        cudaMemAccessDesc access{};
        access.location.type = cudaMemLocationTypeDevice;
        access.location.id = ids_[i];
        access.flags = cudaMemAccessFlagsProtReadWrite;
        const cudaMemPool_t pool = detail::current_pool(ids_[j]);
        detail::relaxed_capture_scope relaxed;
        RESPROJ_CUDA_TRY(cudaMemPoolSetAccess(pool, &access, 1));
        peer_[i * n + j] = 1;
      }
    }
  }

  /// Number of devices.
  int size() const noexcept { return int(ids_.size()); }
  /// Device id of entry `i`.
  int device(int i) const { return ids_.at(std::size_t(i)); }
  /// The device ids, in order.
  const std::vector<int> &devices() const noexcept { return ids_; }
  /// Index of device id `device` in the set, or -1.
  int index_of(int device) const noexcept {
    for (std::size_t i = 0; i < ids_.size(); ++i)
      if (ids_[i] == device)
        return int(i);
    return -1;
  }
  /// Whether kernels and copies on entry `i`'s device may use memory of
  /// entry `j`'s device (true for i == j).
  bool peer_access(int i, int j) const {
    return peer_.at(std::size_t(i) * ids_.size() + std::size_t(j)) != 0;
  }
  /// Whether every pair of devices has peer access.
  bool all_peers() const noexcept {
    return std::all_of(peer_.begin(), peer_.end(), [](char c) { return c != 0; });
  }

private:
  std::vector<int> ids_;
  std::vector<char> peer_; // n x n, row = accessing device
};

/// One non-blocking stream per device of a set (owned), and the list of
/// `stream_ref`s that the multi-device calls take.
class stream_set {
public:
  /// @throws gpu_error on runtime failure.
  explicit stream_set(const device_set &devices) {
    owned_.reserve(std::size_t(devices.size()));
    for (const int d : devices.devices()) {
      owned_.emplace_back(d);
      refs_.push_back(owned_.back().ref());
    }
  }
  /// The streams, one per device, in the set's order.
  const std::vector<stream_ref> &refs() const noexcept { return refs_; }
  operator const std::vector<stream_ref> &() const noexcept { return refs_; }
  stream_ref operator[](int i) const { return refs_.at(std::size_t(i)); }
  int size() const noexcept { return int(refs_.size()); }
  /// Host-blocking: waits for the work queued on every stream.
  void synchronize() const {
    for (const stream_ref s : refs_)
      s.synchronize();
  }

private:
  std::vector<stream> owned_;
  std::vector<stream_ref> refs_;
};

/// An image replicated on every device of a set: one `device_image<T>` per
/// device, allocated, uploaded and freed together. Replicas are plain
/// device images: use `replica(i)` / `view(i)` with the single-device API.
template <class T> class replicated_image {
public:
  /// Allocates one replica per device, stream-ordered on that device's
  /// stream (contents undefined until `upload`, `zero` or `fill`). Does not
  /// block.
  /// @throws invalid_argument("streams") for a wrong stream list;
  ///         gpu_error / gpu_out_of_memory on runtime failure.
  replicated_image(const device_set &devices, const image_geometry &geometry,
                   const std::vector<stream_ref> &streams)
      : set_(devices), events_(devices.devices()) {
    detail::check_streams(set_.devices(), streams);
    replicas_.reserve(std::size_t(set_.size()));
    for (int i = 0; i < set_.size(); ++i) {
      const device_guard guard(set_.device(i));
      replicas_.emplace_back(geometry, streams[std::size_t(i)]);
    }
  }

  const device_set &devices() const noexcept { return set_; }
  int size() const noexcept { return set_.size(); }
  const image_geometry &geometry() const noexcept { return replicas_.front().geometry(); }
  /// Number of voxels of one replica.
  std::size_t num_voxels() const noexcept { return replicas_.front().size(); }
  device_image<T> &replica(int i) { return replicas_.at(std::size_t(i)); }
  const device_image<T> &replica(int i) const { return replicas_.at(std::size_t(i)); }
  device_image_view<T> view(int i) { return replica(i).view(); }
  device_image_view<const T> view(int i) const { return replica(i).view(); }

  /// Uploads `host` to every replica: to the first replica, then peer copies
  /// (`cudaMemcpyPeerAsync`) to every device with peer access to it, while
  /// devices without peer access copy from `host` on their own stream. Later
  /// work on any of `streams` is ordered after the copies that read or write
  /// its replica. Asynchronous for pinned `host`; pageable memory is staged
  /// by the runtime before the call returns.
  /// @throws invalid_argument("host") for a wrong size, ("streams").
  void upload(span<const T> host, const std::vector<stream_ref> &streams) {
    detail::check_streams(set_.devices(), streams);
    if (host.size() != num_voxels())
      resproj::detail::throw_invalid("host", "holds " + std::to_string(host.size()) +
                                                 " values, the image has " +
                                                 std::to_string(num_voxels()));
    replicas_[0].upload(host, streams[0]);
    broadcast_from(0, streams, host.data());
  }

  /// Copies replica `from` into every other replica (peer copies; through
  /// the runtime's host staging where no peer access exists), ordered with
  /// events after the work already queued on `streams`. Does not block.
  /// @throws invalid_argument("from") for an index outside the set.
  void broadcast(int from, const std::vector<stream_ref> &streams) {
    detail::check_streams(set_.devices(), streams);
    if (from < 0 || from >= size())
      resproj::detail::throw_invalid("from", "replica " + std::to_string(from) +
                                                 " outside the set of " +
                                                 std::to_string(size()));
    broadcast_from(from, streams, nullptr);
  }

  /// Sets every replica to `value` (each on its device's stream).
  void fill(T value, const std::vector<stream_ref> &streams) {
    detail::check_streams(set_.devices(), streams);
    for (int i = 0; i < size(); ++i)
      replicas_[std::size_t(i)].fill(value, streams[std::size_t(i)]);
  }
  /// Zeroes every replica (each on its device's stream).
  void zero(const std::vector<stream_ref> &streams) { fill(T(0), streams); }

  /// Orders the streams against each other: work queued later on any of
  /// `streams` starts after everything queued so far on all of them (one
  /// event per device, no host wait). The multi-device projections do this
  /// themselves around a call that shares one array between devices.
  /// Not thread-safe with other calls on the same image.
  void order_streams(const std::vector<stream_ref> &streams) const {
    detail::check_streams(set_.devices(), streams);
    events_.barrier(streams);
  }

private:
  void broadcast_from(int from, const std::vector<stream_ref> &streams, const T *host) {
    const std::size_t bytes = num_voxels() * sizeof(T);
    const std::size_t f = std::size_t(from);
    bool any_peer_copy = false;
    for (int i = 0; i < size(); ++i) {
      if (i == from)
        continue;
      const std::size_t k = std::size_t(i);
      if (host != nullptr && !set_.peer_access(i, from)) {
        replicas_[k].upload(span<const T>(host, num_voxels()), streams[k]);
        continue;
      }
      events_.order(streams, f, k); // the source is complete
      const device_guard guard(set_.device(i));
      RESPROJ_CUDA_TRY(cudaMemcpyPeerAsync(replicas_[k].data(), set_.device(i),
                                           replicas_[f].data(), set_.device(from), bytes,
                                           streams[k].get()));
      any_peer_copy = true;
    }
    if (any_peer_copy) // the source is not overwritten while peers read it
      events_.barrier(streams);
  }

  device_set set_;
  mutable detail::device_events events_;
  std::vector<device_image<T>> replicas_;
};

} // namespace gpu
RESPROJ_NAMESPACE_END
