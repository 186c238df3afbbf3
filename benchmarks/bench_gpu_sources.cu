// GPU benchmarks of detector-indexed list-mode events, float
// images, box phantom, DMI TOF parameters, on dmi-tof-lm: 10,000,000
// uniformly random LORs of the full dmi sinogram (seeded), TOF bin uniform
// in 8..20, random order, addressed by detector pairs into the resident
// dmi detector table:
//
//   gpu/sources/dmi-tof-lm/{forward,back}/{end-points,detector-pairs}/plain
//       device-resident events, the plain call gpu::forward / gpu::back(
//       op::tof_listmode{tof, bins}, image, lors, out, stream) (random
//       order: no layout to declare): explicit end points (24 B + 2 B bin
//       per event) vs detector pairs (8 B + 2 B) with the table resident
//   gpu/sources/dmi-tof-lm-streamed/{forward,back}/<form>/<memory>
//       host-resident events through gpu::lor_streamer::forward / back
//       (op, image, host_lors, host_out, stream) (chunks of 2^20 events, 3
//       slots), <form>: end-points (host end points, op::tof_listmode{tof,
//       host bins}), detector-pairs (host pairs + bins), events (packed
//       10-byte scanner::listmode_event records as a
//       scanner::listmode_records source, op::tof_listmode{tof}: the bins
//       come from the records, split on the device); <memory>: pageable
//       or pinned host arrays. Host wall-clock time (the calls block until
//       the results are on the host).
//   gpu/sources/dmi-lm-streamed/forward/<form>/<memory>
//       the same streaming without TOF (op::non_tof{}): the projection is
//       cheaper, so the bus is more often the limit
//   gpu/sources/bus-bound-streamed/forward/<form>/<memory>
//       non-TOF streaming into a coarse 16 x 16 x 8 image (44 x 44 x 32 mm
//       voxels, same field of view): little work per LOR, so the transfers
//       set the rate (the case where the bus is the limit)
//   gpu/sources/validate/{events,split}
//       GPU validation (gpu::validate_events, caller workspace) of the 1e7
//       resident events: packed records / split pairs + bins
//   gpu/sources/split-events
//       device conversion of the 1e7 packed records into pairs + bins
//
// Counters: items_per_second = events (LORs) per second; bytes_per_lor =
// bytes per event that describe the event (LOR and TOF bin) read from
// device memory (resident) or moved over the bus (streamed);
// bus_bytes_per_lor (streamed) adds the 4-byte value or result per event.
//
// Timing: CUDA events around the work on its stream (resident) or the
// host's steady clock (streamed), UseManualTime, one warm-up call, 5
// repetitions, aggregates only: read the `_median` rows. Back projections
// use values all 1; the image is zeroed outside the timed region.
//
// Without a CUDA device the program prints "no CUDA device" and exits with
// 0. Exit code 2 if any benchmark reported an error.

#include <benchmark/benchmark.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/dmi_problems.hpp"
#include "common/gpu_main.cuh"
#include "common/phantom.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/listmode.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rs = resproj::scanner;

constexpr std::size_t stream_chunk = std::size_t(1) << 20;

/// The dmi-tof-lm events in every form, on the host (pageable and pinned)
/// and on the device, with the image, the back image and the stream.
struct problem {
  rp::image_geometry geometry = rb::reference_image_geometry();
  gpu::stream s;
  gpu::device_image<float> image, back_image;
  rp::image_geometry coarse_geometry =
      rp::image_geometry::centred({16, 16, 8}, {44, 44, 32});
  gpu::device_image<float> coarse_image;
  std::size_t count = rb::dmi_tof_lm_events;
  std::size_t num_detectors = 0;
  // host, pageable
  std::vector<float> h_starts, h_ends, h_ones, h_out;
  std::vector<std::int32_t> h_pairs;
  std::vector<std::int16_t> h_bins;
  std::vector<rs::listmode_event> h_events;
  // host, pinned copies
  gpu::pinned_buffer<float> p_starts, p_ends, p_ones, p_out;
  gpu::pinned_buffer<std::int32_t> p_pairs;
  gpu::pinned_buffer<std::int16_t> p_bins;
  gpu::pinned_buffer<rs::listmode_event> p_events;
  // device
  gpu::device_buffer<float> detectors, starts, ends, out, ones;
  gpu::device_buffer<std::int32_t> pairs;
  gpu::device_buffer<std::int16_t> bins;
  gpu::device_buffer<rs::listmode_event> events;
  gpu::device_buffer<unsigned char> workspace;
  gpu::device_buffer<rs::event_check_result> result;
  std::size_t workspace_bytes = 0;
  std::unique_ptr<gpu::lor_streamer<float>> streamer;

