// The optional compiled target `resproj::gpu_compiled`: instantiates the
// host-only API of gpu/compiled.hpp for float and double, so that code
// built by a plain C++ compiler can use the GPU backend.
#include "resproj/gpu/compiled.hpp"
#include "resproj/gpu/gpu.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

int device_count() noexcept { return gpu::device_count(); }

void forward(device_image_view<const float> image, lor_view<const float> lors,
             span<float> out, cudaStream_t stream) {
  gpu::forward<float>(image, lors, out, stream_ref(stream));
}
void forward(device_image_view<const double> image, lor_view<const double> lors,
             span<double> out, cudaStream_t stream) {
  gpu::forward<double>(image, lors, out, stream_ref(stream));
}
void back(device_image_view<float> image, lor_view<const float> lors,
          span<const float> values, cudaStream_t stream) {
  gpu::back<float>(image, lors, values, stream_ref(stream));
}
void back(device_image_view<double> image, lor_view<const double> lors,
          span<const double> values, cudaStream_t stream) {
  gpu::back<double>(image, lors, values, stream_ref(stream));
}

template <class T> struct resident_image<T>::impl { device_image<T> image; };

template <class T>
resident_image<T>::resident_image(const image_geometry &geometry, cudaStream_t stream)
    : impl_(new impl{device_image<T>(geometry, stream_ref(stream))}) {}
template <class T> resident_image<T>::~resident_image() = default;
template <class T>
resident_image<T>::resident_image(resident_image &&) noexcept = default;
template <class T>
resident_image<T> &resident_image<T>::operator=(resident_image &&) noexcept = default;
template <class T> void resident_image<T>::upload(span<const T> host, cudaStream_t s) {
  impl_->image.upload(host, stream_ref(s));
}
template <class T> void resident_image<T>::download(span<T> host, cudaStream_t s) const {
  impl_->image.download(host, stream_ref(s));
}
template <class T> void resident_image<T>::zero(cudaStream_t s) {
  impl_->image.zero(stream_ref(s));
}
template <class T> device_image_view<T> resident_image<T>::view() {
  return impl_->image.view();
}
template <class T> device_image_view<const T> resident_image<T>::view() const {
  return impl_->image.cview();
}

template <class T> struct host_lor_projector<T>::impl { lor_streamer<T> streamer; };

template <class T>
host_lor_projector<T>::host_lor_projector(std::size_t max_chunk)
    : impl_(new impl{lor_streamer<T>(max_chunk)}) {}
template <class T> host_lor_projector<T>::~host_lor_projector() = default;
template <class T>
host_lor_projector<T>::host_lor_projector(host_lor_projector &&) noexcept = default;
template <class T>
host_lor_projector<T> &
host_lor_projector<T>::operator=(host_lor_projector &&) noexcept = default;
template <class T>
void host_lor_projector<T>::forward(device_image_view<const T> image,
                                    lor_view<const T> host_lors, span<T> host_out,
                                    cudaStream_t s) {
  impl_->streamer.forward(image, host_lors, host_out, stream_ref(s));
}
template <class T>
void host_lor_projector<T>::back(device_image_view<T> image, lor_view<const T> host_lors,
                                 span<const T> host_values, cudaStream_t s) {
  impl_->streamer.back(image, host_lors, host_values, stream_ref(s));
}

template class resident_image<float>;
template class resident_image<double>;
template class host_lor_projector<float>;
template class host_lor_projector<double>;

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
