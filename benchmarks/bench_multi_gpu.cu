// Multi-GPU benchmarks on the reference problems
// (docs/benchmark-problems.md), float images, box phantom, one image replica
// per device, LORs split equally across the devices:
//
//   multi/dmi-full/forward/devices:K     dmi-full as a sinogram description
//                                        (detector, plane and view tables on
//                                        every device; the source declares
//                                        its sinogram layout, so every
//                                        device's part of whole planes runs
//                                        with lanes along planes)
//   multi/dmi-full/back/devices:K        the same, back projection into each
//                                        replica + the sum of the replicas
//                                        (every replica holds it)
//   multi/dmi-tof-lm/forward/devices:K   dmi-tof-lm: 1e7 events (the events
//                                        of bench_gpu_tof, as detector pairs
//                                        + 16-bit bins, resident on every
//                                        device, in generation order), TOF
//                                        list-mode forward (one operation
//                                        per device: its own bins)
//   multi/dmi-tof-lm/back/devices:K      the same, back + sum of replicas
//   multi/dmi-tof-lm/streamed-forward/devices:K
//                                        the same 1e7 events as packed
//                                        list-mode records (10 bytes each) in
//                                        pinned host memory, streamed through
//                                        a multi_device_streamer (one
//                                        lor_streamer per device, 2^20 events
//                                        per chunk; bins from the records)
//                                        into a pinned host output
//   multi/dmi-tof-lm/streamed-back/devices:K
//                                        the same, back projection of host
//                                        values + sum of the replicas
//   multi/reduce/devices:K/method:M      the sum of K replicas alone
//                                        (M = nccl, peer, host_staged)
//
// K = 1, 2, 4, 8 up to the number of visible devices. Timing: the streams of
// every device are idle at the start event (on device 0); every device's
// stream is joined into device 0's stream before the stop event, so the time
// covers all devices (UseManualTime, 5 repetitions, read the `_median`
// rows). items_per_second = LORs (events) per second. Back projections use
// values all 1; the replicas are zeroed outside the timed region.
// Timeline counters, from CUDA events only (no host clock; each device's
// times from that device's own events): every stream waits for the start
// event (device 0), then device D records `ready`, `proj_end` after its
// projection and `end` after everything (the sum included).
//   devD_start_max_ms  latest time device D's `ready` can follow the start
//                      event: total - devD_busy_ms (`ready` follows the start
//                      event, `end` precedes the stop event)
//   devD_proj_ms       ready -> proj_end: when device D finished projecting
//   devD_reduce_ms     proj_end -> end (the sum of the replicas, back only)
//   devD_busy_ms       ready -> end
// Devices that work at the same time all finish their projection at about
// the one-device time / K; a host loop that waits on each device in turn
// would make device D finish at about (D + 1) times that. The streamed runs
// block the host and work on the streamers' own streams: their counters span
// the whole call on every device (read their speed-up instead).
// After the runs, a table of speed-ups over one device.
//
// NCCL_NVLS_ENABLE defaults to 0 here (NVLink multicast off).
// Without a CUDA device the program prints a message and exits with 0.
// Exit code 2 if any benchmark reported an error.

#include <benchmark/benchmark.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/bench_support.hpp"
#include "common/dmi_problems.hpp"
#include "common/phantom.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/multi_device_projector.cuh"
#include "resproj/gpu/multi_device_reduce.cuh"
#include "resproj/gpu/multi_device_streamer.cuh"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rs = resproj::scanner;

constexpr std::size_t lm_events = rb::dmi_tof_lm_events;
constexpr std::size_t stream_chunk = std::size_t(1) << 20; // events per chunk

/// Host tables shared by every device set (made once).
struct host_tables {
  std::vector<float> detectors;
  std::vector<std::int32_t> planes, views, pairs;
  std::vector<std::int16_t> bins;
  rs::sinogram_layout layout = rs::dmi_sinogram();