  problem()
      : image(geometry, s), back_image(geometry, s), coarse_image(coarse_geometry, s) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto host_image = rb::box_phantom<float>(geometry);
    image.upload(rp::span<const float>(host_image.data(), host_image.size()), s);
    back_image.zero(s);
    const auto coarse = rb::box_phantom<float>(coarse_geometry);
    coarse_image.upload(rp::span<const float>(coarse.data(), coarse.size()), s);

    const std::vector<float> table = rs::dmi().detector_centres();
    num_detectors = table.size() / 3;
    rb::dmi_events generated = rb::make_dmi_events(count, rb::dmi_tof_lm_seed);
    h_pairs = std::move(generated.pairs);
    h_bins = std::move(generated.bins);
    rb::end_points_of(table, h_pairs, h_starts, h_ends);
    h_events =
        rs::pack_events(rp::span<const std::int32_t>(h_pairs.data(), h_pairs.size()),
                        rp::span<const std::int16_t>(h_bins.data(), count));
    h_ones.assign(count, 1.0f);
    h_out.assign(count, 0.0f);

    p_starts = pinned_copy(h_starts);
    p_ends = pinned_copy(h_ends);
    p_ones = pinned_copy(h_ones);
    p_out = pinned_copy(h_out);
    p_pairs = pinned_copy(h_pairs);
    p_bins = pinned_copy(h_bins);
    p_events = pinned_copy(h_events);

    detectors =
        gpu::make_device_buffer(rp::span<const float>(table.data(), table.size()), s);
    starts = gpu::make_device_buffer(
        rp::span<const float>(h_starts.data(), h_starts.size()), s);
    ends =
        gpu::make_device_buffer(rp::span<const float>(h_ends.data(), h_ends.size()), s);
    pairs = gpu::make_device_buffer(
        rp::span<const std::int32_t>(h_pairs.data(), h_pairs.size()), s);
    bins = gpu::make_device_buffer(rp::span<const std::int16_t>(h_bins.data(), count), s);
    events = gpu::make_device_buffer(
        rp::span<const rs::listmode_event>(h_events.data(), count), s);
    out = gpu::device_buffer<float>(count, s);
    ones = gpu::device_buffer<float>(count, s);
    ones.fill(1.0f, s);
    workspace_bytes = gpu::validate_events_workspace_bytes(count);
    workspace = gpu::device_buffer<unsigned char>(workspace_bytes, s);
    result = gpu::device_buffer<rs::event_check_result>(1, s);
    streamer = std::make_unique<gpu::lor_streamer<float>>(stream_chunk);
    s.synchronize();
    // The events are valid: a benchmark of invalid data would be meaningless.
    const auto check = gpu::validate_events(events.cspan(), std::int64_t(num_detectors),
                                            rb::dmi_tof<float>().num_bins, s);
    if (check.num_invalid != 0)
      throw std::runtime_error("dmi-tof-lm events: " + std::to_string(check.num_invalid) +
                               " invalid events");
    std::fprintf(
        stderr, "dmi-tof-lm (sources): %zu events generated and uploaded in %.2f s\n",
        count,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  template <class E> static gpu::pinned_buffer<E> pinned_copy(const std::vector<E> &v) {
    gpu::pinned_buffer<E> p(v.size());
    std::copy(v.begin(), v.end(), p.data());
    return p;
  }

  /// The resident events (random order: no layout to declare).
  rp::lor_view<const float> end_points() const {
    return {starts.data(), ends.data(), count};
  }
  rp::detector_pairs<float> detector_pairs() const {
    return {detectors.data(), num_detectors, pairs.data(), count};
  }
};

std::unique_ptr<problem> g_problem;

problem &prob() {
  if (!g_problem)
    g_problem = std::make_unique<problem>();
  return *g_problem;
}

void release_problems() noexcept {
  try {
    if (g_problem)
      g_problem->s.synchronize();
  } catch (...) {
  }
  g_problem.reset();
}

void set_counters(benchmark::State &state, std::size_t items, double bytes_per_lor,
                  double bus_bytes_per_lor = 0) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
  state.counters["bytes_per_lor"] = bytes_per_lor;
  if (bus_bytes_per_lor > 0)
    state.counters["bus_bytes_per_lor"] = bus_bytes_per_lor;
}

