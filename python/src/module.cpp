// The extension module resproj._resproj: the image geometry and TOF
// parameters, the projection entry points over DLPack arrays (NumPy, CuPy,
// PyTorch, ...) without copies, and the scanner and list-mode helpers. The
// Python package (python/resproj) builds the public API on these.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "gpu_api.hpp"
#include "module_parts.hpp"
#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/tof.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace resproj_py {
namespace {

namespace rp = resproj;

// --------------------------------------------------------- projection --

struct lor_arrays {
  int kind;
  const in_arg *a;
  const in_arg *b;
  const std::optional<in_arg> *planes;
  const std::optional<std::array<int, 8>> *sino;
};

/// Checks every array of a call and fills `c`; returns the expected shape
/// of the projection values.
std::vector<std::int64_t>
prepare(call &c, const array_info &image, const char *image_name, int op,
        const std::optional<tof_values> &tof, const std::optional<in_arg> &bins,
        const std::optional<in_arg> &sigmas, const std::optional<in_arg> &center_offsets,
        const lor_arrays &l) {
  const auto &g = c.geometry;
  const std::vector<std::int64_t> image_shape = {g.shape()[0], g.shape()[1],
                                                 g.shape()[2]};
  if (image.dtype != dt<float>() && image.dtype != dt<double>())
    throw nb::type_error((std::string(image_name) + ": dtype " + dtype_name(image.dtype) +
                          ", expected float32 or float64")
                             .c_str());
  const place where = place_of(image, image_name);
  const std::string wof = c.forward ? "the image" : "out (the image)";
  check_array(image, image_name, image.dtype, "float32 or float64", image_shape, true,
              where, wof.c_str());
  const bool is_double = image.dtype == dt<double>();
  const char *precision =
      c.forward ? (is_double ? "the image is float64" : "the image is float32")
                : (is_double ? "values are float64" : "values are float32");
  const nb::dlpack::dtype T = image.dtype;
  c.image = image.data;
  c.gpu = where.cuda;
  c.device = where.id;

  // LOR source.
  std::vector<std::int64_t> lor_shape;
  const array_info a = info_of(*l.a), b = info_of(*l.b);
  switch (l.kind) {
  case 0: { // end points
    c.lors = lor_kind::end_points;
    const std::int64_t n = a.shape.size() == 2 ? a.shape[0] : -1;
    check_array(a, "lors.starts", T, precision, {n, 3}, false, where, wof.c_str());
    check_array(b, "lors.ends", T, precision, {n, 3}, false, where, wof.c_str());
    c.count = std::size_t(n);
    lor_shape = {n};
    break;
  }
  case 1: { // detector pairs
    c.lors = lor_kind::detector_pairs;
    check_array(a, "lors.detectors", T, precision, {-1, 3}, false, where, wof.c_str());
    const std::int64_t n = b.shape.size() == 2 ? b.shape[0] : -1;
    check_array(b, "lors.pairs", dt<std::int32_t>(), "detector indices", {n, 2}, false,
                where, wof.c_str());
    c.num_detectors = std::size_t(a.shape[0]);
    c.count = std::size_t(n);
    lor_shape = {n};
    break;
  }
  case 2: { // sinogram
    c.lors = lor_kind::sinogram;
    if (!l.planes->has_value() || !l.sino->has_value())
      throw nb::value_error(
          "lors: a sinogram source needs its plane table and description");
    const auto &s = **l.sino;
    for (const int v : s)
      if (v < 0)
        throw nb::value_error("lors: a sinogram description with a negative entry");
    c.sino = {s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]};
    check_array(a, "lors.detectors", T, precision, {-1, 3}, false, where, wof.c_str());
    check_array(b, "lors.views", dt<std::int32_t>(), "view indices", {-1}, false, where,
                wof.c_str());
    const array_info p = info_of(**l.planes);
    check_array(p, "lors.planes", dt<std::int32_t>(), "ring indices",
                {std::int64_t(c.sino.num_planes), 2}, false, where, wof.c_str());
    c.num_detectors = std::size_t(a.shape[0]);
    c.num_subset_views = std::size_t(b.shape[0]);
    c.planes = static_cast<const std::int32_t *>(p.data);
    lor_shape = {c.sino.subset_planes, b.shape[0], c.sino.num_radial};
    c.count = std::size_t(product(lor_shape));
    break;
  }
  default:
    throw nb::value_error("lors: unknown LOR source kind");
  }
  c.a = a.data;
  c.b = b.data;

