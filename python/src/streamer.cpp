// The host-LOR streamer for the extension module: compiled::lor_streamer<T>
// of resproj::gpu_compiled, projecting LORs in host memory (end points, or
// detector pairs with the detector table on the device) against a resident
// CUDA image, with host values. Compiled by the host compiler, only when
// the binding is built with the GPU backend.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "dispatch.hpp"
#include "gpu_api.hpp"
#include "gpu_util.hpp"
#include "module_parts.hpp"
#include "resproj/gpu/compiled.hpp"

namespace resproj_py {
namespace {

namespace gc = resproj::gpu::compiled;
using namespace nb::literals;

/// A streamer of either precision, made on `device`.
class lor_streamer_py {
public:
  lor_streamer_py(std::size_t max_chunk, bool is_double, int slots, int copy_threads,
                  int device)
      : device_(device), is_double_(is_double), max_chunk_(max_chunk) {
    const device_scope scope(device);
    if (is_double)
      d_ = std::make_unique<gc::lor_streamer<double>>(max_chunk, slots, copy_threads);
    else
      f_ = std::make_unique<gc::lor_streamer<float>>(max_chunk, slots, copy_threads);
  }

  int device() const { return device_; }
  bool is_double() const { return is_double_; }
  std::size_t max_chunk() const { return max_chunk_; }

  /// Runs the checked call `c` (host-blocking; call without the GIL).
  void run(const call &c) {
    const std::lock_guard<std::mutex> lock(mutex_);
    on_caller_stream(device_, c.stream, [&](std::uintptr_t handle) {
      const auto s = reinterpret_cast<cudaStream_t>(handle);
      if (is_double_)
        run_typed(*d_, c, s);
      else
        run_typed(*f_, c, s);
    });
  }

private:
  template <class T>
  static void run_typed(gc::lor_streamer<T> &streamer, const call &c, cudaStream_t s) {
    with_operation<T>(c, [&](const auto &op) {
      const auto go = [&](const auto &lors) {
        if (c.forward) {
          streamer.forward(op,
                           rp::gpu::device_image_view<const T>(
                               static_cast<const T *>(c.image), c.geometry, c.device),
                           lors, rp::span<T>(static_cast<T *>(c.data), c.data_size), s);
        } else {
          const rp::gpu::device_image_view<T> image(static_cast<T *>(c.image), c.geometry,
                                                    c.device);
          if (c.zero_image)
            check_cuda(cudaMemsetAsync(image.data, 0,
                                       std::size_t(c.geometry.num_voxels()) * sizeof(T),
                                       s),
                       "cudaMemsetAsync");
          streamer.back(op, image, lors,
                        rp::span<const T>(static_cast<const T *>(c.data), c.data_size),
                        s);
        }
      };
      if (c.lors == lor_kind::end_points)
        go(rp::lor_view<const T>(static_cast<const T *>(c.a), static_cast<const T *>(c.b),
                                 c.count));
      else
        go(rp::detector_pairs<T>(static_cast<const T *>(c.a), c.num_detectors,
                                 static_cast<const std::int32_t *>(c.b), c.count));
    });
  }

  int device_;
  bool is_double_;
  std::size_t max_chunk_;
  std::unique_ptr<gc::lor_streamer<float>> f_;
  std::unique_ptr<gc::lor_streamer<double>> d_;
  std::mutex mutex_;
};

/// Index of the first pair with a detector outside [0, nd), or n.
std::size_t first_bad_pair(const std::int32_t *pairs, std::size_t n, std::size_t nd) {
  for (std::size_t i = 0; i < n; ++i)
    if (pairs[2 * i] < 0 || std::size_t(pairs[2 * i]) >= nd || pairs[2 * i + 1] < 0 ||
        std::size_t(pairs[2 * i + 1]) >= nd)
      return i;
  return n;
}

/// `check_array` for an array the streamer reads from or writes to host
/// memory, saying so when it is on a device.
void check_host_array(const array_info &a, const char *name,
                      const nb::dlpack::dtype &dtype, const char *why,
                      const std::vector<std::int64_t> &shape, bool flat_ok) {
  if (place_of(a, name).cuda)
    throw nb::value_error(
        (std::string(name) + ": on the GPU; LorStreamer takes it in host memory")
            .c_str());
  check_array(a, name, dtype, why, shape, flat_ok, place{false, 0}, "host memory");
}

/// Checks the arrays of a streamed call and fills `c`: the image (and, for
/// detector pairs, the detector table) on the streamer's device, everything
/// else in host memory. Returns the shape of the projection values.
std::vector<std::int64_t> prepare(call &c, const lor_streamer_py &st,
                                  const array_info &image, const char *image_name, int op,
                                  const std::optional<tof_values> &tof,
                                  const std::optional<in_arg> &bins,
                                  const std::optional<in_arg> &sigmas,
                                  const std::optional<in_arg> &center_offsets, int lors,
                                  const in_arg &lor_a, const in_arg &lor_b) {
  const nb::dlpack::dtype T = st.is_double() ? dt<double>() : dt<float>();
  const char *precision =
      st.is_double() ? "the streamer is float64" : "the streamer is float32";
  const place gpu{true, st.device()};
  const auto &sh = c.geometry.shape();
  const std::string wof = "the streamer (cuda:" + std::to_string(st.device()) + ")";
  const place where = place_of(image, image_name);
  if (!where.cuda)
    throw nb::value_error((std::string(image_name) +
                           ": a host array; LorStreamer projects a CUDA image (host "
                           "images: resproj.forward / back)")
                              .c_str());
  check_array(image, image_name, T, precision, {sh[0], sh[1], sh[2]}, true, gpu,
              wof.c_str());
  c.image = image.data;
  c.gpu = true;
  c.device = st.device();

  const array_info a = info_of(lor_a), b = info_of(lor_b);
  std::vector<std::int64_t> lor_shape;
  if (lors == 0) {
    c.lors = lor_kind::end_points;
    const std::int64_t n = a.shape.size() == 2 ? a.shape[0] : -1;
    check_host_array(a, "lors.starts", T, precision, {n, 3}, false);
    check_host_array(b, "lors.ends", T, precision, {n, 3}, false);
    c.count = std::size_t(n);
    lor_shape = {n};
  } else if (lors == 1) {
    c.lors = lor_kind::detector_pairs;
    check_array(a, "lors.detectors", T, precision, {-1, 3}, false, gpu, wof.c_str());
    const std::int64_t n = b.shape.size() == 2 ? b.shape[0] : -1;
    check_host_array(b, "lors.pairs", dt<std::int32_t>(), "detector indices", {n, 2},
                     false);
    c.num_detectors = std::size_t(a.shape[0]);
    c.count = std::size_t(n);
    lor_shape = {n};
    std::size_t bad = 0;
    {
      const nb::gil_scoped_release release;
      bad = first_bad_pair(static_cast<const std::int32_t *>(b.data), c.count,
                           c.num_detectors);
    }
    if (bad < c.count)
      throw nb::value_error(("lors.pairs: pair " + std::to_string(bad) +
                             " has a detector outside the table of " +
                             std::to_string(c.num_detectors) + " detectors")
                                .c_str());
  } else {
    throw nb::type_error("lors: LorStreamer takes resproj.Lors or resproj.DetectorPairs");
  }
  c.a = a.data;
  c.b = b.data;

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
      check_host_array(s, "op.sigmas", T, precision, lor_shape, true);
      c.sigmas = s.data;
    }
    if (center_offsets) {
      const array_info s = info_of(*center_offsets);
      check_host_array(s, "op.center_offsets", T, precision, lor_shape, true);
      c.center_offsets = s.data;
    }
  }
  if (c.op == op_kind::tof_listmode) {
    if (!bins)
      throw nb::value_error("op.bins: TOF list-mode needs one int16 bin per event");
    const array_info s = info_of(*bins);
    check_host_array(s, "op.bins", dt<std::int16_t>(), "TOF bins", lor_shape, true);
    c.bins = static_cast<const std::int16_t *>(s.data);
  }
  return values_shape;
}

} // namespace