// ---------------------------------------------------------- benchmarks --

enum class form { end_points, detector_pairs, events };

/// Bytes per event that describe it (LOR + TOF bin when `tof`).
double event_bytes(form f, bool tof) {
  const double bin = tof ? double(sizeof(std::int16_t)) : 0.0;
  switch (f) {
  case form::end_points:
    return 6 * sizeof(float) + bin;
  case form::detector_pairs:
    return 2 * sizeof(std::int32_t) + bin;
  default:
    return double(sizeof(rs::listmode_event));
  }
}

void bm_resident(benchmark::State &state, form f, bool back) {
  rb::guarded(state, [&] {
    problem &p = prob();
    const rp::op::tof_listmode op(rb::dmi_tof<float>(), p.bins.cspan());
    const auto run = [&](const auto &lors) {
      if (!back) {
        rb::time_on_stream(state, p.s, [&] {
          gpu::forward(op, p.image.cview(), lors, p.out.span(), p.s);
        });
      } else {
        rb::time_on_stream(
            state, p.s, [&] { p.back_image.zero(p.s); },
            [&] { gpu::back(op, p.back_image.view(), lors, p.ones.cspan(), p.s); });
      }
    };
    if (f == form::end_points)
      run(p.end_points());
    else
      run(p.detector_pairs());
    set_counters(state, p.count, event_bytes(f, true));
  });
}

void bm_streamed(benchmark::State &state, form f, bool back, bool pinned, bool tof_on,
                 bool coarse) {
  rb::guarded(state, [&] {
    problem &p = prob();
    const gpu::device_image_view<const float> fwd_image =
        coarse ? p.coarse_image.cview() : p.image.cview();
    gpu::lor_streamer<float> &st = *p.streamer;
    const auto tof = rb::dmi_tof<float>();
    const std::size_t n = p.count;
    const float *starts = pinned ? p.p_starts.data() : p.h_starts.data();
    const float *ends = pinned ? p.p_ends.data() : p.h_ends.data();
    const rp::lor_view<const float> host_lors(starts, ends, n);
    const rp::detector_pairs<float> host_pairs(
        p.detectors.data(), p.num_detectors, pinned ? p.p_pairs.data() : p.h_pairs.data(),
        n);
    const rp::span<const std::int16_t> bins(pinned ? p.p_bins.data() : p.h_bins.data(),
                                            n);
    const rs::listmode_records<float> host_records(
        p.detectors.data(), p.num_detectors,
        pinned ? p.p_events.data() : p.h_events.data(), n);
    const rp::span<const float> values(pinned ? p.p_ones.data() : p.h_ones.data(), n);
    const rp::span<float> out(pinned ? p.p_out.data() : p.h_out.data(), n);
    // TOF: the host bins (end points, pairs) or the records' own bins.
    const rp::op::tof_listmode with_bins(tof, bins);
    const rp::op::tof_listmode from_records(tof);
    const auto project = [&](const auto &op, const auto &source) {
      if (back)
        st.back(op, p.back_image.view(), source, values, p.s);
      else
        st.forward(op, fwd_image, source, out, p.s);
    };
    const rp::op::non_tof non_tof;
    const auto body = [&] {
      if (f == form::end_points) {
        if (tof_on)
          project(with_bins, host_lors);
        else
          project(non_tof, host_lors);
      } else if (f == form::detector_pairs) {
        if (tof_on)
          project(with_bins, host_pairs);
        else
          project(non_tof, host_pairs);
      } else {
        if (tof_on)
          project(from_records, host_records);
        else
          project(non_tof, host_records);
      }
    };
    if (back)
      rb::time_on_host(
          state,
          [&] {
            p.back_image.zero(p.s);
            p.s.synchronize();
          },
          body);
    else
      rb::time_on_host(state, body);
    // Records carry their TOF bin even without TOF; pairs and end points do not.
    const double b = f == form::events ? event_bytes(f, true) : event_bytes(f, tof_on);
    set_counters(state, n, b, b + sizeof(float));
  });
}