  host_tables() {
    const auto t0 = std::chrono::steady_clock::now();
    const auto scanner = rs::dmi();
    detectors = scanner.detector_centres();
    planes = layout.plane_table();
    const auto v = rs::subset_views(layout, 0, 1); // every view
    views.assign(v.begin(), v.end());
    rb::dmi_events events = rb::make_dmi_events(lm_events, rb::dmi_tof_lm_seed);
    pairs = std::move(events.pairs);
    bins = std::move(events.bins);
    std::fprintf(
        stderr, "multi: tables and %zu events generated in %.2f s\n", lm_events,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
};

template <class T> rp::span<const T> cs(const std::vector<T> &v) {
  return rp::span<const T>(v.data(), v.size());
}

/// The list-mode events as packed records in pinned host memory, with a
/// pinned output and pinned values (all 1) for the streamed benchmarks.
struct host_stream_data {
  gpu::pinned_buffer<rs::listmode_event> records;
  gpu::pinned_buffer<float> out, ones;

  explicit host_stream_data(const host_tables &h)
      : records(lm_events), out(lm_events), ones(lm_events) {
    rb::parallel_ranges(lm_events, [&](std::size_t first, std::size_t n) {
      for (std::size_t i = first; i < first + n; ++i) {
        records[i] = rs::listmode_event::make(
            std::uint32_t(h.pairs[2 * i]), std::uint32_t(h.pairs[2 * i + 1]), h.bins[i]);
        ones[i] = 1.0f;
      }
    });
  }
};

/// What one device holds: tables, events, full-size outputs and ones
/// (per-device arrays are indexed like the whole call).
struct device_part {
  gpu::device_buffer<float> detectors, out, ones;
  gpu::device_buffer<std::int32_t> planes, views, pairs;
  gpu::device_buffer<std::int16_t> bins;
  gpu::device_buffer<float> lm_out, lm_ones;
  rs::sinogram_source<float> sino;
  rp::detector_pairs<float> events;

  device_part(const host_tables &h, gpu::stream_ref s) {
    detectors = gpu::make_device_buffer(cs(h.detectors), s);
    planes = gpu::make_device_buffer(cs(h.planes), s);
    views = gpu::make_device_buffer(cs(h.views), s);
    pairs = gpu::make_device_buffer(cs(h.pairs), s);
    bins = gpu::make_device_buffer(cs(h.bins), s);
    sino = rs::make_sinogram_source<float>(detectors.data(), h.detectors.size() / 3,
                                           h.layout.geometry(planes.data()), views.data(),
                                           int(h.views.size()), 0, h.layout.num_planes());
    events = rp::detector_pairs<float>(detectors.data(), h.detectors.size() / 3,
                                       pairs.data(), lm_events);
    out = gpu::device_buffer<float>(sino.count, s);
    ones = gpu::device_buffer<float>(sino.count, s);
    ones.fill(1.0f, s);
    lm_out = gpu::device_buffer<float>(lm_events, s);
    lm_ones = gpu::device_buffer<float>(lm_events, s);
    lm_ones.fill(1.0f, s);
  }
};

/// A set of the first K devices with its replicated image and parts.
struct multi_problem {
  gpu::device_set devices;
  gpu::stream_set streams;
  gpu::replicated_image<float> image;
  std::vector<device_part> parts;
  std::map<int, std::unique_ptr<gpu::replica_reducer<float>>> reducers;
  std::vector<rs::sinogram_source<float>> sino;
  std::vector<rp::detector_pairs<float>> events;
  std::vector<rp::span<float>> out, lm_out;
  std::vector<rp::span<const float>> ones, lm_ones;
  std::vector<rp::op::tof_listmode<float>> lm_ops; // per device: its own bins
  // Per device, for the streamer: the host records against its table.
  std::vector<rs::listmode_records<float>> records;
  std::unique_ptr<gpu::multi_device_streamer<float>> streamer; // made on first use
  // Timeline events (timing) per device: ready, projection done, all done.
  std::vector<gpu::event> ready, proj_end, end, join;

  static std::vector<int> first(int k) {
    std::vector<int> ids(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i)
      ids[std::size_t(i)] = i;
    return ids;
  }

  multi_problem(const host_tables &h, int k)
      : devices(first(k)), streams(devices),
        image(devices, rb::reference_image_geometry(), streams) {
    const auto tof = rb::dmi_tof<float>();
    const auto phantom = rb::box_phantom<float>(image.geometry());
    image.upload(cs(phantom), streams);
    for (int i = 0; i < k; ++i) {
      const gpu::device_guard guard(devices.device(i));
      parts.emplace_back(h, streams[i]);
      device_part &p = parts.back();
      sino.push_back(p.sino);
      events.push_back(p.events);
      out.push_back(p.out.span());
      lm_out.push_back(p.lm_out.span());
      ones.push_back(p.ones.cspan());
      lm_ones.push_back(p.lm_ones.cspan());
      lm_ops.emplace_back(tof, p.bins.cspan());
      ready.emplace_back(true);
      proj_end.emplace_back(true);
      end.emplace_back(true);
      join.emplace_back(false);
    }
    streams.synchronize();
  }

  gpu::replica_reducer<float> &reducer(gpu::reduce_method m) {
    auto &slot = reducers[int(m)];
    if (!slot)
      slot = std::make_unique<gpu::replica_reducer<float>>(devices, image.geometry(),
                                                           streams, m);
    return *slot;
  }
};

std::unique_ptr<host_tables> g_host;
std::unique_ptr<host_stream_data> g_stream;
std::map<int, std::unique_ptr<multi_problem>> g_problems;

multi_problem &problem(int k) {
  if (!g_host)
    g_host = std::make_unique<host_tables>();
  auto &slot = g_problems[k];
  if (!slot)
    slot = std::make_unique<multi_problem>(*g_host, k);
  return *slot;
}

void release_problems() noexcept {
  try {
    for (auto &p : g_problems)
      p.second->streams.synchronize();
  } catch (...) {
  }
  g_problems.clear();
  g_stream.reset();
  g_host.reset();
}

/// Times `project` then `finish` (both enqueue on every stream of `p`, or
/// block the host), per iteration after `setup` and a full synchronisation;
/// every stream waits for the start event (device 0) and the stop event
/// (device 0) follows every device's work. Sets the timeline counters of
/// the last iteration (see the file comment).
template <class Setup, class Project, class Finish>
void time_multi(benchmark::State &state, multi_problem &p, Setup &&setup,
                Project &&project, Finish &&finish) {
  const int n = p.devices.size();
  const gpu::stream_ref s0 = p.streams[0];
  const gpu::device_guard guard(p.devices.device(0));
  gpu::event start(true), stop(true);
  auto once = [&] {
    setup();
    p.streams.synchronize();
    start.record(s0);
    for (int i = 0; i < n; ++i) {
      if (i > 0)
        start.make_wait(p.streams[i]);
      p.ready[std::size_t(i)].record(p.streams[i]);
    }
    project();
    for (int i = 0; i < n; ++i)
      p.proj_end[std::size_t(i)].record(p.streams[i]);
    finish();
    for (int i = 0; i < n; ++i) {
      p.end[std::size_t(i)].record(p.streams[i]);
      if (i > 0) {
        p.join[std::size_t(i)].record(p.streams[i]);
        p.join[std::size_t(i)].make_wait(s0);
      }
    }
    stop.record(s0);
    stop.synchronize();
  };
  once(); // warm-up
  for (auto _ : state) {
    once();
    state.SetIterationTime(double(gpu::event::elapsed_ms(start, stop)) * 1e-3);
  }
  const double total = double(gpu::event::elapsed_ms(start, stop));
  for (int i = 0; i < n; ++i) {
    const std::size_t k = std::size_t(i);
    const std::string d = "dev" + std::to_string(i);
    p.end[k].synchronize();
    const double busy = double(gpu::event::elapsed_ms(p.ready[k], p.end[k]));
    const double proj = double(gpu::event::elapsed_ms(p.ready[k], p.proj_end[k]));
    state.counters[d + "_busy_ms"] = busy;
    state.counters[d + "_proj_ms"] = proj;
    state.counters[d + "_reduce_ms"] = busy - proj;
    state.counters[d + "_start_max_ms"] = total - busy;
  }
}

void bm_full(benchmark::State &state, bool back, int k) {
  rb::guarded(state, [&] {
    multi_problem &p = problem(k);
    if (back) {
      auto &reducer = p.reducer(gpu::reduce_method::automatic);
      time_multi(
          state, p, [&] { p.image.zero(p.streams); },
          [&] { gpu::back(rp::op::non_tof{}, p.image, p.sino, p.ones, p.streams); },
          [&] { reducer.sum(p.image, p.streams); });
    } else {
      time_multi(
          state, p, [] {},
          [&] { gpu::forward(rp::op::non_tof{}, p.image, p.sino, p.out, p.streams); },
          [] {});
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) *
                            std::int64_t(p.sino[0].count));
  });
}

void bm_lm(benchmark::State &state, bool back, int k) {
  rb::guarded(state, [&] {
    multi_problem &p = problem(k);
    if (back) {
      auto &reducer = p.reducer(gpu::reduce_method::automatic);
      time_multi(
          state, p, [&] { p.image.zero(p.streams); },
          [&] { gpu::back(p.lm_ops, p.image, p.events, p.lm_ones, p.streams); },
          [&] { reducer.sum(p.image, p.streams); });
    } else {
      time_multi(
          state, p, [] {},
          [&] { gpu::forward(p.lm_ops, p.image, p.events, p.lm_out, p.streams); }, [] {});
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(lm_events));
  });
}

/// dmi-tof-lm with the events in pinned host memory (packed records),
/// streamed through every device at once; back includes the sum.
void bm_lm_streamed(benchmark::State &state, bool back, int k) {
  rb::guarded(state, [&] {
    multi_problem &p = problem(k);
    if (!g_stream)
      g_stream = std::make_unique<host_stream_data>(*g_host);
    if (!p.streamer) {
      p.streamer =
          std::make_unique<gpu::multi_device_streamer<float>>(p.devices, stream_chunk);
      for (const device_part &part : p.parts)
        p.records.emplace_back(part.detectors.data(), part.detectors.size() / 3,
                               g_stream->records.data(), lm_events);
    }
    auto &st = *p.streamer;
    const rp::op::tof_listmode<float> lm(rb::dmi_tof<float>()); // bins from the records
    if (back) {
      auto &reducer = p.reducer(gpu::reduce_method::automatic);
      time_multi(
          state, p, [&] { p.image.zero(p.streams); },
          [&] { st.back(lm, p.image, p.records, g_stream->ones.cspan(), p.streams); },
          [&] { reducer.sum(p.image, p.streams); });
    } else {
      time_multi(
          state, p, [] {},
          [&] { st.forward(lm, p.image, p.records, g_stream->out.span(), p.streams); },
          [] {});
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(lm_events));
    state.SetBytesProcessed(std::int64_t(state.iterations()) *
                            std::int64_t(lm_events * sizeof(rs::listmode_event)));
  });
}

void bm_reduce(benchmark::State &state, gpu::reduce_method m, int k) {
  rb::guarded(state, [&] {
    multi_problem &p = problem(k);
    auto &reducer = p.reducer(m);
    time_multi(
        state, p, [&] { p.image.fill(1.0f, p.streams); }, [] {},
        [&] { reducer.sum(p.image, p.streams); });
    state.counters["MB"] = double(p.image.num_voxels() * sizeof(float)) * 1e-6;
  });
}

/// Console reporter that counts failed runs and keeps the median LORs/s.
class multi_reporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      if (rb::run_failed(r, 0))
        ++failed_;
      else if (r.aggregate_name == "median")
        times_ms_[r.run_name.str()] = r.GetAdjustedRealTime() * 1e-3; // us -> ms
    }
    ConsoleReporter::ReportRuns(runs);
  }
  int failed() const { return failed_; }

  /// Speed-up of every "devices:K" run over "devices:1".
  void print_speedups() const {
    std::printf("\nmulti-GPU speed-up over one device (median times)\n");
    for (const auto &entry : times_ms_) {
      const std::string &name = entry.first;
      const auto at = name.find("devices:");
      if (at == std::string::npos)
        continue;
      auto end = name.find('/', at);
      if (end == std::string::npos)
        end = name.size();
      if (name.substr(at, end - at) == "devices:1")
        continue;
      std::string one = name;
      one.replace(at, end - at, "devices:1");
      const auto base = times_ms_.find(one);
      if (base == times_ms_.end())
        continue;
      std::printf("  %-48s %9.3f ms  vs %9.3f ms  x%.2f\n", name.c_str(), entry.second,
                  base->second, base->second / entry.second);
    }
  }

