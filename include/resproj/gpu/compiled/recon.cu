// Part of the target resproj::gpu_compiled: the reconstruction calls of
// gpu/compiled_recon.hpp (sensitivity image, list-mode events into device
// memory, list-mode OSEM) over the header-only recon layer.
#include <cstddef>
#include <string>
#include <utility>

#include "resproj/core/errors.hpp"
#include "resproj/gpu/compiled_recon.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/gpu_all_lor_sensitivity.cuh"
#include "resproj/recon/gpu_listmode_setup.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace compiled {

namespace {
stream_ref explicit_stream(cudaStream_t s) {
  gpu::detail::require_explicit_stream(stream_ref(s), "stream");
  return stream_ref(s);
}
} // namespace

/// Members in construction order: the data keeps references to the subsets
/// and their device tables, the backend to the data.
struct listmode_osem::impl {
  recon::sinogram_subsets sub;
  stream_ref s;
  recon::device_sinogram_subsets dsub;
  device_file_io io;
  recon::phase_table phases;
  recon::gpu_listmode_data data;
  recon::stopwatch backend_clock; ///< started once the data are ready
  recon::gpu_listmode_backend backend;

  impl(const recon::sinogram_subsets &subsets, const recon::corrections &c,
       const tof_params<float> &tof, const std::string &path, cudaStream_t stream)
      : sub(subsets), s(explicit_stream(stream)), dsub(sub, s),
        data(sub, dsub, io, path, c, tof, s, &phases),
        backend(data.backend(recon::start_image(sub.image, 1.f))) {
    backend.opt.check_pointers = false; // every pointer is ours
    s.synchronize();                    // the start image's upload
    phases.add("backend", "OSEM backend set-up", backend_clock.lap());
  }

  /// Adds `seconds` and `items` to the phase `key`, created on first use.
  void add_phase(const char *key, const char *name, double seconds, double items,
                 const char *item_name) {
    for (auto &p : phases.phases)
      if (p.key == key) {
        p.seconds += seconds;
        p.items += items;
        return;
      }
    phases.add(key, name, seconds, items, item_name);
  }
};

listmode_osem::listmode_osem(const recon::sinogram_subsets &subsets,
                             const recon::corrections &corrections,
                             const tof_params<float> &tof, const std::string &path,
                             cudaStream_t stream)
    : impl_(new impl(subsets, corrections, tof, path, stream)) {}
listmode_osem::~listmode_osem() = default;
listmode_osem::listmode_osem(listmode_osem &&) noexcept = default;
listmode_osem &listmode_osem::operator=(listmode_osem &&) noexcept = default;

void listmode_osem::run(int iterations, const recon::osem_callback &progress) {
  recon::stopwatch w;
  recon::osem(impl_->backend, iterations, progress);
  impl_->add_phase("osem", "OSEM iterations", w.lap(),
                   double(num_events()) * double(iterations), "events");
}

void listmode_osem::image(span<float> host) const {
  impl_->backend.x.download(host, impl_->s);
  impl_->s.synchronize();
}

device_image_view<float> listmode_osem::image_view() { return impl_->backend.x.view(); }
device_image_view<const float> listmode_osem::image_view() const {
  return impl_->backend.x.cview();
}

void listmode_osem::write_nifti(const std::string &path) {
  recon::stopwatch w;
  write_nifti_from_device(impl_->io, path, impl_->backend.x, impl_->s);
  impl_->s.synchronize();
  impl_->add_phase("nifti", "write NIfTI (device -> file)", w.lap(), 0, "");
}

std::size_t listmode_osem::num_events() const { return impl_->data.count(); }

const recon::phase_table &listmode_osem::phases() const { return impl_->phases; }

void sensitivity_image(const recon::sinogram_subsets &subsets,
                       const recon::corrections &corrections,
                       device_image_view<float> out, cudaStream_t stream) {
  const stream_ref s = explicit_stream(stream);
  if (out.geometry != subsets.image)
    resproj::detail::throw_invalid("out", "geometry is not the subsets' image");
  if (out.data == nullptr)
    resproj::detail::throw_invalid("out.data", "null");
  gpu::require_device_pointer(out.data, out.device, "out.data");
  const recon::device_sinogram_subsets dsub(subsets, s);
  const recon::device_corrections dc(corrections, subsets, s);
  device_buffer<float> work(subsets.max_subset_count(), s);
  recon::gpu_sensitivity(subsets, dsub, dc, work.span(), out, s);
  s.synchronize();
}

void all_lor_sensitivity(const scanner::polygon_scanner &scanner,
                         const image_geometry &geometry, span<const float> mu,
                         device_image_view<float> out, cudaStream_t stream,
                         recon::all_lor_sensitivity_stats *stats) {
  const stream_ref s = explicit_stream(stream);
  recon::gpu_all_lor_sensitivity(scanner, geometry, mu, out, s, stats);
}

struct device_listmode_events::impl {
  recon::device_events events;
  int device = 0;
};

device_listmode_events::device_listmode_events(const std::string &path,
                                               std::int64_t num_detectors,
                                               int num_tof_bins, cudaStream_t stream)
    : impl_(new impl) {
  const stream_ref s = explicit_stream(stream);
  device_file_io io;
  impl_->events = recon::read_events_to_device(io, path, num_detectors, num_tof_bins, s);
  impl_->device = current_device();
  s.synchronize();
}
device_listmode_events::~device_listmode_events() = default;
device_listmode_events::device_listmode_events(device_listmode_events &&) noexcept =
    default;
device_listmode_events &
device_listmode_events::operator=(device_listmode_events &&) noexcept = default;

std::size_t device_listmode_events::count() const { return impl_->events.count(); }
const std::int32_t *device_listmode_events::pairs() const {
  return impl_->events.pairs.data();
}
const std::int16_t *device_listmode_events::bins() const {
  return impl_->events.bins.data();
}
int device_listmode_events::device() const { return impl_->device; }

} // namespace compiled
} // namespace gpu
RESPROJ_NAMESPACE_END
