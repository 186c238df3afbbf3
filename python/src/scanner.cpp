// Scanners, span-1 sinogram layouts and list-mode files for the extension
// module (tables come back as NumPy arrays; the Python layer moves them to
// the array library and device of the caller).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "module_parts.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/listmode.hpp"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram_layout.hpp"
#include "resproj/scanner/sinogram_subsets.hpp"

namespace resproj_py {
namespace {

namespace rp = resproj;
namespace rs = resproj::scanner;
using namespace nb::literals;

/// Host array check: C-contiguous, dtype, shape (flat allowed) in host memory.
void check_host(const in_array &a, const char *name, const nb::dlpack::dtype &dtype,
                const char *why, const std::vector<std::int64_t> &shape) {
  check_array(info_of(a), name, dtype, why, shape, false, place{false, 0}, "the host");
}

/// Host events checked and viewed: pairs int32 (n, 2), optional bins int16 (n,).
struct host_events {
  rp::span<const std::int32_t> pairs;
  rp::span<const std::int16_t> bins;
  host_events(const in_array &p, const std::optional<in_array> &b) {
    const std::int64_t n = p.ndim() == 2 ? std::int64_t(p.shape(0)) : -1;
    check_host(p, "pairs", dt<std::int32_t>(), "detector indices", {n, 2});
    pairs = {static_cast<const std::int32_t *>(p.data()), std::size_t(2 * n)};
    if (b) {
      check_host(*b, "bins", dt<std::int16_t>(), "TOF bins", {n});
      bins = {static_cast<const std::int16_t *>(b->data()), std::size_t(n)};
    }
  }
};

} // namespace

void bind_scanner(nb::module_ &m) {
  nb::class_<rs::polygon_scanner>(
      m, "PolygonScanner",
      "A cylindrical scanner of `num_sides` flat modules of `crystals_per_side` crystals "
      "per ring, rings at `ring_z` along image axis `axis`. Detector index of crystal c "
      "of ring r: r * crystals_per_ring + c.")
      .def(nb::init<int, int, double, double, std::vector<double>, int>(), "num_sides"_a,
           "crystals_per_side"_a, "inner_radius"_a, "crystal_pitch"_a, "ring_z"_a,
           "axis"_a = 2)
      .def_prop_ro("num_sides", &rs::polygon_scanner::num_sides)
      .def_prop_ro("crystals_per_side", &rs::polygon_scanner::crystals_per_side)
      .def_prop_ro("inner_radius", &rs::polygon_scanner::inner_radius)
      .def_prop_ro("crystal_pitch", &rs::polygon_scanner::crystal_pitch)
      .def_prop_ro("axis", &rs::polygon_scanner::axis)
      .def_prop_ro("crystals_per_ring", &rs::polygon_scanner::crystals_per_ring)
      .def_prop_ro("num_rings", &rs::polygon_scanner::num_rings)
      .def_prop_ro("num_crystals", &rs::polygon_scanner::num_crystals)
      .def(
          "detector_centres",
          [](const rs::polygon_scanner &s) {
            return to_numpy<float>(s.detector_centres(), {s.num_crystals(), 3});
          },
          "Crystal centres, float32 of shape (num_crystals, 3), ring-major.")
      .def("__repr__", [](const rs::polygon_scanner &s) {
        return "PolygonScanner(num_sides=" + std::to_string(s.num_sides()) +
               ", crystals_per_side=" + std::to_string(s.crystals_per_side()) +
               ", num_rings=" + std::to_string(s.num_rings()) + ")";
      });

  m.def("dmi", &rs::dmi, "The reference scanner 'dmi' (36 rings of 544 crystals, mm).");
  m.def("small_test_scanner", &rs::small_test_scanner, "axis"_a = 2,
        "A small scanner for tests: 12 modules of 4 crystals, radius 60, 4 rings.");
  m.def(
      "dmi_tof",
      []() {
        const auto t = rs::dmi_tof<double>();
        return tof_values{t.bin_width, t.num_bins, t.sigma, t.num_sigmas,
                          t.center_offset};
      },
      "TOF parameters of the 'dmi' scanner (29 bins, mm).");

  nb::class_<rs::sinogram_layout>(
      m, "SinogramLayout",
      "A span-1 sinogram: planes (ring pairs) x views x radial bins, stored "
      "[plane][view][radial].")
      .def_ro("crystals_per_ring", &rs::sinogram_layout::crystals_per_ring)
      .def_ro("num_rings", &rs::sinogram_layout::num_rings)
      .def_ro("num_views", &rs::sinogram_layout::num_views)
      .def_ro("radial_trim", &rs::sinogram_layout::radial_trim)
      .def_ro("num_radial", &rs::sinogram_layout::num_radial)
      .def_ro("max_ring_difference", &rs::sinogram_layout::max_ring_difference)
      .def_prop_ro("num_planes", &rs::sinogram_layout::num_planes)
      .def_prop_ro("num_bins", &rs::sinogram_layout::num_bins)
      .def_prop_ro("shape",
                   [](const rs::sinogram_layout &l) {
                     return nb::make_tuple(l.num_planes(), l.num_views, l.num_radial);
                   })
      .def(
          "plane_table",
          [](const rs::sinogram_layout &l) {
            return to_numpy<std::int32_t>(l.plane_table(),
                                          {std::size_t(l.num_planes()), 2});
          },
          "(start ring, end ring) of each plane, int32 of shape (num_planes, 2).")
      .def(
          "subset_views",
          [](const rs::sinogram_layout &l, int subset, int num_subsets) {
            const auto v = rs::subset_views(l, subset, num_subsets);
            return to_numpy<std::int32_t>(std::vector<std::int32_t>(v.begin(), v.end()),
                                          {v.size()});
          },
          "subset"_a, "num_subsets"_a,
          "Views of OSEM subset `subset` of `num_subsets` (every num_subsets-th view), "
          "int32.")
      .def("detector_pair", &rs::sinogram_layout::detector_pair, "plane"_a, "view"_a,
           "radial"_a, "Detector indices (start, end) of a bin.")
      .def("__repr__", [](const rs::sinogram_layout &l) {
        return "SinogramLayout(num_planes=" + std::to_string(l.num_planes()) +
               ", num_views=" + std::to_string(l.num_views) +
               ", num_radial=" + std::to_string(l.num_radial) + ")";
      });

  m.def(
      "span1_sinogram", &rs::span1_sinogram, "scanner"_a, "radial_trim"_a,
      "max_ring_difference"_a = -1,
      "The span-1 sinogram of a scanner: `radial_trim` bins dropped at each radial edge, "
      "ring differences up to `max_ring_difference` (-1: all).");
  m.def("dmi_sinogram", &rs::dmi_sinogram,
        "The reference sinogram of 'dmi': 1296 planes x 272 views x 415 radial bins.");
}

void bind_listmode(nb::module_ &m) {
  m.def("count_listmode_events", &rp::io::count_listmode_events, "path"_a,
        "Number of 10-byte events in a list-mode file.");
  m.def(
      "read_listmode",
      [](const std::string &path, std::uint64_t first,
         std::optional<std::uint64_t> count) {
        std::vector<rs::listmode_event> events;
        {
          const nb::gil_scoped_release release;
          const std::uint64_t total = rp::io::count_listmode_events(path);
          const std::uint64_t n = count ? *count : (first < total ? total - first : 0);
          events.resize(std::size_t(n));
          rp::io::read_listmode_events(
              path, first, events.size(),
              rp::span<rs::listmode_event>(events.data(), events.size()));
        }
        std::vector<std::int32_t> pairs;
        std::vector<std::int16_t> bins;
        rs::split_events(events, pairs, bins);
        const std::size_t n = events.size();
        return std::make_pair(to_numpy<std::int32_t>(std::move(pairs), {n, 2}),
                              to_numpy<std::int16_t>(std::move(bins), {n}));
      },
      "path"_a, "first"_a = 0, "count"_a = nb::none(),
      "Events [first, first + count) of a list-mode file as (pairs int32 (n, 2), "
      "bins int16 (n,)).");
  m.def(
      "write_listmode",
      [](const std::string &path, const in_array &pairs, std::optional<in_array> bins,
         bool append) {
        const host_events ev(pairs, bins);
        const auto events = rs::pack_events(ev.pairs, ev.bins);
        const rp::span<const rs::listmode_event> e(events.data(), events.size());
        const nb::gil_scoped_release release;
        if (append)
          rp::io::append_listmode_events(path, e);
        else
          rp::io::write_listmode_file(path, e);
      },
      "path"_a, "pairs"_a, "bins"_a = nb::none(), "append"_a = false,
      "Writes (or appends) events as 10-byte list-mode records.");
  m.def(
      "validate_events",
      [](const in_array &pairs, std::int64_t num_detectors, std::optional<in_array> bins,
         int num_tof_bins) {
        const host_events ev(pairs, bins);
        const auto r =
            rs::validate_events(ev.pairs, ev.bins, num_detectors, num_tof_bins);
        return std::make_pair(r.num_invalid, r.first_invalid);
      },
      "pairs"_a, "num_detectors"_a, "bins"_a = nb::none(), "num_tof_bins"_a = 0,
      "Host events: (number invalid, index of the first invalid or n).");
}

void bind_nifti(nb::module_ &m) {
  m.def(
      "write_nifti",
      [](const std::string &path, const in_array &image,
         const rp::image_geometry &geometry) {
        const std::int64_t n = geometry.num_voxels();
        const auto &sh = geometry.shape();
        const auto info = info_of(image);
        const bool dbl = info.dtype == dt<double>();
        check_host(image, "image", dbl ? dt<double>() : dt<float>(), "the image",
                   {sh[0], sh[1], sh[2]});
        const nb::gil_scoped_release release;
        if (dbl)
          rp::io::write_nifti(
              path,
              rp::span<const double>(static_cast<const double *>(image.data()),
                                     std::size_t(n)),
              geometry);
        else
          rp::io::write_nifti(
              path,
              rp::span<const float>(static_cast<const float *>(image.data()),
                                    std::size_t(n)),
              geometry);
      },
      "path"_a, "image"_a, "geometry"_a,
      "Writes a host float32/float64 image (C order, `geometry.shape`) as a NIfTI-1 file "
      "(replaced as a whole): axis 2 is the superior axis, voxel sizes and origin in "
      "mm.");
  m.def(
      "read_nifti",
      [](const std::string &path) {
        rp::image_geometry g({1, 1, 1}, {1, 1, 1}, {0, 0, 0});
        std::vector<float> v;
        {
          const nb::gil_scoped_release release;
          g = rp::io::read_nifti_geometry<float>(path);
          v.resize(std::size_t(g.num_voxels()));
          rp::io::read_nifti<float>(path, rp::span<float>(v.data(), v.size()));
        }
        const auto &sh = g.shape();
        return std::make_pair(
            to_numpy<float>(std::move(v),
                            {std::size_t(sh[0]), std::size_t(sh[1]), std::size_t(sh[2])}),
            g);
      },
      "path"_a, "Reads a NIfTI-1 image as (float32 array in C order, ImageGeometry).");
}

} // namespace resproj_py
