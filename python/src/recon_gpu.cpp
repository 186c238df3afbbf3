// The GPU reconstruction for the extension module (sensitivity images,
// list-mode events in device memory, list-mode OSEM): the compiled
// reconstruction of resproj::gpu_compiled (gpu/compiled_recon.hpp), on the
// caller's stream or a stream of its own, with the resident image exported
// without copies (DLPack, CUDA array interface). Compiled by the host
// compiler, only when the binding is built with the GPU backend.
#include <cuda_runtime_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "gpu_api.hpp"
#include "gpu_util.hpp"
#include "module_parts.hpp"
#include "recon_common.hpp"
#include "resproj/gpu/compiled_recon.hpp"
#include "resproj/scanner/polygon_scanner.hpp"

namespace resproj_py {
namespace {

namespace rp = resproj;
namespace rs = resproj::scanner;
namespace gc = resproj::gpu::compiled;
using namespace nb::literals;

/// `gc::listmode_osem` on `device`, on the caller's stream or on a
/// non-blocking stream of its own (created here, destroyed last).
class gpu_listmode_osem {
public:
  gpu_listmode_osem(const rr::sinogram_subsets &sub, const rr::corrections &c,
                    const rp::tof_params<float> &tof, const std::string &path, int device,
                    std::optional<std::uintptr_t> stream)
      : device_(device), geometry_(sub.image) {
    const device_scope scope(device_);
    if (stream) {
      stream_ = reinterpret_cast<cudaStream_t>(*stream);
    } else {
      check_cuda(cudaStreamCreateWithFlags(&owned_, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags");
      stream_ = owned_;
    }
    try {
      osem_ = std::make_unique<gc::listmode_osem>(sub, c, tof, path, stream_);
    } catch (...) {
      release();
      throw;
    }
  }
  ~gpu_listmode_osem() { release(); }
  gpu_listmode_osem(const gpu_listmode_osem &) = delete;
  gpu_listmode_osem &operator=(const gpu_listmode_osem &) = delete;

  void run(int iterations, const rr::osem_callback &progress) {
    const device_scope scope(device_);
    osem_->run(iterations, progress);
  }
  void image(rp::span<float> host) const {
    const device_scope scope(device_);
    osem_->image(host);
  }
  void write_nifti(const std::string &path) {
    const device_scope scope(device_);
    osem_->write_nifti(path);
  }
  float *data() { return osem_->image_view().data; }
  const rp::image_geometry &geometry() const { return geometry_; }
  int device() const { return device_; }
  std::uintptr_t stream() const { return reinterpret_cast<std::uintptr_t>(stream_); }
  std::size_t num_events() const { return osem_->num_events(); }
  const rr::phase_table &phases() const { return osem_->phases(); }
  call_gate &gate() { return gate_; }
  /// Keeps the caller's Python stream object (if any) alive as long as
  /// this object: the stream must outlive the reconstruction, whose device
  /// memory is freed in stream order on it. Needs the GIL.
  void keep_stream(nb::object stream) { stream_owner_ = std::move(stream); }

private:
  /// Frees the reconstruction, then the stream of our own. Waits for the
  /// device first: arrays exported from the image may still be read by
  /// work of other streams.
  void release() noexcept {
    if (!osem_ && !owned_)
      return;
    int previous = 0;
    const bool got = cudaGetDevice(&previous) == cudaSuccess;
    cudaSetDevice(device_);
    cudaDeviceSynchronize();
    osem_.reset();
    if (owned_) {
      cudaStreamSynchronize(owned_);
      cudaStreamDestroy(owned_);
      owned_ = nullptr;
    }
    if (got)
      cudaSetDevice(previous);
  }

  nb::object stream_owner_; ///< first member: released after everything else
  int device_;
  rp::image_geometry geometry_;
  cudaStream_t owned_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<gc::listmode_osem> osem_;
  call_gate gate_;
};

/// `gc::device_listmode_events` read on `device`, on the caller's stream.
class gpu_listmode_events {
public:
  gpu_listmode_events(const std::string &path, std::int64_t num_detectors,
                      int num_tof_bins, int device, std::uintptr_t stream)
      : device_(device) {
    on_caller_stream(device, stream, [&](std::uintptr_t s) {
      events_ = std::make_unique<gc::device_listmode_events>(
          path, num_detectors, num_tof_bins, reinterpret_cast<cudaStream_t>(s));
    });
  }
  ~gpu_listmode_events() {
    const device_scope scope(device_);
    events_.reset();
  }
  gpu_listmode_events(const gpu_listmode_events &) = delete;
  gpu_listmode_events &operator=(const gpu_listmode_events &) = delete;
  const gc::device_listmode_events &events() const { return *events_; }
  int device() const { return device_; }

private:
  int device_;
  std::unique_ptr<gc::device_listmode_events> events_;
};

} // namespace

void bind_recon_gpu(nb::module_ &m) {
  m.def(
      "gpu_sensitivity",
      [](const rr::sinogram_subsets &sub, const in_array &efficiency, const in_array &mu,
         double scale, const out_arg &out, std::uintptr_t stream) {
        const rr::corrections c = corrections_of(sub, efficiency, mu, scale, 0.0);
        const array_info o = info_of(out);
        const place where = place_of(o, "out");
        if (!where.cuda)
          throw nb::value_error(
              "out: a host array; the GPU sensitivity needs a CUDA array");
        const auto &g = sub.image.shape();
        check_array(o, "out", dt<float>(), "the sensitivity is float32",
                    {g[0], g[1], g[2]}, true, where, "out");
        const nb::gil_scoped_release release;
        on_caller_stream(where.id, stream, [&](std::uintptr_t s) {
          gc::sensitivity_image(sub, c,
                                rp::gpu::device_image_view<float>(
                                    static_cast<float *>(o.data), sub.image, where.id),
                                reinterpret_cast<cudaStream_t>(s));
        });
      },
      "subsets"_a, "efficiency"_a, "mu"_a, "scale"_a, "out"_a, "stream"_a,
      "The sensitivity image into the CUDA array `out` (see resproj.recon.sensitivity).");

  m.def(
      "gpu_all_lor_sensitivity",
      [](const rs::polygon_scanner &scanner, const rp::image_geometry &geometry,
         const std::optional<in_array> &mu, const out_arg &out, std::uintptr_t stream) {
        std::vector<float> mu_values;
        if (mu)
          mu_values = host_floats(*mu, "mu", std::size_t(geometry.num_voxels()),
                                  "one per voxel of the image");
        const array_info o = info_of(out);
        const place where = place_of(o, "out");
        if (!where.cuda)
          throw nb::value_error(
              "out: a host array; the GPU sensitivity needs a CUDA array");
        const auto &g = geometry.shape();
        check_array(o, "out", dt<float>(), "the sensitivity is float32",
                    {g[0], g[1], g[2]}, true, where, "out");
        rr::all_lor_sensitivity_stats st;
        {
          const nb::gil_scoped_release release;
          on_caller_stream(where.id, stream, [&](std::uintptr_t s) {
            gc::all_lor_sensitivity(
                scanner, geometry,
                rp::span<const float>(mu_values.data(), mu_values.size()),
                rp::gpu::device_image_view<float>(static_cast<float *>(o.data), geometry,
                                                  where.id),
                reinterpret_cast<cudaStream_t>(s), &st);
          });
        }
        return all_lor_stats(st);
      },
      "scanner"_a, "geometry"_a, "mu"_a.none(), "out"_a, "stream"_a,
      "The all-LOR sensitivity image into the CUDA array `out` and what it walked "
      "(see resproj.recon.all_lor_sensitivity).");

  nb::class_<gpu_listmode_events>(m, "GpuListmodeEvents",
                                  "List-mode events in device memory (see "
                                  "resproj.listmode.read_to_device).")
      .def(
          "__init__",
          [](gpu_listmode_events *self, const std::string &path,
             std::int64_t num_detectors, int num_tof_bins, int device,
             std::uintptr_t stream) {
            const nb::gil_scoped_release release;
            new (self)
                gpu_listmode_events(path, num_detectors, num_tof_bins, device, stream);
          },
          "path"_a, "num_detectors"_a, "num_tof_bins"_a, "device"_a, "stream"_a)
      .def_prop_ro("count",
                   [](const gpu_listmode_events &e) { return e.events().count(); })
      .def_prop_ro("device", &gpu_listmode_events::device)
      .def(
          "pairs_dlpack",
          [](gpu_listmode_events &e) {
            const std::size_t shape[2] = {e.events().count(), 2};
            return nb::ndarray<std::int32_t, nb::device::cuda>(
                const_cast<std::int32_t *>(e.events().pairs()), 2, shape, nb::find(&e),
                nullptr, nb::dtype<std::int32_t>(), nb::device::cuda::value, e.device());
          },
          "The detector pairs (n, 2) int32, no copy; keeps this object alive.")
      .def(
          "bins_dlpack",
          [](gpu_listmode_events &e) {
            const std::size_t shape[1] = {e.events().count()};
            return nb::ndarray<std::int16_t, nb::device::cuda>(
                const_cast<std::int16_t *>(e.events().bins()), 1, shape, nb::find(&e),
                nullptr, nb::dtype<std::int16_t>(), nb::device::cuda::value, e.device());
          },
          "The TOF bins (n,) int16, no copy; keeps this object alive.");

  nb::class_<gpu_listmode_osem>(m, "GpuListmodeOsem",
                                "List-mode OSEM on the GPU (see resproj.recon).")
      .def(
          "__init__",
          [](gpu_listmode_osem *self, const rr::sinogram_subsets &sub,
             const in_array &efficiency, const in_array &mu, double scale,
             double background, const std::optional<tof_values> &tof,
             const std::string &path, int device, std::optional<std::uintptr_t> stream,
             nb::object stream_object) {
            const rr::corrections c =
                corrections_of(sub, efficiency, mu, scale, background);
            {
              const nb::gil_scoped_release release;
              new (self) gpu_listmode_osem(sub, c, recon_tof(tof), path, device, stream);
            }
            self->keep_stream(std::move(stream_object));
          },
          "subsets"_a, "efficiency"_a, "mu"_a, "scale"_a, "background"_a, "tof"_a.none(),
          "path"_a, "device"_a, "stream"_a.none(), "stream_object"_a.none())
      .def("run", &run_osem<gpu_listmode_osem>, "iterations"_a, "progress"_a.none())
      .def("image",
           [](gpu_listmode_osem &o) {
             const busy_guard busy(o.gate(), true);
             std::vector<float> host(std::size_t(o.geometry().num_voxels()));
             {
               const nb::gil_scoped_release release;
               o.image(rp::span<float>(host.data(), host.size()));
             }
             return to_numpy(std::move(host), image_shape(o.geometry()));
           })
      .def(
          "image_dlpack",
          [](gpu_listmode_osem &o) {
            const auto shape = image_shape(o.geometry());
            return nb::ndarray<float, nb::device::cuda>(
                o.data(), 3, shape.data(), nb::find(&o), nullptr, nb::dtype<float>(),
                nb::device::cuda::value, o.device());
          },
          "The resident image as a DLPack capsule (no copy; keeps this object alive).")
      .def_prop_ro(
          "image_pointer",
          [](gpu_listmode_osem &o) { return reinterpret_cast<std::uintptr_t>(o.data()); })
      .def(
          "write_nifti",
          [](gpu_listmode_osem &o, const std::string &path) {
            const busy_guard busy(o.gate(), true);
            const nb::gil_scoped_release release;
            o.write_nifti(path);
          },
          "path"_a)
      .def_prop_ro("device", &gpu_listmode_osem::device)
      .def_prop_ro("stream", &gpu_listmode_osem::stream)
      .def_prop_ro("num_events", &gpu_listmode_osem::num_events)
      .def_prop_ro("phases",
                   [](const gpu_listmode_osem &o) { return phase_list(o.phases()); });
}

} // namespace resproj_py
