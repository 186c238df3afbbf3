/// @file
/// @brief The header-only GPU executors as executors of the contract suite
/// (contract_suite.hpp), nvcc only. Each call copies the host arrays in,
/// runs the executor and copies the results out, also when the call throws
/// (so the suite sees what the executor left in its own output):
///  - `resident_executor`: `gpu::forward` / `gpu::back` on a
///    `gpu::device_image`, LORs and per-LOR arrays in device memory;
///  - `streamed_executor`: `gpu::lor_streamer<T>` with the host LORs,
///    per-LOR arrays and outputs themselves (several chunks per call);
///  - `multi_device_executor`: `gpu::forward` / `gpu::back` over a
///    `gpu::replicated_image` of every visible device, the LORs split into
///    one share per device (`lor_input::shares`), each device with its own
///    operation (per-LOR arrays of its share) and its own output array; the
///    back-projected replicas are summed on the host. Works with one device.
/// All use end points (`lor_view`) only, so every kernel is instantiated
/// once for the three.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "contract/contract_suite.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/multi_device_projector.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"

namespace resproj_contract {

namespace gpu = resproj::gpu;

/// Whether the GPU executors run the TOF operations in precision T: float
/// only. The double TOF kernels would add about a third to the compile
/// time of this translation unit; tests/gpu/test_tof.cu checks double TOF
/// on the GPU (adjointness, agreement with the CPU backend), and the
/// compiled target runs the whole contract in double.
template <class T> constexpr bool gpu_contract_tof = std::is_same<T, float>::value;

/// Empty when a CUDA device is present, else why not (as RESPROJ_REQUIRE_GPU).
inline std::string gpu_unavailable() {
  if (gpu::device_count() > 0)
    return std::string();
  return "no CUDA device available (" + resproj::test::gpu_unavailable_reason() + ")";
}

/// A device copy of `host` on the current device (empty for an empty span).
template <class T>
gpu::device_buffer<T> to_device(rp::span<const T> host, gpu::stream_ref s) {
  if (host.empty())
    return gpu::device_buffer<T>();
  return gpu::make_device_buffer(host, s);
}

/// Device copies of an operation's per-LOR arrays (TOF sigmas and centre
/// offsets, list-mode bins), and the operation over them.
template <class T> struct device_operation {
  gpu::device_buffer<T> sigmas, offsets;
  gpu::device_buffer<std::int16_t> bins;

  op::non_tof operator()(const op::non_tof &o, gpu::stream_ref) { return o; }
  op::tof_sinogram<T> operator()(const op::tof_sinogram<T> &o, gpu::stream_ref s) {
    return op::tof_sinogram<T>(tof(o.tof, s));
  }
  op::tof_listmode<T> operator()(const op::tof_listmode<T> &o, gpu::stream_ref s) {
    const rp::tof_params<T> t = tof(o.tof, s);
    bins = to_device(o.bins, s);
    return op::tof_listmode<T>(t, bins.cspan());
  }

private:
  rp::tof_params<T> tof(rp::tof_params<T> t, gpu::stream_ref s) {
    sigmas = to_device(t.sigmas, s);
    offsets = to_device(t.center_offsets, s);
    t.sigmas = sigmas.cspan();
    t.center_offsets = offsets.cspan();
    return t;
  }
};

/// Device copies of host end points.
template <class T> struct device_lors {
  gpu::device_buffer<T> starts, ends;
  std::size_t count = 0;
  device_lors(rp::lor_view<const T> lors, gpu::stream_ref s)
      : starts(to_device(rp::span<const T>(lors.starts, 3 * lors.count), s)),
        ends(to_device(rp::span<const T>(lors.ends, 3 * lors.count), s)),
        count(lors.count) {}
  rp::lor_view<const T> view() const {
    return rp::lor_view<const T>(starts.data(), ends.data(), count);
  }
};

// ------------------------------------------------------------ resident --

template <class T> struct resident_executor {
  using value_type = T;
  static constexpr bool supports_tof = gpu_contract_tof<T>;
  static constexpr bool ordered_sums = false;
  static std::string unavailable() { return gpu_unavailable(); }
  static std::string out_name() { return "out"; }
  static std::string values_name() { return "values"; }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    gpu::stream s;
    gpu::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    const device_lors<T> d_lors(lors, s);
    device_operation<T> arrays;
    const Op d_op = arrays(o, s);
    gpu::device_buffer<T> d_out = to_device(rp::span<const T>(out), s);
    call_then([&] { gpu::forward(d_op, d_image, d_lors.view(), d_out.span(), s); },
              [&] {
                d_out.copy_to_host(out, s);
                s.synchronize();
              });
  }

  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    gpu::stream s;
    gpu::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    const device_lors<T> d_lors(lors, s);
    device_operation<T> arrays;
    const Op d_op = arrays(o, s);
    const gpu::device_buffer<T> d_values = to_device(values, s);
    call_then([&] { gpu::back(d_op, d_image, d_lors.view(), d_values.cspan(), s); },
              [&] {
                d_image.download(image.values(), s);
                s.synchronize();
              });
  }
};

// ------------------------------------------------------------ streamed --

