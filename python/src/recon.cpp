// The reconstruction layer for the extension module: sinogram subsets of a
// reconstruction, OSEM progress, and list-mode OSEM on the CPU from the
// plain C++ recon blocks (the GPU version is in recon_gpu.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "module_parts.hpp"
#include "recon_common.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/recon/all_lor_sensitivity.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/cpu_osem.hpp"
#include "resproj/recon/em.hpp"
#include "resproj/recon/listmode_data.hpp"
#include "resproj/recon/phase_timing.hpp"
#include "resproj/recon/sinogram_subsets.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram_layout.hpp"

namespace resproj_py {
namespace {

namespace rp = resproj;
namespace rs = resproj::scanner;
using namespace nb::literals;

/// List-mode OSEM on the CPU: the events read and validated on the host,
/// grouped by subset, their corrections, the sensitivity image, then
/// `recon::osem` over `cpu_listmode_backend`. Keeps its own copy of the
/// subsets (the backend refers to it and to the events).
class cpu_listmode_osem {
public:
  cpu_listmode_osem(const rr::sinogram_subsets &sub, const rr::corrections &c,
                    const rp::tof_params<float> &tof, const std::string &path)
      : sub_(sub), tof_(tof) {
    rr::detail::check_corrections(c, sub_);
    rr::stopwatch w;
    lm_ = rr::read_listmode_data(path, std::int64_t(sub_.num_detectors()), tof_.num_bins);
    const double n = double(lm_.count());
    if (lm_.count() == 0)
      throw rp::io_error("resproj: " + path + ": no events");
    phases_.add("read", "read file, validate", w.lap(), n, "events");
    rr::group_by_subset(lm_, sub_.num_subsets());
    phases_.add("group", "group by subset", w.lap(), n, "events");
    rr::listmode_corrections(sub_, c, tof_, lm_);
    phases_.add("corr", "per-event corrections (attenuation, eff.)", w.lap(), n,
                "events");
    auto sens = rr::sensitivity_image(sub_, c);
    phases_.add("sens", "sensitivity with attenuation", w.lap(),
                double(sub_.total_count()), "LORs");
    backend_ = std::make_unique<rr::cpu_listmode_backend>(
        sub_, lm_, tof_, std::move(sens), rr::start_image(sub_.image, 1.f));
  }

  void run(int iterations, const rr::osem_callback &progress) {
    rr::stopwatch w;
    rr::osem(*backend_, iterations, progress);
    add_to_phase(phases_, "osem", "OSEM iterations", w.lap(),
                 double(num_events()) * double(iterations), "events");
  }

  void write_nifti(const std::string &path) {
    rr::stopwatch w;
    const auto &x = backend_->x;
    rp::io::write_nifti(path, rp::span<const float>(x.data(), x.size()), sub_.image);
    add_to_phase(phases_, "nifti", "write NIfTI", w.lap(), 0, "");
  }

