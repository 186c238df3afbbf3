/// @file
/// @brief Host-only declarations of the GPU backend for translation units
/// compiled by a plain C++ compiler (g++, as in STIR). Link the target
/// `resproj::gpu_compiled`, which instantiates them for float and double.
/// No CUDA type appears here except `cudaStream_t`. The call shape is that
/// of the header-only backend (gpu/projector.cuh, gpu/lor_streamer.cuh):
///
///     compiled::forward(operation, image, lors, out, stream[, tuning]);
///     compiled::back(operation, image, lors, values, stream[, tuning]);
///
/// Instantiated for T in {float, double}, every operation (`op::non_tof`,
/// `op::tof_sinogram<T>`, `op::tof_listmode<T>`) and the LOR sources
/// `lor_view<const T>`, `detector_pairs<T>`, `scanner::sinogram_source<T>`
/// (device memory); `compiled::lor_streamer<T>` takes `lor_view<const T>`,
/// `detector_pairs<T>` and `scanner::listmode_records<T>` (host memory).
/// `RESPROJ_GPU_COMPILED_OPERATIONS` below is that list, written once:
/// the library instantiates it, and the declarations accept nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <driver_types.h> // cudaStream_t only

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/tuning.hpp"
#include "resproj/scanner/listmode.hpp"
#include "resproj/scanner/sinogram_source.hpp"

/// The instantiation list: for precision T, `Sources(X, T, Op)` for every
/// operation. `RESPROJ_GPU_COMPILED_DEVICE_SOURCES` (compiled::forward and
/// compiled::back) and `RESPROJ_GPU_COMPILED_HOST_SOURCES`
/// (compiled::lor_streamer) then call `X(T, Op, Lors)` for every LOR source.
// clang-format off
#define RESPROJ_GPU_COMPILED_OPERATIONS(Sources, X, T)                                   \
  Sources(X, T, ::resproj::op::non_tof)                                                  \
  Sources(X, T, ::resproj::op::tof_sinogram<T>)                                          \
  Sources(X, T, ::resproj::op::tof_listmode<T>)
#define RESPROJ_GPU_COMPILED_DEVICE_SOURCES(X, T, Op)                                    \
  X(T, Op, ::resproj::lor_view<const T>)                                                 \
  X(T, Op, ::resproj::detector_pairs<T>)                                                 \
  X(T, Op, ::resproj::scanner::sinogram_source<T>)
#define RESPROJ_GPU_COMPILED_HOST_SOURCES(X, T, Op)                                      \
  X(T, Op, ::resproj::lor_view<const T>)                                                 \
  X(T, Op, ::resproj::detector_pairs<T>)                                                 \
  X(T, Op, ::resproj::scanner::listmode_records<T>)
// clang-format on

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {
namespace detail {

/// `true` for the (operation, LOR source) pairs of the instantiation list.
template <class Op, class Lors> struct is_instantiated : std::false_type {};
template <class Op, class HostLors> struct is_instantiated_host : std::false_type {};
#define RESPROJ_GPU_COMPILED_DEVICE_TRAIT(T, Op, Lors)                                   \
  template <> struct is_instantiated<Op, Lors> : std::true_type {};
#define RESPROJ_GPU_COMPILED_HOST_TRAIT(T, Op, Lors)                                     \
  template <> struct is_instantiated_host<Op, Lors> : std::true_type {};
RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_DEVICE_SOURCES,
                                RESPROJ_GPU_COMPILED_DEVICE_TRAIT, float)
RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_DEVICE_SOURCES,
                                RESPROJ_GPU_COMPILED_DEVICE_TRAIT, double)
RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_HOST_SOURCES,
                                RESPROJ_GPU_COMPILED_HOST_TRAIT, float)
RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_HOST_SOURCES,
                                RESPROJ_GPU_COMPILED_HOST_TRAIT, double)
#undef RESPROJ_GPU_COMPILED_DEVICE_TRAIT
#undef RESPROJ_GPU_COMPILED_HOST_TRAIT

template <class Op, class Lors>
using if_instantiated = std::enable_if_t<is_instantiated<Op, Lors>::value>;
template <class T, class Op, class HostLors>
using if_instantiated_host =
    std::enable_if_t<is_instantiated_host<Op, HostLors>::value &&
                     std::is_same_v<resproj::detail::value_of<HostLors>, T>>;

} // namespace detail

