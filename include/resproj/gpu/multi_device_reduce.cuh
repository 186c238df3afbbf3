/// @file
/// @brief The sum of the replicas of a `replicated_image` on the GPUs, after
/// a multi-device back projection: NCCL (when built with
/// RESPROJ_HAS_NCCL), peer-to-peer (kernels that read every replica through
/// peer access), or host-staged peer copies where no peer access exists.
/// `nccl_sum` reduces one process's replica through a communicator made by
/// the caller (one process per GPU, e.g. under MPI) with the same code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
#include <nccl.h>
#endif

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/detail/multi_split.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/multi_device.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// `root` value of `replica_reducer::sum`: every replica holds the sum.
inline constexpr int all_replicas = -1;

/// How `replica_reducer` sums the replicas.
enum class reduce_method {
  automatic,  ///< NCCL when built with it, else peer, else host_staged
  nccl,       ///< ncclAllReduce / ncclReduce, in place (RESPROJ_HAS_NCCL)
  peer,       ///< one kernel per device over its slice of every replica
  host_staged ///< cudaMemcpyPeerAsync into a scratch image on the root + add
};

namespace detail {

/// Pointers to every replica, passed by value to the sum functor.
template <class T> struct replica_pointers {
  T *p[max_set_devices];
  int n;
  int root; ///< replica that receives the sum, or -1 for all
};

/// Voxel i of the slice: the sum over replicas in index order, written to
/// every replica (root < 0) or to the root.
template <class T> struct sum_replicas_op {
  replica_pointers<T> r;
  __device__ void operator()(std::size_t i) const {
    T s = r.p[0][i];
    for (int e = 1; e < r.n; ++e)
      s += r.p[e][i];
    if (r.root >= 0) {
      r.p[r.root][i] = s;
    } else {
      for (int e = 0; e < r.n; ++e)
        r.p[e][i] = s;
    }
  }
};

template <class T> struct add_op {
  T *dst;
  const T *src;
  __device__ void operator()(std::size_t i) const { dst[i] += src[i]; }
};

#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
[[noreturn]] inline void throw_nccl(ncclResult_t r, const char *call) {
  throw gpu_error(std::string("resproj: NCCL error ") + ncclGetErrorString(r) + " in `" +
                      call + "`",
                  int(r));
}
#define RESPROJ_NCCL_TRY(...)                                                            \
  do {                                                                                   \
    const ncclResult_t resproj_nccl_result = (__VA_ARGS__);                              \
    if (resproj_nccl_result != ncclSuccess && resproj_nccl_result != ncclInProgress)     \
      ::resproj::gpu::detail::throw_nccl(resproj_nccl_result, #__VA_ARGS__);             \
  } while (0)

template <class T> constexpr ncclDataType_t nccl_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "nccl_sum supports float and double images");
  return std::is_same_v<T, float> ? ncclFloat32 : ncclFloat64;
}
#endif

} // namespace detail

#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
/// Sums this rank's replica with those of every other rank of `comm`, in
/// place: `ncclAllReduce` (`root < 0`: every rank holds the sum) or
/// `ncclReduce` to rank `root` (other ranks' replicas are unchanged). Every
/// rank must make the matching call. Works for a communicator made by the
/// caller (one process or thread per GPU, `ncclCommInitRank`) and inside
/// `ncclGroupStart/End` (as `replica_reducer` does for one process driving
/// several GPUs). Asynchronous on `s`; no allocation by resproj.
/// @param replica  this rank's image, on the communicator's device
/// @param comm     NCCL communicator
/// @param root     rank that receives the sum, or `all_replicas`
/// @param s        stream on the replica's device
/// @throws invalid_argument("comm") for a null communicator or a root outside
///         it, ("replica") for a null image or one on another device than
///         the communicator's, ("stream"); gpu_error if NCCL fails.
template <class T>
void nccl_sum(device_image_view<T> replica, ncclComm_t comm, int root, stream_ref s) {
  detail::require_explicit_stream(s, "stream");
  if (comm == nullptr)
    resproj::detail::throw_invalid("comm", "null communicator");
  if (replica.data == nullptr)
    resproj::detail::throw_invalid("replica", "null pointer");
  int device = -1, ranks = 0;
  RESPROJ_NCCL_TRY(ncclCommCuDevice(comm, &device));
  RESPROJ_NCCL_TRY(ncclCommCount(comm, &ranks));
  if (device != replica.device)
    resproj::detail::throw_invalid(
        "replica", "is on device " + std::to_string(replica.device) +
                       ", the communicator's device is " + std::to_string(device));
  if (root >= ranks)
    resproj::detail::throw_invalid("comm", "root rank " + std::to_string(root) +
                                               " outside a communicator of " +
                                               std::to_string(ranks) + " ranks");
  const std::size_t count = std::size_t(replica.geometry.num_voxels());
  if (root < 0)
    RESPROJ_NCCL_TRY(ncclAllReduce(replica.data, replica.data, count,
                                   detail::nccl_type<std::remove_const_t<T>>(), ncclSum,
                                   comm, s.get()));
  else
    RESPROJ_NCCL_TRY(ncclReduce(replica.data, replica.data, count,
                                detail::nccl_type<std::remove_const_t<T>>(), ncclSum,
                                root, comm, s.get()));
}
#endif