  // Operation.
  std::vector<std::int64_t> values_shape = lor_shape;
  if (op < 0 || op > 2)
    throw nb::value_error("op: unknown operation kind");
  c.op = op_kind(op);
  if (c.op != op_kind::non_tof) {
    if (!tof)
      throw nb::value_error("op.tof: a TOF operation needs TofParams");
    c.tof = *tof;
    if (c.op == op_kind::tof_sinogram)
      values_shape.push_back(tof->num_bins);
    if (sigmas) {
      const array_info s = info_of(*sigmas);
      check_array(s, "op.sigmas", T, precision, lor_shape, true, where, wof.c_str());
      c.sigmas = s.data;
    }
    if (center_offsets) {
      const array_info s = info_of(*center_offsets);
      check_array(s, "op.center_offsets", T, precision, lor_shape, true, where,
                  wof.c_str());
      c.center_offsets = s.data;
    }
  }
  if (c.op == op_kind::tof_listmode) {
    if (!bins)
      throw nb::value_error("op.bins: TOF list-mode needs one int16 bin per event");
    const array_info s = info_of(*bins);
    check_array(s, "op.bins", dt<std::int16_t>(), "TOF bins", lor_shape, true, where,
                wof.c_str());
    c.bins = static_cast<const std::int16_t *>(s.data);
  }
  return values_shape;
}

void run(const call &c, bool is_double) {
  if (c.gpu) {
#if RESPROJ_PYTHON_GPU
    is_double ? run_gpu_double(c) : run_gpu_float(c);
#else
    throw nb::value_error("image: a CUDA array, but this resproj was built without the "
                          "GPU backend (no CUDA compiler at build time)");
#endif
    return;
  }
  const nb::gil_scoped_release release;
  is_double ? run_cpu_double(c) : run_cpu_float(c);
}

void forward(const rp::image_geometry &geometry, const in_arg &image, int op,
             const std::optional<tof_values> &tof, const std::optional<in_arg> &bins,
             const std::optional<in_arg> &sigmas,
             const std::optional<in_arg> &center_offsets, int lors, const in_arg &lor_a,
             const in_arg &lor_b, const std::optional<in_arg> &planes,
             const std::optional<std::array<int, 8>> &sino, const out_arg &out,
             std::uintptr_t stream, bool sync) {
  call c(geometry);
  c.forward = true;
  const array_info img = info_of(image);
  const auto shape = prepare(c, img, "image", op, tof, bins, sigmas, center_offsets,
                             {lors, &lor_a, &lor_b, &planes, &sino});
  const array_info o = info_of(out);
  check_array(o, "out", img.dtype, "the image's dtype", shape, true, {c.gpu, c.device},
              "the image");
  c.data = o.data;
  c.data_size = std::size_t(product(o.shape));
  c.stream = stream;
  c.sync = sync;
  run(c, img.dtype == dt<double>());
}

void back(const rp::image_geometry &geometry, const in_arg &values, int op,
          const std::optional<tof_values> &tof, const std::optional<in_arg> &bins,
          const std::optional<in_arg> &sigmas,
          const std::optional<in_arg> &center_offsets, int lors, const in_arg &lor_a,
          const in_arg &lor_b, const std::optional<in_arg> &planes,
          const std::optional<std::array<int, 8>> &sino, const out_arg &out,
          std::uintptr_t stream, bool sync, bool zero_out) {
  call c(geometry);
  c.forward = false;
  const array_info img = info_of(out);
  const array_info v = info_of(values);
  // The values set the precision of a back projection.
  if ((v.dtype == dt<float>() || v.dtype == dt<double>()) && img.dtype != v.dtype)
    throw nb::type_error(("out: dtype " + dtype_name(img.dtype) + ", expected " +
                          dtype_name(v.dtype) + " (the dtype of values)")
                             .c_str());
  const auto shape = prepare(c, img, "out", op, tof, bins, sigmas, center_offsets,
                             {lors, &lor_a, &lor_b, &planes, &sino});
  check_array(v, "values", img.dtype, "the image's dtype", shape, true, {c.gpu, c.device},
              "out (the image)");
  c.data = v.data;
  c.data_size = std::size_t(product(v.shape));
  c.stream = stream;
  c.sync = sync;
  c.zero_image = zero_out;
  run(c, img.dtype == dt<double>());
}

// ---------------------------------------------------------- concepts --

template <class T> std::array<T, 3> triple(nb::handle h, const char *name) {
  std::size_t n = 0;
  try {
    n = nb::len(h);
  } catch (const nb::python_error &) {
    throw nb::type_error(
        (std::string(name) + ": expected a sequence of 3 numbers").c_str());
  }
  if (n != 3)
    throw nb::value_error(
        (std::string(name) + ": expected 3 values (got " + std::to_string(n) + ")")
            .c_str());
  std::array<T, 3> r{};
  for (std::size_t k = 0; k < 3; ++k) {
    try {
      r[k] = nb::cast<T>(h[k]);
    } catch (const std::exception &) {
      throw nb::type_error((std::string(name) + "[" + std::to_string(k) + "]: expected " +
                            (std::is_integral_v<T> ? "an integer" : "a number"))
                               .c_str());
    }
  }
  return r;
}