void bind_streamer(nb::module_ &m) {
  nb::class_<lor_streamer_py>(m, "LorStreamer",
                              "Host-LOR streamer (see resproj.LorStreamer).")
      .def(
          "__init__",
          [](lor_streamer_py *self, std::size_t max_chunk, bool is_double, int slots,
             int copy_threads, int device) {
            const nb::gil_scoped_release release;
            new (self) lor_streamer_py(max_chunk, is_double, slots, copy_threads, device);
          },
          "max_chunk"_a, "is_double"_a, "slots"_a, "copy_threads"_a, "device"_a)
      .def_prop_ro("device", &lor_streamer_py::device)
      .def_prop_ro("max_chunk", &lor_streamer_py::max_chunk)
      .def(
          "forward",
          [](lor_streamer_py &st, const rp::image_geometry &geometry, const in_arg &image,
             int op, const std::optional<tof_values> &tof,
             const std::optional<in_arg> &bins, const std::optional<in_arg> &sigmas,
             const std::optional<in_arg> &center_offsets, int lors, const in_arg &lor_a,
             const in_arg &lor_b, const out_arg &out, std::uintptr_t stream) {
            call c(geometry);
            c.forward = true;
            const auto shape = prepare(c, st, info_of(image), "image", op, tof, bins,
                                       sigmas, center_offsets, lors, lor_a, lor_b);
            const array_info o = info_of(out);
            check_host_array(o, "out", info_of(image).dtype, "the image's dtype", shape,
                             true);
            c.data = o.data;
            c.data_size = std::size_t(product(o.shape));
            c.stream = stream;
            const nb::gil_scoped_release release;
            st.run(c);
          },
          "geometry"_a, "image"_a, "op"_a, "tof"_a.none(), "bins"_a.none(),
          "sigmas"_a.none(), "center_offsets"_a.none(), "lors"_a, "lor_a"_a, "lor_b"_a,
          "out"_a, "stream"_a, "Streamed forward projection into host `out`.")
      .def(
          "back",
          [](lor_streamer_py &st, const rp::image_geometry &geometry,
             const in_arg &values, int op, const std::optional<tof_values> &tof,
             const std::optional<in_arg> &bins, const std::optional<in_arg> &sigmas,
             const std::optional<in_arg> &center_offsets, int lors, const in_arg &lor_a,
             const in_arg &lor_b, const out_arg &out, std::uintptr_t stream,
             bool zero_out) {
            call c(geometry);
            c.forward = false;
            const array_info img = info_of(out);
            const auto shape = prepare(c, st, img, "out", op, tof, bins, sigmas,
                                       center_offsets, lors, lor_a, lor_b);
            const array_info v = info_of(values);
            check_host_array(v, "values", img.dtype, "the image's dtype", shape, true);
            c.data = v.data;
            c.data_size = std::size_t(product(v.shape));
            c.stream = stream;
            c.zero_image = zero_out;
            const nb::gil_scoped_release release;
            st.run(c);
          },
          "geometry"_a, "values"_a, "op"_a, "tof"_a.none(), "bins"_a.none(),
          "sigmas"_a.none(), "center_offsets"_a.none(), "lors"_a, "lor_a"_a, "lor_b"_a,
          "out"_a, "stream"_a, "zero_out"_a,
          "Streamed back projection of host `values`, added into the CUDA image `out`.");
}

} // namespace resproj_py
