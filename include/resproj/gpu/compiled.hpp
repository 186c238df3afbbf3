/// @file
/// @brief Host-only declarations of the GPU backend for translation units
/// compiled by a plain C++ compiler (g++, as in STIR). Link the target
/// `resproj::gpu_compiled`, which instantiates these for float and double
/// from one `.cu` file. No CUDA type appears here except `cudaStream_t`.
///
/// Semantics are those of the header-only `resproj::gpu` calls of the same
/// names (gpu/projector.cuh, gpu/device_image.cuh, gpu/lor_streamer.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <driver_types.h> // cudaStream_t only

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/scanner/listmode.hpp"
#include "resproj/scanner/sinogram_source.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

/// Number of usable CUDA devices; 0 when there is no device or driver.
int device_count() noexcept;

/// Non-TOF forward projection; see gpu::forward. Asynchronous on `stream`.
/// @throws invalid_argument, gpu_error.
void forward(device_image_view<const float> image, lor_view<const float> lors,
             span<float> out, cudaStream_t stream);
void forward(device_image_view<const double> image, lor_view<const double> lors,
             span<double> out, cudaStream_t stream);

/// Non-TOF back projection (accumulates); see gpu::back. Asynchronous.
/// @throws invalid_argument, gpu_error.
void back(device_image_view<float> image, lor_view<const float> lors,
          span<const float> values, cudaStream_t stream);
void back(device_image_view<double> image, lor_view<const double> lors,
          span<const double> values, cudaStream_t stream);

/// Non-TOF forward projection of detector pairs (resident detector table
/// and pairs) or of a sinogram-described subset (device views and plane
/// table); see gpu::forward. Sinogram sources run with lanes along planes
/// (`launch_options::rows`). Asynchronous on `stream`.
/// @throws invalid_argument, gpu_error.
void forward(device_image_view<const float> image, const detector_pairs<float> &lors,
             span<float> out, cudaStream_t stream);
void forward(device_image_view<const float> image,
             const scanner::sinogram_source<float> &lors, span<float> out,
             cudaStream_t stream);
void forward(device_image_view<const double> image, const detector_pairs<double> &lors,
             span<double> out, cudaStream_t stream);
void forward(device_image_view<const double> image,
             const scanner::sinogram_source<double> &lors, span<double> out,
             cudaStream_t stream);

/// Non-TOF back projection (accumulates) of the same sources; see
/// gpu::back. Asynchronous. @throws invalid_argument, gpu_error.
void back(device_image_view<float> image, const detector_pairs<float> &lors,
          span<const float> values, cudaStream_t stream);
void back(device_image_view<float> image, const scanner::sinogram_source<float> &lors,
          span<const float> values, cudaStream_t stream);
void back(device_image_view<double> image, const detector_pairs<double> &lors,
          span<const double> values, cudaStream_t stream);
void back(device_image_view<double> image, const scanner::sinogram_source<double> &lors,
          span<const double> values, cudaStream_t stream);

/// TOF sinogram forward projection (explicit end points, detector pairs,
/// sinogram source); see gpu::forward_tof_sino. Asynchronous.
/// @throws invalid_argument, gpu_error.
void forward_tof_sino(device_image_view<const float> image, lor_view<const float> lors,
                      const tof_params<float> &tof, span<float> out, cudaStream_t stream);
void forward_tof_sino(device_image_view<const float> image,
                      const detector_pairs<float> &lors, const tof_params<float> &tof,
                      span<float> out, cudaStream_t stream);
void forward_tof_sino(device_image_view<const float> image,
                      const scanner::sinogram_source<float> &lors,
                      const tof_params<float> &tof, span<float> out, cudaStream_t stream);
void forward_tof_sino(device_image_view<const double> image, lor_view<const double> lors,
                      const tof_params<double> &tof, span<double> out,
                      cudaStream_t stream);
void forward_tof_sino(device_image_view<const double> image,
                      const detector_pairs<double> &lors, const tof_params<double> &tof,
                      span<double> out, cudaStream_t stream);
void forward_tof_sino(device_image_view<const double> image,
                      const scanner::sinogram_source<double> &lors,
                      const tof_params<double> &tof, span<double> out,
                      cudaStream_t stream);

/// TOF sinogram back projection (accumulates); see gpu::back_tof_sino.
/// Asynchronous. @throws invalid_argument, gpu_error.
void back_tof_sino(device_image_view<float> image, lor_view<const float> lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream);
void back_tof_sino(device_image_view<float> image, const detector_pairs<float> &lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream);
void back_tof_sino(device_image_view<float> image,
                   const scanner::sinogram_source<float> &lors,
                   const tof_params<float> &tof, span<const float> values,
                   cudaStream_t stream);
void back_tof_sino(device_image_view<double> image, lor_view<const double> lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream);
void back_tof_sino(device_image_view<double> image, const detector_pairs<double> &lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream);
void back_tof_sino(device_image_view<double> image,
                   const scanner::sinogram_source<double> &lors,
                   const tof_params<double> &tof, span<const double> values,
                   cudaStream_t stream);

/// TOF list-mode forward projection (explicit end points, detector pairs;
/// device bins); see gpu::forward_tof_lm. Asynchronous.
/// @throws invalid_argument, gpu_error.
void forward_tof_lm(device_image_view<const float> image, lor_view<const float> lors,
                    span<const std::int16_t> bins, const tof_params<float> &tof,
                    span<float> out, cudaStream_t stream);
void forward_tof_lm(device_image_view<const float> image,
                    const detector_pairs<float> &lors, span<const std::int16_t> bins,
                    const tof_params<float> &tof, span<float> out, cudaStream_t stream);
