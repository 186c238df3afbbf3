/// @file
/// @brief The compiled GPU target (gpu/compiled.hpp, `resproj::gpu_compiled`)
/// as executors of the contract suite (contract_suite.hpp), for plain C++
/// translation units. Device memory through the CUDA runtime's C API only.
/// The target instantiates every operation for float and double, over
/// device end points (`compiled::forward` / `compiled::back`) and host end
/// points (`compiled::lor_streamer<T>`):
///  - `compiled_executor`: `compiled::forward` / `compiled::back` on a
///    `compiled::device_image`, LORs and per-LOR arrays in device memory;
///  - `compiled_streamed_executor`: `compiled::lor_streamer<T>` with the
///    host arrays themselves (several chunks per call).
/// A call that throws still copies the device output (or image) back.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "contract/contract_suite.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"
#include "resproj/gpu/compiled.hpp"

namespace resproj_contract {

namespace gc = resproj::gpu::compiled;

inline void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
}

inline std::string compiled_unavailable() {
  if (gc::device_count() > 0)
    return std::string();
  return "no CUDA device available (compiled::device_count() returned 0)";
}

/// A device copy of a host array (cudaMalloc; freed on scope exit).
template <class T> class device_array {
public:
  device_array(rp::span<const T> host, cudaStream_t s) : size_(host.size()) {
    if (size_ == 0)
      return;
    cuda_check(cudaMalloc(reinterpret_cast<void **>(&data_), size_ * sizeof(T)),
               "cudaMalloc");
    cuda_check(
        cudaMemcpyAsync(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync");
  }
  ~device_array() {
    if (data_ != nullptr)
      cudaFree(data_);
  }
  device_array(const device_array &) = delete;
  device_array &operator=(const device_array &) = delete;

  rp::span<T> span() const { return rp::span<T>(data_, size_); }
  rp::span<const T> cspan() const { return rp::span<const T>(data_, size_); }
  /// Copies the array into `host` (same size) and waits for it.
  void copy_to_host(rp::span<T> host, cudaStream_t s) const {
    if (size_ > 0)
      cuda_check(cudaMemcpyAsync(host.data(), data_, size_ * sizeof(T),
                                 cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

private:
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

/// A non-blocking stream, destroyed on scope exit.
class owned_stream {
public:
  owned_stream() {
    cuda_check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
  }
  ~owned_stream() { cudaStreamDestroy(s_); }
  owned_stream(const owned_stream &) = delete;
  owned_stream &operator=(const owned_stream &) = delete;
  operator cudaStream_t() const { return s_; }

private:
  cudaStream_t s_ = nullptr;
};

/// Device copies of an operation's per-LOR arrays and the operation over
/// them.
template <class T> struct compiled_operation {
  device_array<T> sigmas, offsets;
  device_array<std::int16_t> bins;

  compiled_operation(const op::non_tof &, cudaStream_t s)
      : sigmas({}, s), offsets({}, s), bins({}, s) {}
  compiled_operation(const op::tof_sinogram<T> &o, cudaStream_t s)
      : sigmas(o.tof.sigmas, s), offsets(o.tof.center_offsets, s), bins({}, s) {}
  compiled_operation(const op::tof_listmode<T> &o, cudaStream_t s)
      : sigmas(o.tof.sigmas, s), offsets(o.tof.center_offsets, s), bins(o.bins, s) {}

  op::non_tof on_device(const op::non_tof &o) const { return o; }
  op::tof_sinogram<T> on_device(const op::tof_sinogram<T> &o) const {
    return op::tof_sinogram<T>(tof(o.tof));
  }
  op::tof_listmode<T> on_device(const op::tof_listmode<T> &o) const {
    return op::tof_listmode<T>(tof(o.tof), bins.cspan());
  }

private:
  rp::tof_params<T> tof(rp::tof_params<T> t) const {
    t.sigmas = sigmas.cspan();
    t.center_offsets = offsets.cspan();
    return t;
  }
};

template <class T> struct compiled_executor {
  using value_type = T;
  static constexpr bool supports_tof = true;
  static constexpr bool ordered_sums = false;
  static std::string unavailable() { return compiled_unavailable(); }
  static std::string out_name() { return "out"; }
  static std::string values_name() { return "values"; }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    const owned_stream s;
    gc::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    const device_array<T> starts(rp::span<const T>(lors.starts, 3 * lors.count), s);
    const device_array<T> ends(rp::span<const T>(lors.ends, 3 * lors.count), s);
    const compiled_operation<T> arrays(o, s);
    const device_array<T> d_out(rp::span<const T>(out), s);
    call_then(
        [&] {
          gc::forward(arrays.on_device(o), d_image.view(),
                      rp::lor_view<const T>(starts.cspan().data(), ends.cspan().data(),
                                            lors.count),
                      d_out.span(), s);
        },
        [&] { d_out.copy_to_host(out, s); });
  }

  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    const owned_stream s;
    gc::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    const device_array<T> starts(rp::span<const T>(lors.starts, 3 * lors.count), s);
    const device_array<T> ends(rp::span<const T>(lors.ends, 3 * lors.count), s);
    const compiled_operation<T> arrays(o, s);
    const device_array<T> d_values(values, s);
    call_then(
        [&] {
          gc::back(arrays.on_device(o), d_image.view(),
                   rp::lor_view<const T>(starts.cspan().data(), ends.cspan().data(),
                                         lors.count),
                   d_values.cspan(), s);
        },
        [&] {
          d_image.download(image.values(), s);
          cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        });
  }
};

template <class T> struct compiled_streamed_executor {
  using value_type = T;
  static constexpr bool supports_tof = true;
  static constexpr bool ordered_sums = false;
  /// LORs per chunk: calls of more LORs run in several chunks.
  static constexpr std::size_t max_chunk = 4096;
  static std::string unavailable() { return compiled_unavailable(); }
  static std::string out_name() { return "host_out"; }
  static std::string values_name() { return "host_values"; }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    const owned_stream s;
    gc::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    gc::lor_streamer<T> streamer(max_chunk);
    streamer.forward(o, d_image.view(), lors, out, s);
  }

  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    const owned_stream s;
    gc::device_image<T> d_image(image.geometry, s);
    d_image.upload(image.values(), s);
    gc::lor_streamer<T> streamer(max_chunk);
    call_then([&] { streamer.back(o, d_image.view(), lors, values, s); },
              [&] {
                d_image.download(image.values(), s);
                cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
              });
  }
};

} // namespace resproj_contract