  std::vector<float> &image() { return backend_->x; }
  const rr::sinogram_subsets &subsets() const { return sub_; }
  std::size_t num_events() const { return lm_.count(); }
  const rr::phase_table &phases() const { return phases_; }
  call_gate &gate() { return gate_; }

private:
  rr::sinogram_subsets sub_;
  rp::tof_params<float> tof_;
  rr::listmode_data lm_;
  rr::phase_table phases_;
  std::unique_ptr<rr::cpu_listmode_backend> backend_;
  call_gate gate_;
};

} // namespace

void bind_recon(nb::module_ &m) {
  nb::class_<rr::sinogram_subsets>(
      m, "ReconSubsets",
      "A scanner's span-1 sinogram (all ring differences, `radial_trim` bins dropped "
      "at each radial edge) split into OSEM subsets by view, with the image "
      "reconstructed (recon::sinogram_subsets).")
      .def(
          "__init__",
          [](rr::sinogram_subsets *self, const rs::polygon_scanner &scanner,
             int radial_trim, int num_subsets, const rp::image_geometry &geometry) {
            new (self) rr::sinogram_subsets(scanner, radial_trim, num_subsets, geometry);
          },
          "scanner"_a, "radial_trim"_a, "num_subsets"_a, "geometry"_a)
      .def_prop_ro("num_subsets", &rr::sinogram_subsets::num_subsets)
      .def_prop_ro("num_detectors", &rr::sinogram_subsets::num_detectors)
      .def_prop_ro("geometry", [](const rr::sinogram_subsets &s) { return s.image; })
      .def_prop_ro("scanner", [](const rr::sinogram_subsets &s) { return s.scanner; })
      .def_prop_ro("layout", [](const rr::sinogram_subsets &s) { return s.layout; })
      .def_prop_ro("total_count", &rr::sinogram_subsets::total_count)
      .def(
          "subset_count",
          [](const rr::sinogram_subsets &s, int k) {
            if (k < 0 || k >= s.num_subsets())
              throw nb::index_error("subset: out of range");
            return s.subset_count(k);
          },
          "subset"_a, "LORs of subset `subset`.");

  nb::class_<rr::osem_progress>(m, "OsemProgress",
                                "Progress of a reconstruction, after a subset.")
      .def_ro("iteration", &rr::osem_progress::iteration, "0-based")
      .def_ro("subset", &rr::osem_progress::subset, "0-based, within the iteration")
      .def_ro("num_iterations", &rr::osem_progress::num_iterations)
      .def_ro("num_subsets", &rr::osem_progress::num_subsets)
      .def_ro("elapsed_s", &rr::osem_progress::elapsed_s)
      .def_ro("last_subset_s", &rr::osem_progress::last_subset_s)
      .def_ro("eta_s", &rr::osem_progress::eta_s)
      .def("__repr__", [](const rr::osem_progress &p) {
        return "OsemProgress(iteration=" + std::to_string(p.iteration) +
               ", subset=" + std::to_string(p.subset) +
               ", elapsed_s=" + std::to_string(p.elapsed_s) + ")";
      });

  m.def(
      "cpu_sensitivity",
      [](const rr::sinogram_subsets &sub, const in_array &efficiency, const in_array &mu,
         double scale) {
        const rr::corrections c = corrections_of(sub, efficiency, mu, scale, 0.0);
        std::vector<float> image;
        {
          const nb::gil_scoped_release release;
          image = rr::sensitivity_image(sub, c);
        }
        return to_numpy(std::move(image), image_shape(sub.image));
      },
      "subsets"_a, "efficiency"_a, "mu"_a, "scale"_a,
      "The sensitivity image on the CPU (see resproj.recon.sensitivity).");

  m.def(
      "all_lor_sensitivity",
      [](const rs::polygon_scanner &scanner, const rp::image_geometry &geometry,
         const std::optional<in_array> &mu, unsigned threads) {
        std::vector<float> mu_values;
        if (mu)
          mu_values = host_floats(*mu, "mu", std::size_t(geometry.num_voxels()),
                                  "one per voxel of the image");
        rr::all_lor_sensitivity_stats st;
        std::vector<float> image;
        {
          const nb::gil_scoped_release release;
          image = rr::all_lor_sensitivity(
              scanner, geometry,
              rp::span<const float>(mu_values.data(), mu_values.size()), threads, &st);
        }
        return nb::make_tuple(to_numpy(std::move(image), image_shape(geometry)),
                              all_lor_stats(st));
      },
      "scanner"_a, "geometry"_a, "mu"_a.none(), "threads"_a,
      "The all-LOR sensitivity image on the CPU and what it walked (see "
      "resproj.recon.all_lor_sensitivity).");

  nb::class_<cpu_listmode_osem>(m, "CpuListmodeOsem",
                                "List-mode OSEM on the CPU (see resproj.recon).")
      .def(
          "__init__",
          [](cpu_listmode_osem *self, const rr::sinogram_subsets &sub,
             const in_array &efficiency, const in_array &mu, double scale,
             double background, const std::optional<tof_values> &tof,
             const std::string &path) {
            const rr::corrections c =
                corrections_of(sub, efficiency, mu, scale, background);
            const nb::gil_scoped_release release;
            new (self) cpu_listmode_osem(sub, c, recon_tof(tof), path);
          },
          "subsets"_a, "efficiency"_a, "mu"_a, "scale"_a, "background"_a, "tof"_a.none(),
          "path"_a)
      .def("run", &run_osem<cpu_listmode_osem>, "iterations"_a, "progress"_a.none())
      .def("image",
           [](cpu_listmode_osem &o) {
             const busy_guard busy(o.gate(), true);
             return to_numpy(o.image(), image_shape(o.subsets().image));
           })
      .def("image_view",
           [](cpu_listmode_osem &o) {
             const auto shape = image_shape(o.subsets().image);
             return nb::ndarray<nb::numpy, float>(o.image().data(), 3, shape.data(),
                                                  nb::find(&o));
           })
      .def(
          "write_nifti",
          [](cpu_listmode_osem &o, const std::string &path) {
            const busy_guard busy(o.gate(), true);
            const nb::gil_scoped_release release;
            o.write_nifti(path);
          },
          "path"_a)
      .def_prop_ro("num_events", &cpu_listmode_osem::num_events)
      .def_prop_ro("phases",
                   [](const cpu_listmode_osem &o) { return phase_list(o.phases()); });
}

} // namespace resproj_py