void forward_tof_lm(device_image_view<const double> image, lor_view<const double> lors,
                    span<const std::int16_t> bins, const tof_params<double> &tof,
                    span<double> out, cudaStream_t stream);
void forward_tof_lm(device_image_view<const double> image,
                    const detector_pairs<double> &lors, span<const std::int16_t> bins,
                    const tof_params<double> &tof, span<double> out, cudaStream_t stream);

/// TOF list-mode back projection (accumulates); see gpu::back_tof_lm.
/// Asynchronous. @throws invalid_argument, gpu_error.
void back_tof_lm(device_image_view<float> image, lor_view<const float> lors,
                 span<const std::int16_t> bins, const tof_params<float> &tof,
                 span<const float> values, cudaStream_t stream);
void back_tof_lm(device_image_view<float> image, const detector_pairs<float> &lors,
                 span<const std::int16_t> bins, const tof_params<float> &tof,
                 span<const float> values, cudaStream_t stream);
void back_tof_lm(device_image_view<double> image, lor_view<const double> lors,
                 span<const std::int16_t> bins, const tof_params<double> &tof,
                 span<const double> values, cudaStream_t stream);
void back_tof_lm(device_image_view<double> image, const detector_pairs<double> &lors,
                 span<const std::int16_t> bins, const tof_params<double> &tof,
                 span<const double> values, cudaStream_t stream);

/// Validates device-resident list-mode records (count of invalid events
/// and the first; see gpu::validate_events). ALLOCATES its workspace and is
/// HOST-BLOCKING. @throws invalid_argument, gpu_error.
scanner::event_check_result validate_events(span<const scanner::listmode_event> events,
                                            std::int64_t num_detectors, int num_tof_bins,
                                            cudaStream_t stream);

/// A resident image (owning; see gpu::device_image), allocated on the
/// current device and ordered on `stream`. Move-only.
template <class T> class resident_image {
public:
  /// @throws gpu_out_of_memory, gpu_error. Does not synchronise.
  resident_image(const image_geometry &geometry, cudaStream_t stream);
  ~resident_image();
  resident_image(resident_image &&) noexcept;
  resident_image &operator=(resident_image &&) noexcept;

  /// Asynchronous copies (block the host for pageable memory).
  /// @throws invalid_argument ("host") for a size mismatch.
  void upload(span<const T> host, cudaStream_t stream);
  void download(span<T> host, cudaStream_t stream) const;
  void zero(cudaStream_t stream);
  device_image_view<T> view();
  device_image_view<const T> view() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Host-LOR streaming projector (see gpu::lor_streamer). Host-blocking.
template <class T> class host_lor_projector {
public:
  /// @param max_chunk LORs per chunk; staging is allocated on the current
  ///                  device. @throws invalid_argument, gpu_error.
  explicit host_lor_projector(std::size_t max_chunk);
  ~host_lor_projector();
  host_lor_projector(host_lor_projector &&) noexcept;
  host_lor_projector &operator=(host_lor_projector &&) noexcept;

  /// Returns when `host_out` holds the results. @throws as gpu::lor_streamer.
  void forward(device_image_view<const T> image, lor_view<const T> host_lors,
               span<T> host_out, cudaStream_t stream);
  /// Returns when the back projection is complete.
  void back(device_image_view<T> image, lor_view<const T> host_lors,
            span<const T> host_values, cudaStream_t stream);

  /// Host detector pairs against a resident detector table
  /// (`host_lors.detectors` device memory, `host_lors.pairs` host memory):
  /// 8 bytes per LOR over the bus. Host-blocking.
  void forward(device_image_view<const T> image, const detector_pairs<T> &host_lors,
               span<T> host_out, cudaStream_t stream);
  void back(device_image_view<T> image, const detector_pairs<T> &host_lors,
            span<const T> host_values, cudaStream_t stream);
  /// Host packed list-mode records against a resident detector table
  /// (`detectors`: device, xyz per detector): 10 bytes per event over the
  /// bus; TOF bins ignored. Host-blocking.
  void forward(device_image_view<const T> image, span<const T> detectors,
               span<const scanner::listmode_event> host_events, span<T> host_out,
               cudaStream_t stream);
  void back(device_image_view<T> image, span<const T> detectors,
            span<const scanner::listmode_event> host_events, span<const T> host_values,
            cudaStream_t stream);
  /// TOF list-mode of host detector pairs and host bins. Host-blocking.
  void forward_tof_lm(device_image_view<const T> image,
                      const detector_pairs<T> &host_lors,
                      span<const std::int16_t> host_bins, const tof_params<T> &tof,
                      span<T> host_out, cudaStream_t stream);
  void back_tof_lm(device_image_view<T> image, const detector_pairs<T> &host_lors,
                   span<const std::int16_t> host_bins, const tof_params<T> &tof,
                   span<const T> host_values, cudaStream_t stream);
  /// TOF list-mode of host packed records (pairs and bins). Host-blocking.
  void forward_tof_lm(device_image_view<const T> image, span<const T> detectors,
                      span<const scanner::listmode_event> host_events,
                      const tof_params<T> &tof, span<T> host_out, cudaStream_t stream);
  void back_tof_lm(device_image_view<T> image, span<const T> detectors,
                   span<const scanner::listmode_event> host_events,
                   const tof_params<T> &tof, span<const T> host_values,
                   cudaStream_t stream);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

extern template class resident_image<float>;
extern template class resident_image<double>;
extern template class host_lor_projector<float>;
extern template class host_lor_projector<double>;

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