/// Sums the replicas of `replicated_image`s of one device set on the GPUs.
/// Holds what the chosen method needs (NCCL communicators, a scratch image
/// on each device for the host-staged method), made once at construction,
/// so that `sum` neither allocates nor synchronises.
template <class T> class replica_reducer {
public:
  /// @param devices   the set whose images will be summed
  /// @param geometry  the images' geometry
  /// @param streams   one stream per device (scratch allocation)
  /// @param method    how to sum (automatic: NCCL if built with it, else
  ///                  peer when every pair has peer access, else host_staged)
  /// @throws invalid_argument("method") for nccl without RESPROJ_HAS_NCCL or
  ///         peer without peer access between every pair; ("streams");
  ///         gpu_error on failure. Host-blocking (NCCL initialisation).
  replica_reducer(const device_set &devices, const image_geometry &geometry,
                  const std::vector<stream_ref> &streams,
                  reduce_method method = reduce_method::automatic)
      : set_(devices), geometry_(geometry), events_(devices.devices()) {
    detail::check_streams(set_.devices(), streams);
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
    constexpr bool have_nccl = true;
#else
    constexpr bool have_nccl = false;
#endif
    if (method == reduce_method::automatic)
      method = have_nccl && set_.size() > 1 ? reduce_method::nccl
               : set_.all_peers()           ? reduce_method::peer
                                            : reduce_method::host_staged;
    if (method == reduce_method::nccl && !have_nccl)
      resproj::detail::throw_invalid("method", "resproj was built without NCCL");
    if (method == reduce_method::peer && !set_.all_peers())
      resproj::detail::throw_invalid("method",
                                     "peer needs peer access between every pair");
    method_ = method;
    if (method_ == reduce_method::host_staged && set_.size() > 1) {
      for (int i = 0; i < set_.size(); ++i) {
        const device_guard guard(set_.device(i));
        scratch_.emplace_back(std::size_t(geometry.num_voxels()),
                              streams[std::size_t(i)]);
      }
    }
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
    if (method_ == reduce_method::nccl) {
      comms_.assign(std::size_t(set_.size()), nullptr);
      RESPROJ_NCCL_TRY(
          ncclCommInitAll(comms_.data(), set_.size(), set_.devices().data()));
    }
#endif
  }

#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
  /// Sums through communicators the caller made (one per device of the set,
  /// rank i on device i; not owned: the caller destroys them after the
  /// reducer). Does not block.
  /// @throws invalid_argument("comms") for a wrong count, a null
  ///         communicator or one on another device than its set entry;
  ///         ("streams"); gpu_error if NCCL fails.
  replica_reducer(const device_set &devices, const image_geometry &geometry,
                  const std::vector<stream_ref> &streams, std::vector<ncclComm_t> comms)
      : set_(devices), geometry_(geometry), events_(devices.devices()),
        method_(reduce_method::nccl), comms_(std::move(comms)), owns_comms_(false) {
    detail::check_streams(set_.devices(), streams);
    if (comms_.size() != std::size_t(set_.size()))
      resproj::detail::throw_invalid(
          "comms", "has " + std::to_string(comms_.size()) + " communicators for " +
                       std::to_string(set_.size()) + " devices");
    for (int i = 0; i < set_.size(); ++i) {
      int device = -1;
      if (comms_[std::size_t(i)] == nullptr)
        resproj::detail::throw_invalid("comms", "null communicator");
      RESPROJ_NCCL_TRY(ncclCommCuDevice(comms_[std::size_t(i)], &device));
      if (device != set_.device(i))
        resproj::detail::throw_invalid(
            "comms", "communicator " + std::to_string(i) + " is on device " +
                         std::to_string(device) + ", expected device " +
                         std::to_string(set_.device(i)));
    }
  }
#endif

  ~replica_reducer() {
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
    if (owns_comms_)
      for (ncclComm_t c : comms_)
        if (c != nullptr)
          (void)ncclCommDestroy(c);
#endif
  }
  replica_reducer(const replica_reducer &) = delete;
  replica_reducer &operator=(const replica_reducer &) = delete;

  /// The method in use.
  reduce_method method() const noexcept { return method_; }

  /// Replaces the replicas of `image` by their sum: every replica
  /// (`root == all_replicas`) or only replica `root` (the others then hold
  /// unspecified partial sums for NCCL, their own part otherwise). Ordered
  /// after the work already queued on every stream (events); work queued on
  /// any stream afterwards sees the sum. Enqueues on every device, then
  /// returns: no host wait, no allocation. With one device: nothing to do.
  /// @throws invalid_argument("image") for another device set or geometry,
  ///         ("root") outside the set, ("streams"); gpu_error on failure.
  void sum(replicated_image<T> &image, const std::vector<stream_ref> &streams,
           int root = all_replicas) {
    detail::check_streams(set_.devices(), streams);
    if (image.devices().devices() != set_.devices() ||
        image.num_voxels() != std::size_t(geometry_.num_voxels()))
      resproj::detail::throw_invalid("image", "has another device set or size than "
                                              "the reducer");
    if (root < all_replicas || root >= set_.size())
      resproj::detail::throw_invalid("root", "replica " + std::to_string(root) +
                                                 " outside the set of " +
                                                 std::to_string(set_.size()));
    const int n = set_.size();
    if (n == 1)
      return;
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
    if (method_ == reduce_method::nccl) {
      RESPROJ_NCCL_TRY(ncclGroupStart());
      try {
        for (int i = 0; i < n; ++i)
          nccl_sum<T>(image.view(i), comms_[std::size_t(i)], root,
                      streams[std::size_t(i)]);
      } catch (...) {
        (void)ncclGroupEnd();
        throw;
      }
      RESPROJ_NCCL_TRY(ncclGroupEnd());
      return;
    }
#endif
    const std::size_t voxels = image.num_voxels();
    events_.barrier(streams); // every partial sum is complete
    if (method_ == reduce_method::peer) {
      detail::replica_pointers<T> r{};
      r.n = n;
      r.root = root;
      for (int e = 0; e < n; ++e)
        r.p[e] = image.replica(e).data();
      // Device i sums slice i (multiples of 64 voxels) of every replica.
      const std::size_t per =
          ((voxels + std::size_t(n) - 1) / std::size_t(n) + 63) / 64 * 64;
      for (int i = 0; i < n; ++i) {
        const std::size_t begin = std::min(voxels, per * std::size_t(i));
        const std::size_t end = std::min(voxels, begin + per);
        if (begin == end)
          continue;
        const device_guard guard(set_.device(i));
        thrust::for_each_n(thrust::cuda::par_nosync.on(streams[std::size_t(i)].get()),
                           thrust::counting_iterator<std::size_t>(begin), end - begin,
                           detail::sum_replicas_op<T>{r});
      }
    } else { // host_staged: everything through the root's scratch image
      const int target = root < 0 ? 0 : root;
      const std::size_t t = std::size_t(target);
      const cudaStream_t s = streams[t].get();
      const device_guard guard(set_.device(target));
      T *dst = image.replica(target).data();
      for (int e = 0; e < n; ++e) {
        if (e == target)
          continue;
        RESPROJ_CUDA_TRY(cudaMemcpyPeerAsync(scratch_[t].data(), set_.device(target),
                                             image.replica(e).data(), set_.device(e),
                                             voxels * sizeof(T), s));
        thrust::for_each_n(thrust::cuda::par_nosync.on(s),
                           thrust::counting_iterator<std::size_t>(0), voxels,
                           detail::add_op<T>{dst, scratch_[t].data()});
      }
      if (root < 0)
        for (int e = 0; e < n; ++e)
          if (e != target)
            RESPROJ_CUDA_TRY(cudaMemcpyPeerAsync(image.replica(e).data(), set_.device(e),
                                                 dst, set_.device(target),
                                                 voxels * sizeof(T), s));
    }
    events_.barrier(streams); // no replica is reused before every device is done
  }

private:
  device_set set_;
  image_geometry geometry_;
  detail::device_events events_;
  reduce_method method_ = reduce_method::peer;
  std::vector<device_buffer<T>> scratch_;
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
  std::vector<ncclComm_t> comms_;
  bool owns_comms_ = true;
#endif
};

} // namespace gpu
RESPROJ_NAMESPACE_END