template <class T> struct streamed_executor {
  using value_type = T;
  static constexpr bool supports_tof = gpu_contract_tof<T>;
  static constexpr bool ordered_sums = false;
  /// LORs per chunk: calls of more LORs run in several chunks.
  static constexpr std::size_t max_chunk = 4096;
  static std::string unavailable() { return gpu_unavailable(); }
  static std::string out_name() { return "host_out"; }
  static std::string values_name() { return "host_values"; }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    gpu::stream s;
    gpu::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    gpu::lor_streamer<T> streamer(max_chunk);
    streamer.forward(o, d_image.cview(), lors, out, s);
  }

  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    gpu::stream s;
    gpu::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    gpu::lor_streamer<T> streamer(max_chunk);
    call_then([&] { streamer.back(o, d_image.view(), lors, values, s); },
              [&] {
                d_image.download(image.values(), s);
                s.synchronize();
              });
  }
};

// -------------------------------------------------------- multi-device --

template <class T> struct multi_device_executor {
  using value_type = T;
  static constexpr bool supports_tof = gpu_contract_tof<T>;
  static constexpr bool ordered_sums = false;
  static std::string unavailable() { return gpu_unavailable(); }
  /// One device: its array is the call's ("out"); several: the last
  /// device's share is the one a too small array cannot hold ("out[N-1]").
  static std::string out_name() { return array_name("out"); }
  static std::string values_name() { return array_name("values"); }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    const gpu::device_set set = gpu::device_set::all();
    const gpu::stream_set streams(set);
    gpu::replicated_image<T> d_image(set, image.geometry, streams);
    d_image.upload(image.values(), streams);
    shares<Op> p(set, streams, o, lors, rp::span<const T>(out));
    std::vector<rp::span<T>> d_out;
    for (auto &d : p.data)
      d_out.push_back(d.span());
    call_then(
        [&] { gpu::forward(p.ops, d_image, p.lors, d_out, streams.refs(), p.options()); },
        [&] {
          for (int i = 0; i < set.size(); ++i) {
            const std::size_t k = std::size_t(i);
            p.data[k].copy_to_host(out.subspan(p.first[k], p.data[k].size()), streams[i]);
          }
          streams.synchronize();
        });
  }

  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    const gpu::device_set set = gpu::device_set::all();
    const gpu::stream_set streams(set);
    gpu::replicated_image<T> d_image(set, image.geometry, streams);
    d_image.zero(streams);
    d_image.replica(0).upload(image.values(), streams[0]);
    shares<Op> p(set, streams, o, lors, values);
    std::vector<rp::span<const T>> d_values;
    for (const auto &d : p.data)
      d_values.push_back(d.cspan());
    call_then(
        [&] { gpu::back(p.ops, d_image, p.lors, d_values, streams.refs(), p.options()); },
        [&] {
          // The sum of the replicas (replica 0 started as the image).
          std::vector<std::vector<T>> replicas(std::size_t(set.size()),
                                               std::vector<T>(d_image.num_voxels()));
          for (int i = 0; i < set.size(); ++i) {
            auto &r = replicas[std::size_t(i)];
            d_image.replica(i).download(rp::span<T>(r.data(), r.size()), streams[i]);
          }
          streams.synchronize();
          const rp::span<T> host = image.values();
          for (std::size_t v = 0; v < host.size(); ++v) {
            T sum = replicas[0][v];
            for (std::size_t i = 1; i < replicas.size(); ++i)
              sum += replicas[i][v];
            host.data()[v] = sum;
          }
        });
  }

private:
  static int devices() { return std::min(gpu::device_count(), gpu::max_set_devices); }
  static std::string array_name(const std::string &name) {
    const int n = devices();
    return n <= 1 ? name : name + "[" + std::to_string(n - 1) + "]";
  }

  /// The call split into one share of LORs per device, each on its device:
  /// end points, operation (per-LOR arrays of the share) and the share's
  /// part of the output or values (cut short where `data` is).
  template <class Op> struct shares {
    std::vector<gpu::device_buffer<T>> starts, ends, data;
    std::vector<device_operation<T>> arrays;
    std::vector<Op> ops;
    std::vector<rp::lor_view<const T>> lors;
    std::vector<std::size_t> first; ///< of each device's data in the call's

    shares(const gpu::device_set &set, const gpu::stream_set &streams, const Op &o,
           rp::lor_view<const T> all, rp::span<const T> host_data) {
      const std::size_t n = all.count, devices = std::size_t(set.size());
      const std::size_t per_lor = o.values_per_lor();
      arrays.resize(devices);
      for (std::size_t k = 0; k < devices; ++k) {
        const gpu::device_guard guard(set.device(int(k)));
        const gpu::stream_ref s = streams[int(k)];
        const std::size_t lo = n * k / devices, count = n * (k + 1) / devices - lo;
        const rp::lor_view<const T> part = all.subview(lo, count);
        starts.push_back(to_device(rp::span<const T>(part.starts, 3 * count), s));
        ends.push_back(to_device(rp::span<const T>(part.ends, 3 * count), s));
        lors.emplace_back(starts.back().data(), ends.back().data(), count);
        ops.push_back(arrays[k](resproj::detail::operation_part(o, lo, count), s));
        const std::size_t begin = std::min(host_data.size(), lo * per_lor);
        const std::size_t end = std::min(host_data.size(), (lo + count) * per_lor);
        first.push_back(begin);
        data.push_back(to_device(host_data.subspan(begin, end - begin), s));
      }
    }
    gpu::multi_options options() const {
      gpu::multi_options m;
      m.input = gpu::lor_input::shares;
      return m;
    }
  };
};

} // namespace resproj_contract
