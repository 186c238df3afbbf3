// The optional compiled target `resproj::gpu_compiled`: instantiates the
// host-only API of gpu/compiled.hpp for float and double, so that code
// built by a plain C++ compiler can use the GPU backend.
#include "resproj/gpu/compiled.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/listmode_events.cuh"

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

namespace detail {
/// Launch options of the compiled calls: sinogram sources take lanes along
/// planes when the planes divide the count; other sources the defaults.
template <class Lors> launch_options options_for(const Lors &) { return {}; }
template <class T> launch_options options_for(const scanner::sinogram_source<T> &lors) {
  launch_options opt;
  if (lors.num_planes > 1 && lors.count % std::size_t(lors.num_planes) == 0)
    opt.rows = std::size_t(lors.num_planes);
  return opt;
}
} // namespace detail

void forward(device_image_view<const float> image, const detector_pairs<float> &lors,
             span<float> out, cudaStream_t stream) {
  gpu::forward<float>(image, lors, out, detail::options_for(lors), stream_ref(stream));
}
void forward(device_image_view<const float> image,
             const scanner::sinogram_source<float> &lors, span<float> out,
             cudaStream_t stream) {
  gpu::forward<float>(image, lors, out, detail::options_for(lors), stream_ref(stream));
}
void forward(device_image_view<const double> image, const detector_pairs<double> &lors,
             span<double> out, cudaStream_t stream) {
  gpu::forward<double>(image, lors, out, detail::options_for(lors), stream_ref(stream));
}
void forward(device_image_view<const double> image,
             const scanner::sinogram_source<double> &lors, span<double> out,
             cudaStream_t stream) {
  gpu::forward<double>(image, lors, out, detail::options_for(lors), stream_ref(stream));
}

void back(device_image_view<float> image, const detector_pairs<float> &lors,
          span<const float> values, cudaStream_t stream) {
  gpu::back<float>(image, lors, values, detail::options_for(lors), stream_ref(stream));
}
void back(device_image_view<float> image, const scanner::sinogram_source<float> &lors,
          span<const float> values, cudaStream_t stream) {
  gpu::back<float>(image, lors, values, detail::options_for(lors), stream_ref(stream));
}
void back(device_image_view<double> image, const detector_pairs<double> &lors,
          span<const double> values, cudaStream_t stream) {
  gpu::back<double>(image, lors, values, detail::options_for(lors), stream_ref(stream));
}
void back(device_image_view<double> image, const scanner::sinogram_source<double> &lors,
          span<const double> values, cudaStream_t stream) {
  gpu::back<double>(image, lors, values, detail::options_for(lors), stream_ref(stream));
}

void forward_tof_sino(device_image_view<const float> image, lor_view<const float> lors,
                      const tof_params<float> &tof, span<float> out,
                      cudaStream_t stream) {
  gpu::forward_tof_sino<float>(image, lors, tof, out, detail::options_for(lors),
                               stream_ref(stream));
}
void forward_tof_sino(device_image_view<const float> image,
                      const detector_pairs<float> &lors, const tof_params<float> &tof,
                      span<float> out, cudaStream_t stream) {
  gpu::forward_tof_sino<float>(image, lors, tof, out, detail::options_for(lors),
                               stream_ref(stream));
}
void forward_tof_sino(device_image_view<const float> image,
                      const scanner::sinogram_source<float> &lors,
                      const tof_params<float> &tof, span<float> out,
                      cudaStream_t stream) {
  gpu::forward_tof_sino<float>(image, lors, tof, out, detail::options_for(lors),
                               stream_ref(stream));
}
void forward_tof_sino(device_image_view<const double> image, lor_view<const double> lors,
                      const tof_params<double> &tof, span<double> out,
                      cudaStream_t stream) {
  gpu::forward_tof_sino<double>(image, lors, tof, out, detail::options_for(lors),
                                stream_ref(stream));
}
void forward_tof_sino(device_image_view<const double> image,
                      const detector_pairs<double> &lors, const tof_params<double> &tof,
                      span<double> out, cudaStream_t stream) {
  gpu::forward_tof_sino<double>(image, lors, tof, out, detail::options_for(lors),
                                stream_ref(stream));
}
void forward_tof_sino(device_image_view<const double> image,
                      const scanner::sinogram_source<double> &lors,
                      const tof_params<double> &tof, span<double> out,
                      cudaStream_t stream) {
  gpu::forward_tof_sino<double>(image, lors, tof, out, detail::options_for(lors),
                                stream_ref(stream));
}

void back_tof_sino(device_image_view<float> image, lor_view<const float> lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<float>(image, lors, tof, values, detail::options_for(lors),
                            stream_ref(stream));
}
void back_tof_sino(device_image_view<float> image, const detector_pairs<float> &lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<float>(image, lors, tof, values, detail::options_for(lors),
                            stream_ref(stream));
}
void back_tof_sino(device_image_view<float> image,
                   const scanner::sinogram_source<float> &lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<float>(image, lors, tof, values, detail::options_for(lors),
                            stream_ref(stream));
}
void back_tof_sino(device_image_view<double> image, lor_view<const double> lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<double>(image, lors, tof, values, detail::options_for(lors),
                             stream_ref(stream));
}
void back_tof_sino(device_image_view<double> image, const detector_pairs<double> &lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<double>(image, lors, tof, values, detail::options_for(lors),
                             stream_ref(stream));
}
void back_tof_sino(device_image_view<double> image,
                   const scanner::sinogram_source<double> &lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream) {
  gpu::back_tof_sino<double>(image, lors, tof, values, detail::options_for(lors),
                             stream_ref(stream));
}

