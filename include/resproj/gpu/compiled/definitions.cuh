/// @file
/// @brief Definitions of the templates declared in gpu/compiled.hpp, and
/// the macros that instantiate them from the instantiation list. Included
/// only by the `.cu` files of the target `resproj::gpu_compiled`.
#pragma once

#include "resproj/gpu/compiled.hpp"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

template <class Op, class Lors, class>
void forward(const Op &operation,
             device_image_view<const resproj::detail::value_of<Lors>> image,
             const Lors &lors, span<resproj::detail::value_of<Lors>> out,
             cudaStream_t stream, const tuning &t) {
  gpu::forward(operation, image, lors, out, stream_ref(stream), t);
}

template <class Op, class Lors, class>
void back(const Op &operation, device_image_view<resproj::detail::value_of<Lors>> image,
          const Lors &lors, span<const resproj::detail::value_of<Lors>> values,
          cudaStream_t stream, const tuning &t) {
  gpu::back(operation, image, lors, values, stream_ref(stream), t);
}

template <class T> struct device_image<T>::impl { gpu::device_image<T> image; };

template <class T> struct lor_streamer<T>::impl { gpu::lor_streamer<T> streamer; };

template <class T>
template <class Op, class HostLors, class>
void lor_streamer<T>::forward(const Op &operation, device_image_view<const T> image,
                              const HostLors &host_lors, span<T> host_out,
                              cudaStream_t stream) {
  impl_->streamer.forward(operation, image, host_lors, host_out, stream_ref(stream));
}

template <class T>
template <class Op, class HostLors, class>
void lor_streamer<T>::back(const Op &operation, device_image_view<T> image,
                           const HostLors &host_lors, span<const T> host_values,
                           cudaStream_t stream) {
  impl_->streamer.back(operation, image, host_lors, host_values, stream_ref(stream));
}

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END

/// `X` arguments of RESPROJ_GPU_COMPILED_OPERATIONS: the explicit
/// instantiation of one entry of the list (at namespace
/// resproj::gpu::compiled).
#define RESPROJ_GPU_COMPILED_FORWARD(T, Op, Lors)                                        \
  template void forward<Op, Lors>(const Op &, device_image_view<const T>, const Lors &,  \
                                  span<T>, cudaStream_t, const tuning &);
#define RESPROJ_GPU_COMPILED_BACK(T, Op, Lors)                                           \
  template void back<Op, Lors>(const Op &, device_image_view<T>, const Lors &,           \
                               span<const T>, cudaStream_t, const tuning &);
#define RESPROJ_GPU_COMPILED_STREAMED_FORWARD(T, Op, Lors)                               \
  template void lor_streamer<T>::forward<Op, Lors>(                                      \
      const Op &, device_image_view<const T>, const Lors &, span<T>, cudaStream_t);
#define RESPROJ_GPU_COMPILED_STREAMED_BACK(T, Op, Lors)                                  \
  template void lor_streamer<T>::back<Op, Lors>(                                         \
      const Op &, device_image_view<T>, const Lors &, span<const T>, cudaStream_t);

/// Instantiates one direction (`FORWARD` or `BACK`) of the whole list for
/// precision T: the resident calls over the device LOR sources and the
/// streamer over the host LOR sources. Kernels of one operation, direction
/// and precision are then compiled in one file only.
#define RESPROJ_GPU_COMPILED_INSTANTIATE(T, DIRECTION)                                   \
  RESPROJ_NAMESPACE_BEGIN                                                                \
  namespace gpu {                                                                        \
  namespace compiled {                                                                   \
  RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_DEVICE_SOURCES,                   \
                                  RESPROJ_GPU_COMPILED_##DIRECTION, T)                   \
  RESPROJ_GPU_COMPILED_OPERATIONS(RESPROJ_GPU_COMPILED_HOST_SOURCES,                     \
                                  RESPROJ_GPU_COMPILED_STREAMED_##DIRECTION, T)          \
  }                                                                                      \
  }                                                                                      \
  RESPROJ_NAMESPACE_END