/// Number of usable CUDA devices; 0 when there is no device or driver.
int device_count() noexcept;

/// Forward projection of device-resident LORs; see gpu::forward.
/// Asynchronous on `stream`. @throws invalid_argument, gpu_error.
template <class Op, class Lors, class = detail::if_instantiated<Op, Lors>>
void forward(const Op &operation,
             device_image_view<const resproj::detail::value_of<Lors>> image,
             const Lors &lors, span<resproj::detail::value_of<Lors>> out,
             cudaStream_t stream, const tuning &t = {});

/// Back projection (accumulates) of device-resident LORs; see gpu::back.
/// Asynchronous on `stream`. @throws invalid_argument, gpu_error.
template <class Op, class Lors, class = detail::if_instantiated<Op, Lors>>
void back(const Op &operation, device_image_view<resproj::detail::value_of<Lors>> image,
          const Lors &lors, span<const resproj::detail::value_of<Lors>> values,
          cudaStream_t stream, const tuning &t = {});

/// Validates device-resident list-mode records (count of invalid events
/// and the first; see gpu::validate_events). ALLOCATES its workspace and is
/// HOST-BLOCKING. @throws invalid_argument, gpu_error.
scanner::event_check_result validate_events(span<const scanner::listmode_event> events,
                                            std::int64_t num_detectors, int num_tof_bins,
                                            cudaStream_t stream);

/// A resident image (owning; see gpu::device_image), allocated on the
/// current device and ordered on `stream`. Move-only. Converts to its view,
/// so it can be passed to `forward` and `back` directly.
template <class T> class device_image {
public:
  /// @throws gpu_out_of_memory, gpu_error. Does not synchronise.
  device_image(const image_geometry &geometry, cudaStream_t stream);
  ~device_image();
  device_image(device_image &&) noexcept;
  device_image &operator=(device_image &&) noexcept;

  /// Asynchronous copies (block the host for pageable memory).
  /// @throws invalid_argument ("host") for a size mismatch.
  void upload(span<const T> host, cudaStream_t stream);
  void download(span<T> host, cudaStream_t stream) const;
  void zero(cudaStream_t stream);
  device_image_view<T> view();
  device_image_view<const T> view() const;
  operator device_image_view<T>() { return view(); }
  operator device_image_view<const T>() const { return view(); }

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Host-LOR streaming projector (see gpu::lor_streamer): host LORs
/// (`lor_view<const T>` of host arrays; `detector_pairs<T>` and
/// `scanner::listmode_records<T>` with the detector table on the device and
/// the pairs / records on the host), host results. Per-LOR arrays of the
/// operation (bins, TOF sigmas and centre offsets) are host arrays; with
/// `op::tof_listmode{tof}` (no bins) over records, the bins come from the
/// records. Host-blocking. Move-only.
template <class T> class lor_streamer {
public:
  /// @param max_chunk    LORs per chunk; staging is allocated on the current
  ///                     device
  /// @param slots        pipeline depth (>= 2)
  /// @param copy_threads host threads that copy pageable arrays into pinned
  ///                     staging (-1: the library's choice)
  /// @throws invalid_argument, gpu_out_of_memory, gpu_error.
  explicit lor_streamer(std::size_t max_chunk, int slots = 3, int copy_threads = -1);
  ~lor_streamer();
  lor_streamer(lor_streamer &&) noexcept;
  lor_streamer &operator=(lor_streamer &&) noexcept;

  /// Returns when `host_out` holds the results. @throws as gpu::lor_streamer.
  template <class Op, class HostLors,
            class = detail::if_instantiated_host<T, Op, HostLors>>
  void forward(const Op &operation, device_image_view<const T> image,
               const HostLors &host_lors, span<T> host_out, cudaStream_t stream);
  /// Returns when the back projection (accumulates) is complete.
  /// @throws as gpu::lor_streamer.
  template <class Op, class HostLors,
            class = detail::if_instantiated_host<T, Op, HostLors>>
  void back(const Op &operation, device_image_view<T> image, const HostLors &host_lors,
            span<const T> host_values, cudaStream_t stream);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

extern template class device_image<float>;
extern template class device_image<double>;
extern template class lor_streamer<float>;
extern template class lor_streamer<double>;

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
