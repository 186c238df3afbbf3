// Part of the target resproj::gpu_compiled: the non-template functions and
// the classes of gpu/compiled.hpp. The projections are instantiated by
// float_forward.cu, float_back.cu, double_forward.cu and double_back.cu;
// recon.cu holds gpu/compiled_recon.hpp.
#include "resproj/gpu/compiled/definitions.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/listmode_events.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

int device_count() noexcept { return gpu::device_count(); }

scanner::event_check_result validate_events(span<const scanner::listmode_event> events,
                                            std::int64_t num_detectors, int num_tof_bins,
                                            cudaStream_t stream) {
  return gpu::validate_events(events, num_detectors, num_tof_bins, stream_ref(stream));
}

template <class T>
device_image<T>::device_image(const image_geometry &geometry, cudaStream_t stream)
    : impl_(new impl{gpu::device_image<T>(geometry, stream_ref(stream))}) {}
template <class T> device_image<T>::~device_image() = default;
template <class T> device_image<T>::device_image(device_image &&) noexcept = default;
template <class T>
device_image<T> &device_image<T>::operator=(device_image &&) noexcept = default;
template <class T> void device_image<T>::upload(span<const T> host, cudaStream_t s) {
  impl_->image.upload(host, stream_ref(s));
}
template <class T> void device_image<T>::download(span<T> host, cudaStream_t s) const {
  impl_->image.download(host, stream_ref(s));
}
template <class T> void device_image<T>::zero(cudaStream_t s) {
  impl_->image.zero(stream_ref(s));
}
template <class T> device_image_view<T> device_image<T>::view() {
  return impl_->image.view();
}
template <class T> device_image_view<const T> device_image<T>::view() const {
  return impl_->image.cview();
}

template <class T>
lor_streamer<T>::lor_streamer(std::size_t max_chunk, int slots, int copy_threads)
    : impl_(new impl{gpu::lor_streamer<T>(max_chunk, slots, copy_threads)}) {}
template <class T> lor_streamer<T>::~lor_streamer() = default;
template <class T> lor_streamer<T>::lor_streamer(lor_streamer &&) noexcept = default;
template <class T>
lor_streamer<T> &lor_streamer<T>::operator=(lor_streamer &&) noexcept = default;

template class device_image<float>;
template class device_image<double>;
template class lor_streamer<float>;
template class lor_streamer<double>;

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