template <class A> nb::tuple as_tuple(const A &a) {
  return nb::make_tuple(a[0], a[1], a[2]);
}

std::string repr_triple(const std::array<double, 3> &a) {
  nb::object r = nb::repr(nb::make_tuple(a[0], a[1], a[2]));
  return nb::cast<std::string>(r);
}

tof_values make_tof(double bin_width, int num_bins, double sigma, double num_sigmas,
                    double center_offset) {
  tof_values t{bin_width, num_bins, sigma, num_sigmas, center_offset};
  rp::detail::check_tof(t.as<double>(), 0);
  return t;
}

} // namespace
} // namespace resproj_py

NB_MODULE(_resproj, m) {
  using namespace resproj_py;
  namespace rp = resproj;
  m.doc() = "Compiled core of resproj (use the `resproj` package).";
  m.attr("__version__") = std::to_string(RESPROJ_VERSION_MAJOR) + "." +
                          std::to_string(RESPROJ_VERSION_MINOR) + "." +
                          std::to_string(RESPROJ_VERSION_PATCH);
#if RESPROJ_PYTHON_GPU
  m.attr("has_gpu_backend") = true;
#else
  m.attr("has_gpu_backend") = false;
#endif

  nb::register_exception_translator([](const std::exception_ptr &p, void *) {
    try {
      std::rethrow_exception(p);
    } catch (const rp::invalid_argument &e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const rp::io_error &e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const rp::gpu_out_of_memory &e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  nb::class_<rp::image_geometry>(
      m, "ImageGeometry",
      "Voxel grid of an image: shape (n0, n1, n2) in C order, voxel size and origin "
      "(centre of voxel [0, 0, 0]) in any length unit. Validated on construction.")
      .def(
          "__init__",
          [](rp::image_geometry *self, nb::handle shape, nb::handle voxel_size,
             nb::handle origin) {
            const auto s = triple<std::int64_t>(shape, "shape");
            const auto v = triple<double>(voxel_size, "voxel_size");
            if (origin.is_none())
              new (self) rp::image_geometry(rp::image_geometry::centred(s, v));
            else
              new (self) rp::image_geometry(s, v, triple<double>(origin, "origin"));
          },
          "shape"_a, "voxel_size"_a, "origin"_a = nb::none(),
          "origin=None centres the image box on (0, 0, 0).")
      .def_static(
          "centred",
          [](nb::handle shape, nb::handle voxel_size) {
            return rp::image_geometry::centred(triple<std::int64_t>(shape, "shape"),
                                               triple<double>(voxel_size, "voxel_size"));
          },
          "shape"_a, "voxel_size"_a,
          "The geometry whose image box is centred on (0, 0, 0).")
      .def_prop_ro("shape",
                   [](const rp::image_geometry &g) { return as_tuple(g.shape()); })
      .def_prop_ro("voxel_size",
                   [](const rp::image_geometry &g) { return as_tuple(g.voxel_size()); })
      .def_prop_ro("origin",
                   [](const rp::image_geometry &g) { return as_tuple(g.origin()); })
      .def_prop_ro("num_voxels", &rp::image_geometry::num_voxels)
      .def_prop_ro("box_min",
                   [](const rp::image_geometry &g) {
                     return nb::make_tuple(g.box_min(0), g.box_min(1), g.box_min(2));
                   })
      .def_prop_ro("box_max",
                   [](const rp::image_geometry &g) {
                     return nb::make_tuple(g.box_max(0), g.box_max(1), g.box_max(2));
                   })
      .def("__eq__", [](const rp::image_geometry &a,
                        const rp::image_geometry &b) { return a == b; })
      .def("__eq__", [](const rp::image_geometry &, nb::handle) { return false; })
      .def("__hash__",
           [](const rp::image_geometry &g) {
             return nb::hash(nb::make_tuple(as_tuple(g.shape()), as_tuple(g.voxel_size()),
                                            as_tuple(g.origin())));
           })
      .def("__repr__",
           [](const rp::image_geometry &g) {
             const auto &s = g.shape();
             return "ImageGeometry(shape=(" + std::to_string(s[0]) + ", " +
                    std::to_string(s[1]) + ", " + std::to_string(s[2]) +
                    "), voxel_size=" + repr_triple(g.voxel_size()) +
                    ", origin=" + repr_triple(g.origin()) + ")";
           })
      .def("__getstate__",
           [](const rp::image_geometry &g) {
             return nb::make_tuple(as_tuple(g.shape()), as_tuple(g.voxel_size()),
                                   as_tuple(g.origin()));
           })
      .def("__setstate__", [](rp::image_geometry *self, const nb::tuple &t) {
        new (self) rp::image_geometry(triple<std::int64_t>(t[0], "shape"),
                                      triple<double>(t[1], "voxel_size"),
                                      triple<double>(t[2], "origin"));
      });

  nb::class_<tof_values>(
      m, "TofParams",
      "Time-of-flight parameters in the LORs' length unit: bin j is centred at "
      "(j - (num_bins - 1) / 2) * bin_width + center_offset from the LOR's midpoint, "
      "towards its end point; Gaussian of `sigma` truncated at `num_sigmas`. "
      "Validated on construction.")
      .def(
          "__init__",
          [](tof_values *self, double bin_width, int num_bins, double sigma,
             double num_sigmas, double center_offset) {
            new (self) tof_values(
                make_tof(bin_width, num_bins, sigma, num_sigmas, center_offset));
          },
          "bin_width"_a, "num_bins"_a, "sigma"_a, "num_sigmas"_a = 3.0,
          "center_offset"_a = 0.0)
      .def_ro("bin_width", &tof_values::bin_width)
      .def_ro("num_bins", &tof_values::num_bins)
      .def_ro("sigma", &tof_values::sigma)
      .def_ro("num_sigmas", &tof_values::num_sigmas)
      .def_ro("center_offset", &tof_values::center_offset)
      .def("__eq__",
           [](const tof_values &a, const tof_values &b) {
             return a.bin_width == b.bin_width && a.num_bins == b.num_bins &&
                    a.sigma == b.sigma && a.num_sigmas == b.num_sigmas &&
                    a.center_offset == b.center_offset;
           })
      .def("__eq__", [](const tof_values &, nb::handle) { return false; })
      .def(
          "__repr__",
          [](const tof_values &t) {
            return nb::cast<std::string>(
                nb::str(
                    "TofParams(bin_width={!r}, num_bins={}, sigma={!r}, num_sigmas={!r}, "
                    "center_offset={!r})")
                    .format(t.bin_width, t.num_bins, t.sigma, t.num_sigmas,
                            t.center_offset));
          })
      .def("__getstate__",
           [](const tof_values &t) {
             return nb::make_tuple(t.bin_width, t.num_bins, t.sigma, t.num_sigmas,
                                   t.center_offset);
           })
      .def("__setstate__", [](tof_values *self, const nb::tuple &t) {
        new (self) tof_values(make_tof(nb::cast<double>(t[0]), nb::cast<int>(t[1]),
                                       nb::cast<double>(t[2]), nb::cast<double>(t[3]),
                                       nb::cast<double>(t[4])));
      });

  m.def("forward", &resproj_py::forward, "geometry"_a, "image"_a, "op"_a, "tof"_a.none(),
        "bins"_a.none(), "sigmas"_a.none(), "center_offsets"_a.none(), "lors"_a,
        "lor_a"_a, "lor_b"_a, "planes"_a.none(), "sino"_a.none(), "out"_a, "stream"_a,
        "sync"_a, "Forward projection into `out` (checked arrays; see resproj.forward).");
  m.def("back", &resproj_py::back, "geometry"_a, "values"_a, "op"_a, "tof"_a.none(),
        "bins"_a.none(), "sigmas"_a.none(), "center_offsets"_a.none(), "lors"_a,
        "lor_a"_a, "lor_b"_a, "planes"_a.none(), "sino"_a.none(), "out"_a, "stream"_a,
        "sync"_a, "zero_out"_a, "Back projection added into `out` (see resproj.back).");

  m.def(
      "cuda_device_count",
      []() {
#if RESPROJ_PYTHON_GPU
        return cuda_device_count();
#else
        return 0;
#endif
      },
      "Number of usable CUDA devices (0 without the GPU backend, a device or a driver).");
  m.def(
      "synchronize",
      [](int device, std::uintptr_t stream) {
#if RESPROJ_PYTHON_GPU
        synchronize(device, stream);
#else
        (void)device;
        (void)stream;
#endif
      },
      "device"_a, "stream"_a,
      "Waits for the work queued on `stream` of `device` (0: the legacy default stream, "
      "with the work resproj bridged from it).");

  bind_scanner(m);
  bind_listmode(m);
  bind_nifti(m);
  bind_recon(m);
#if RESPROJ_PYTHON_GPU
  bind_recon_gpu(m);
  bind_streamer(m);
#endif
}