private:
  int failed_ = 0;
  std::map<std::string, double> times_ms_;
};

void register_all(int max_devices) {
  using benchmark::RegisterBenchmark;
  std::vector<int> counts;
  for (int k = 1; k <= max_devices; k *= 2)
    counts.push_back(k);
  auto add = [&](const std::string &name, auto fn, auto arg) {
    for (int k : counts)
      rb::configure(RegisterBenchmark((name + "/devices:" + std::to_string(k)).c_str(),
                                      fn, arg, k));
  };
  add("multi/dmi-full/forward", bm_full, false);
  add("multi/dmi-full/back", bm_full, true);
  add("multi/dmi-tof-lm/forward", bm_lm, false);
  add("multi/dmi-tof-lm/back", bm_lm, true);
  add("multi/dmi-tof-lm/streamed-forward", bm_lm_streamed, false);
  add("multi/dmi-tof-lm/streamed-back", bm_lm_streamed, true);
  for (int k : counts) {
    if (k == 1)
      continue;
    const std::string base = "multi/reduce/devices:" + std::to_string(k);
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
    rb::configure(RegisterBenchmark((base + "/method:nccl").c_str(), bm_reduce,
                                    gpu::reduce_method::nccl, k));
#endif
    rb::configure(RegisterBenchmark((base + "/method:peer").c_str(), bm_reduce,
                                    gpu::reduce_method::peer, k));
    rb::configure(RegisterBenchmark((base + "/method:host_staged").c_str(), bm_reduce,
                                    gpu::reduce_method::host_staged, k));
  }
}

} // namespace

int main(int argc, char **argv) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 0); // NVLink multicast off unless chosen
  const bool list_only = rb::lists_only(argc, argv);
  if (!rb::initialize_with_defaults(argc, argv))
    return 1;
  const int devices = gpu::device_count();
  if (devices == 0 && !list_only) {
    std::printf("no CUDA device: GPU benchmarks skipped\n");
    return 0;
  }
  int exit_code = 0;
  multi_reporter reporter;
  try {
    if (devices > 0) {
      cudaDeviceProp prop{};
      RESPROJ_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
      benchmark::AddCustomContext("gpu", prop.name);
      benchmark::AddCustomContext("gpus", std::to_string(devices));
    }
    register_all(devices > 0 ? std::min(devices, gpu::max_set_devices) : 2);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    if (!list_only)
      reporter.print_speedups();
    if (reporter.failed() > 0) {
      std::printf("\n%d benchmark run(s) reported an error\n", reporter.failed());
      exit_code = 2;
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_multi_gpu: %s\n", e.what());
    exit_code = 1;
  }
  std::fflush(stdout);
  release_problems();
  benchmark::Shutdown();
  return exit_code;
}