void bm_validate(benchmark::State &state, bool split) {
  rb::guarded(state, [&] {
    problem &p = prob();
    const int nb = rb::dmi_tof<float>().num_bins;
    const std::int64_t nd = std::int64_t(p.num_detectors);
    rb::time_on_stream(state, p.s, [&] {
      if (split)
        gpu::validate_events(p.pairs.cspan(), p.bins.cspan(), nd, nb, p.workspace.data(),
                             p.workspace_bytes, p.result.data(), p.s);
      else
        gpu::validate_events(p.events.cspan(), nd, nb, p.workspace.data(),
                             p.workspace_bytes, p.result.data(), p.s);
    });
    set_counters(state, p.count, split ? 10.0 : double(sizeof(rs::listmode_event)));
  });
}

void bm_split(benchmark::State &state) {
  rb::guarded(state, [&] {
    problem &p = prob();
    rb::time_on_stream(state, p.s, [&] {
      gpu::split_events(p.events.cspan(), p.pairs.span(), p.bins.span(), p.s);
    });
    set_counters(state, p.count, double(sizeof(rs::listmode_event)));
  });
}

void register_all() {
  using benchmark::RegisterBenchmark;
  const struct {
    form f;
    const char *name;
  } forms[] = {{form::end_points, "end-points"},
               {form::detector_pairs, "detector-pairs"},
               {form::events, "events"}};
  for (const bool back : {false, true}) {
    const std::string dir = back ? "back" : "forward";
    for (const auto &fm : forms)
      if (fm.f != form::events)
        rb::configure(RegisterBenchmark(
            ("gpu/sources/dmi-tof-lm/" + dir + "/" + fm.name + "/plain").c_str(),
            bm_resident, fm.f, back));
  }
  for (const bool back : {false, true})
    for (const auto &fm : forms)
      for (const bool pinned : {false, true})
        rb::configure(RegisterBenchmark(("gpu/sources/dmi-tof-lm-streamed/" +
                                         std::string(back ? "back" : "forward") + "/" +
                                         fm.name + "/" + (pinned ? "pinned" : "pageable"))
                                            .c_str(),
                                        bm_streamed, fm.f, back, pinned, true, false));
  for (const auto &fm : forms)
    for (const bool pinned : {false, true})
      rb::configure(RegisterBenchmark(("gpu/sources/dmi-lm-streamed/forward/" +
                                       std::string(fm.name) + "/" +
                                       (pinned ? "pinned" : "pageable"))
                                          .c_str(),
                                      bm_streamed, fm.f, false, pinned, false, false));
  for (const auto &fm : forms)
    for (const bool pinned : {false, true})
      rb::configure(RegisterBenchmark(("gpu/sources/bus-bound-streamed/forward/" +
                                       std::string(fm.name) + "/" +
                                       (pinned ? "pinned" : "pageable"))
                                          .c_str(),
                                      bm_streamed, fm.f, false, pinned, false, true));
  rb::configure(RegisterBenchmark("gpu/sources/validate/events", bm_validate, false));
  rb::configure(RegisterBenchmark("gpu/sources/validate/split", bm_validate, true));
  rb::configure(RegisterBenchmark("gpu/sources/split-events", bm_split));
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_gpu_sources", register_all, release_problems);
}