void forward_tof_lm(device_image_view<const float> image, lor_view<const float> lors,
                    span<const std::int16_t> bins, const tof_params<float> &tof,
                    span<float> out, cudaStream_t stream) {
  gpu::forward_tof_lm<float>(image, lors, bins, tof, out, detail::options_for(lors),
                             stream_ref(stream));
}
void forward_tof_lm(device_image_view<const float> image,
                    const detector_pairs<float> &lors, span<const std::int16_t> bins,
                    const tof_params<float> &tof, span<float> out, cudaStream_t stream) {
  gpu::forward_tof_lm<float>(image, lors, bins, tof, out, detail::options_for(lors),
                             stream_ref(stream));
}
void forward_tof_lm(device_image_view<const double> image, lor_view<const double> lors,
                    span<const std::int16_t> bins, const tof_params<double> &tof,
                    span<double> out, cudaStream_t stream) {
  gpu::forward_tof_lm<double>(image, lors, bins, tof, out, detail::options_for(lors),
                              stream_ref(stream));
}
void forward_tof_lm(device_image_view<const double> image,
                    const detector_pairs<double> &lors, span<const std::int16_t> bins,
                    const tof_params<double> &tof, span<double> out,
                    cudaStream_t stream) {
  gpu::forward_tof_lm<double>(image, lors, bins, tof, out, detail::options_for(lors),
                              stream_ref(stream));
}

void back_tof_lm(device_image_view<float> image, lor_view<const float> lors,
                 span<const std::int16_t> bins, const tof_params<float> &tof,
                 span<const float> values, cudaStream_t stream) {
  gpu::back_tof_lm<float>(image, lors, bins, tof, values, detail::options_for(lors),
                          stream_ref(stream));
}
void back_tof_lm(device_image_view<float> image, const detector_pairs<float> &lors,
                 span<const std::int16_t> bins, const tof_params<float> &tof,
                 span<const float> values, cudaStream_t stream) {
  gpu::back_tof_lm<float>(image, lors, bins, tof, values, detail::options_for(lors),
                          stream_ref(stream));
}
void back_tof_lm(device_image_view<double> image, lor_view<const double> lors,
                 span<const std::int16_t> bins, const tof_params<double> &tof,
                 span<const double> values, cudaStream_t stream) {
  gpu::back_tof_lm<double>(image, lors, bins, tof, values, detail::options_for(lors),
                           stream_ref(stream));
}
void back_tof_lm(device_image_view<double> image, const detector_pairs<double> &lors,
                 span<const std::int16_t> bins, const tof_params<double> &tof,
                 span<const double> values, cudaStream_t stream) {
  gpu::back_tof_lm<double>(image, lors, bins, tof, values, detail::options_for(lors),
                           stream_ref(stream));
}

scanner::event_check_result validate_events(span<const scanner::listmode_event> events,
                                            std::int64_t num_detectors, int num_tof_bins,
                                            cudaStream_t stream) {
  return gpu::validate_events(events, num_detectors, num_tof_bins, stream_ref(stream));
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

template <class T>
void host_lor_projector<T>::forward(device_image_view<const T> image,
                                    const detector_pairs<T> &host_lors, span<T> host_out,
                                    cudaStream_t s) {
  impl_->streamer.forward(image, host_lors, host_out, stream_ref(s));
}
template <class T>
void host_lor_projector<T>::back(device_image_view<T> image,
                                 const detector_pairs<T> &host_lors,
                                 span<const T> host_values, cudaStream_t s) {
  impl_->streamer.back(image, host_lors, host_values, stream_ref(s));
}
template <class T>
void host_lor_projector<T>::forward(device_image_view<const T> image,
                                    span<const T> detectors,
                                    span<const scanner::listmode_event> host_events,
                                    span<T> host_out, cudaStream_t s) {
  impl_->streamer.forward(image, detectors, host_events, host_out, stream_ref(s));
}
template <class T>
void host_lor_projector<T>::back(device_image_view<T> image, span<const T> detectors,
                                 span<const scanner::listmode_event> host_events,
                                 span<const T> host_values, cudaStream_t s) {
  impl_->streamer.back(image, detectors, host_events, host_values, stream_ref(s));
}
template <class T>
void host_lor_projector<T>::forward_tof_lm(device_image_view<const T> image,
                                           const detector_pairs<T> &host_lors,
                                           span<const std::int16_t> host_bins,
                                           const tof_params<T> &tof, span<T> host_out,
                                           cudaStream_t s) {
  impl_->streamer.forward_tof_lm(image, host_lors, host_bins, tof, host_out,
                                 stream_ref(s));
}
template <class T>
void host_lor_projector<T>::back_tof_lm(device_image_view<T> image,
                                        const detector_pairs<T> &host_lors,
                                        span<const std::int16_t> host_bins,
                                        const tof_params<T> &tof,
                                        span<const T> host_values, cudaStream_t s) {
  impl_->streamer.back_tof_lm(image, host_lors, host_bins, tof, host_values,
                              stream_ref(s));
}
template <class T>
void host_lor_projector<T>::forward_tof_lm(
    device_image_view<const T> image, span<const T> detectors,
    span<const scanner::listmode_event> host_events, const tof_params<T> &tof,
    span<T> host_out, cudaStream_t s) {
  impl_->streamer.forward_tof_lm(image, detectors, host_events, tof, host_out,
                                 stream_ref(s));
}
template <class T>
void host_lor_projector<T>::back_tof_lm(device_image_view<T> image,
                                        span<const T> detectors,
                                        span<const scanner::listmode_event> host_events,
                                        const tof_params<T> &tof,
                                        span<const T> host_values, cudaStream_t s) {
  impl_->streamer.back_tof_lm(image, detectors, host_events, tof, host_values,
                              stream_ref(s));
}

template class resident_image<float>;
template class resident_image<double>;
template class host_lor_projector<float>;
template class host_lor_projector<double>;

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
