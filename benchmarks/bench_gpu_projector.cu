// GPU non-TOF projector benchmarks on the reference problems
// (spec/benchmark-problems.md), float images, box phantom:
//
//   gpu/dmi-subset/{forward,back}            image and LORs resident
//   gpu/dmi-full/{forward,back}              image and LORs resident
//   gpu/dmi-chunks/resident/chunk:1eK        dmi-subset forward as chunks of
//                                            10^K LORs (K = 3..6; 1e7 runs
//                                            over the dmi-full LORs), back to
//                                            back on one stream, one sync
//   gpu/dmi-chunks/resident-graph/chunk:1eK  the same chunk loop captured once
//                                            into a CUDA graph, replay timed
//   gpu/dmi-chunks/streamer-pinned/chunk:1eK host LORs (pinned) through one
//                                            gpu::lor_streamer call
//   gpu/dmi-chunks/streamer-pageable/...     host LORs (pageable), likewise
//   gpu/dmi-chunks/naive/chunk:1eK           per chunk: cudaMalloc image,
//                                            LORs and output, copy image and
//                                            LORs (pageable), compute, copy
//                                            back, cudaFree, synchronise
//   gpu/tpl-sweep/{forward,back}/chunk:X/tpl:G
//                                            threads per LOR 1, 4, 8, 32 and
//                                            the automatic choice ("auto")
//
// Timing: CUDA events around the work on its stream (host wall clock for the
// host-blocking streamer and naive variants), UseManualTime, one warm-up
// call before each timed loop, 5 repetitions, aggregates only: read the
// `_median` rows. items_per_second is LORs per second; "us_per_call" is the
// time per projection call (chunk benchmarks); "host_us_per_call" is the
// host time to enqueue one call (resident chunks). Back projections use
// values all 1, and the image is zeroed outside the timed region.
//
// After the runs a "size your LOR chunks" table is printed (LORs/s per chunk
// size and variant, as a percentage of the full dmi-subset forward figure,
// and the first chunk size reaching 90% of it), and a threads-per-LOR table.
//
// Extra flag (given before or among the Google Benchmark flags):
//   --chunk_csv=PATH   also write the chunk table as CSV to PATH
//
// Without a CUDA device the program prints a message and exits with 0.
// Exit code 2 if any benchmark reported an error.

#include <benchmark/benchmark.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/phantom.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/sinogram_source.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rs = resproj::scanner;

// ------------------------------------------------------------ problems --

/// Image, LORs and buffers of dmi-subset, resident on the device. Also keeps
/// the pageable host copies (for the streamer and naive variants).
struct subset_problem {
  rp::image_geometry geometry = rb::reference_image_geometry();
  gpu::stream s;
  std::vector<float> host_image;       ///< box phantom, pageable
  rb::lor_set<float> host_lors;        ///< pageable
  std::vector<float> host_out;         ///< pageable forward output
  gpu::device_image<float> image;      ///< box phantom (forward input)
  gpu::device_image<float> back_image; ///< back projection output
  gpu::device_buffer<float> starts, ends, out, ones;

  subset_problem()
      : host_image(rb::box_phantom<float>(geometry)),
        host_lors(rb::dmi_subset_lors<float>()), host_out(host_lors.count()),
        image(geometry, s), back_image(geometry, s), starts(host_lors.starts.size(), s),
        ends(host_lors.ends.size(), s), out(host_lors.count(), s),
        ones(host_lors.count(), s) {
    image.upload(rp::span<const float>(host_image.data(), host_image.size()), s);
    starts.copy_from_host(
        rp::span<const float>(host_lors.starts.data(), host_lors.starts.size()), s);
    ends.copy_from_host(
        rp::span<const float>(host_lors.ends.data(), host_lors.ends.size()), s);
    ones.fill(1.0f, s);
    back_image.zero(s);
    s.synchronize();
  }

  std::size_t count() const noexcept { return host_lors.count(); }
  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), count());
  }
};

/// dmi-subset LORs in pinned host memory, and a pinned output.
struct pinned_subset {
  gpu::pinned_buffer<float> starts, ends, out;
  explicit pinned_subset(const subset_problem &p)
      : starts(p.host_lors.starts.size()), ends(p.host_lors.ends.size()), out(p.count()) {
    std::copy(p.host_lors.starts.begin(), p.host_lors.starts.end(), starts.begin());
    std::copy(p.host_lors.ends.begin(), p.host_lors.ends.end(), ends.begin());
  }
  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), out.size());
  }
};

/// dmi-full LORs (146,292,480), resident. Generated on the host block of
/// planes by block (in parallel over planes) into pinned staging and
/// uploaded into one device buffer, so no 3.5 GB host copy is ever held.
struct full_problem {
  std::size_t count = 0;
  gpu::device_buffer<float> starts, ends, out, ones;
  double setup_seconds = 0;

  explicit full_problem(subset_problem &p) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto scanner = rs::dmi();
    const auto layout = rs::dmi_sinogram();
    const auto views = rs::subset_views(layout, 0, 1); // every view
    const std::size_t per_plane = rs::sinogram_lor_count(layout, views.size(), 1);
    count = per_plane * std::size_t(layout.num_planes());
    starts = gpu::device_buffer<float>(3 * count, p.s);
    ends = gpu::device_buffer<float>(3 * count, p.s);
    out = gpu::device_buffer<float>(count, p.s);
    ones = gpu::device_buffer<float>(count, p.s);
    ones.fill(1.0f, p.s);

    constexpr int block_planes = 144; // 1296 = 9 blocks; 2 x 195 MB pinned
    const std::size_t block_values = 3 * per_plane * block_planes;
    gpu::pinned_buffer<float> h_starts(block_values), h_ends(block_values);
    for (int first = 0; first < layout.num_planes(); first += block_planes) {
      const int planes = std::min(block_planes, layout.num_planes() - first);
      rb::parallel_ranges(std::size_t(planes), [&](std::size_t p0, std::size_t np) {
        const std::size_t offset = 3 * per_plane * p0;
        const std::size_t values = 3 * per_plane * np;
        rs::sinogram_lors(scanner, layout, views, first + int(p0), int(np),
                          rp::span<float>(h_starts.data() + offset, values),
                          rp::span<float>(h_ends.data() + offset, values));
      });
      const std::size_t values = 3 * per_plane * std::size_t(planes);
      const std::size_t at = 3 * per_plane * std::size_t(first);
      starts.copy_from_host(h_starts.data(), values, at, p.s);
      ends.copy_from_host(h_ends.data(), values, at, p.s);
      p.s.synchronize(); // before the staging is overwritten
    }
    setup_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "dmi-full: %zu LORs generated and uploaded in %.2f s\n", count,
                 setup_seconds);
  }

  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), count);
  }
};

/// The reference scanner's detector table, plane table and view lists on the
/// device, and LOR sources that derive dmi-subset and dmi-full from them
/// (sinogram descriptions) or read 8-byte detector pairs (dmi-subset).
struct detector_problem {
  gpu::device_buffer<float> detectors;
  gpu::device_buffer<std::int32_t> planes, subset_views, all_views, subset_pairs;
  rs::sinogram_source<float> subset_sino, full_sino;
  rp::detector_pairs<float> subset_indexed;

  explicit detector_problem(subset_problem &p) {
    const auto scanner = rs::dmi();
    const auto layout = rs::dmi_sinogram();
    const auto table = scanner.detector_centres();
    const auto plane_table = layout.plane_table();
    const auto sv = rs::subset_views(layout, 0, rs::dmi_num_subsets);
    const auto av = rs::subset_views(layout, 0, 1);
    const std::vector<std::int32_t> sv32(sv.begin(), sv.end()),
        av32(av.begin(), av.end());
    detectors =
        gpu::make_device_buffer(rp::span<const float>(table.data(), table.size()), p.s);
    planes = gpu::make_device_buffer(
        rp::span<const std::int32_t>(plane_table.data(), plane_table.size()), p.s);
    subset_views = gpu::make_device_buffer(
        rp::span<const std::int32_t>(sv32.data(), sv32.size()), p.s);
    all_views = gpu::make_device_buffer(
        rp::span<const std::int32_t>(av32.data(), av32.size()), p.s);
    const auto geometry = layout.geometry(planes.data());
    subset_sino = rs::make_sinogram_source<float>(
        detectors.data(), table.size() / 3, geometry, subset_views.data(),
        int(sv32.size()), 0, layout.num_planes());
    full_sino = rs::make_sinogram_source<float>(detectors.data(), table.size() / 3,
                                                geometry, all_views.data(),
                                                int(av32.size()), 0, layout.num_planes());
    // Explicit detector pairs of dmi-subset, in the same order.
    const auto host_geometry = layout.geometry(plane_table.data());
    std::vector<std::int32_t> pairs;
    pairs.reserve(2 * subset_sino.count);
    for (int plane = 0; plane < layout.num_planes(); ++plane)
      for (int view : sv)
        for (int radial = 0; radial < layout.num_radial; ++radial) {
          int da, db;
          host_geometry.detector_pair(plane, view, radial, da, db);
          pairs.push_back(da);
          pairs.push_back(db);
        }
    subset_pairs = gpu::make_device_buffer(
        rp::span<const std::int32_t>(pairs.data(), pairs.size()), p.s);
    subset_indexed = rp::detector_pairs<float>(detectors.data(), table.size() / 3,
                                               subset_pairs.data(), subset_sino.count);
    p.s.synchronize();
  }
};

// Created lazily by the first benchmark that needs them, released at the
// end of main (before the CUDA runtime shuts down).
std::unique_ptr<detector_problem> g_detectors;
std::unique_ptr<subset_problem> g_subset;
std::unique_ptr<pinned_subset> g_pinned;
std::unique_ptr<full_problem> g_full;
/// One streamer per chunk size (its pinned and device staging are allocated
/// once, not per repetition).
std::map<std::size_t, std::unique_ptr<gpu::lor_streamer<float>>> g_streamers;

subset_problem &subset() {
  if (!g_subset)
    g_subset = std::make_unique<subset_problem>();
  return *g_subset;
}
detector_problem &detectors() {
  if (!g_detectors)
    g_detectors = std::make_unique<detector_problem>(subset());
  return *g_detectors;
}
pinned_subset &pinned() {
  if (!g_pinned)
    g_pinned = std::make_unique<pinned_subset>(subset());
  return *g_pinned;
}
full_problem &full() {
  if (!g_full)
    g_full = std::make_unique<full_problem>(subset());
  return *g_full;
}
gpu::lor_streamer<float> &streamer(std::size_t max_chunk) {
  auto &slot = g_streamers[max_chunk];
  if (!slot)
    slot = std::make_unique<gpu::lor_streamer<float>>(max_chunk);
  return *slot;
}

void release_problems() noexcept {
  try {
    if (g_subset)
      g_subset->s.synchronize();
  } catch (...) {
  }
  g_streamers.clear();
  g_detectors.reset();
  g_full.reset();
  g_pinned.reset();
  g_subset.reset();
}

// ------------------------------------------------------------- helpers --

std::size_t num_calls(std::size_t count, std::size_t chunk) {
  return (count + chunk - 1) / chunk;
}

/// items_per_second = LORs/s; with `calls`, also "us_per_call".
void set_counters(benchmark::State &state, std::size_t lors_per_iteration,
                  std::size_t calls_per_iteration = 0) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) *
                          std::int64_t(lors_per_iteration));
  if (calls_per_iteration > 0)
    // seconds / (iterations * calls * 1e-6) = microseconds per call
    state.counters["us_per_call"] = benchmark::Counter(
        double(calls_per_iteration) * 1e-6,
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// Threads per LOR the library uses for `count` LORs with `opt`.
int chosen_threads_per_lor(const gpu::launch_options &opt, std::size_t count,
                           int device) {
  return gpu::detail::threads_per_lor(opt, count, device);
}

/// Forward projection of `lors` in consecutive chunks of `chunk` LORs, all
/// queued on `s`, no synchronisation.
void forward_chunks(const gpu::device_image<float> &image, rp::lor_view<const float> lors,
                    rp::span<float> out, std::size_t chunk,
                    const gpu::launch_options &opt, gpu::stream_ref s) {
  for (std::size_t first = 0; first < lors.count; first += chunk) {
    const std::size_t n = std::min(chunk, lors.count - first);
    gpu::forward<float>(image.cview(), lors.subview(first, n), out.subspan(first, n), opt,
                        s);
  }
}

/// RAII for a captured CUDA graph and its executable.
struct graph_holder {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  graph_holder() = default;
  graph_holder(const graph_holder &) = delete;
  graph_holder &operator=(const graph_holder &) = delete;
  ~graph_holder() {
    if (exec != nullptr)
      RESPROJ_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(exec));
    if (graph != nullptr)
      RESPROJ_CUDA_TRY_NOTHROW(cudaGraphDestroy(graph));
  }
};

// ---------------------------------------------------------- benchmarks --

void bm_subset_forward(benchmark::State &state, gpu::launch_options opt) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const auto lors = p.lors();
    rb::time_on_stream(state, p.s, [&] {
      gpu::forward<float>(p.image.cview(), lors, p.out.span(), opt, p.s);
    });
    set_counters(state, lors.count);
    // Sanity check of the result: about 56% of the values are exactly 0.
    p.out.copy_to_host(rp::span<float>(p.host_out.data(), p.host_out.size()), p.s);
    p.s.synchronize();
    const auto zeros = std::count(p.host_out.begin(), p.host_out.end(), 0.0f);
    state.counters["zero_fraction"] = double(zeros) / double(p.host_out.size());
    state.counters["threads_per_lor"] =
        chosen_threads_per_lor(opt, lors.count, p.image.device());
  });
}

void bm_subset_back(benchmark::State &state, gpu::launch_options opt) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const auto lors = p.lors();
    rb::time_on_stream(
        state, p.s, [&] { p.back_image.zero(p.s); },
        [&] { gpu::back<float>(p.back_image.view(), lors, p.ones.cspan(), opt, p.s); });
    set_counters(state, lors.count);
    state.counters["threads_per_lor"] =
        chosen_threads_per_lor(opt, lors.count, p.image.device());
  });
}

void bm_full_forward(benchmark::State &state, gpu::launch_options opt) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    full_problem &f = full();
    const auto lors = f.lors();
    rb::time_on_stream(state, p.s, [&] {
      gpu::forward<float>(p.image.cview(), lors, f.out.span(), opt, p.s);
    });
    set_counters(state, lors.count);
  });
}

void bm_full_back(benchmark::State &state, gpu::launch_options opt) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    full_problem &f = full();
    const auto lors = f.lors();
    rb::time_on_stream(
        state, p.s, [&] { p.back_image.zero(p.s); },
        [&] { gpu::back<float>(p.back_image.view(), lors, f.ones.cspan(), opt, p.s); });
    set_counters(state, lors.count);
  });
}

/// Forward and back over a LOR source derived on the device (issue 5):
/// `which` 0 = dmi-subset sinogram description, 1 = dmi-subset detector
/// pairs, 2 = dmi-full sinogram description. Counter "bytes_per_lor": LOR
/// bytes read from memory per LOR (0 for descriptions, 8 for pairs).
template <class Source>
void bm_source(benchmark::State &state, const Source &lors, rp::span<float> out,
               rp::span<const float> ones, bool back, gpu::launch_options opt,
               double bytes_per_lor) {
  subset_problem &p = subset();
  if (back)
    rb::time_on_stream(
        state, p.s, [&] { p.back_image.zero(p.s); },
        [&] { gpu::back<float>(p.back_image.view(), lors, ones, opt, p.s); });
  else
    rb::time_on_stream(
        state, p.s, [&] { gpu::forward<float>(p.image.cview(), lors, out, opt, p.s); });
  set_counters(state, lors.count);
  state.counters["bytes_per_lor"] = bytes_per_lor;
}

void bm_derived(benchmark::State &state, int which, bool back) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    detector_problem &d = detectors();
    gpu::launch_options opt;
    opt.rows = 1296; // [plane][view][radial]: lanes along planes
    if (which == 0)
      bm_source(state, d.subset_sino, p.out.span(), p.ones.cspan(), back, opt, 0.0);
    else if (which == 1)
      bm_source(state, d.subset_indexed, p.out.span(), p.ones.cspan(), back, opt, 8.0);
    else
      bm_source(state, d.full_sino, full().out.span(), full().ones.cspan(), back, opt,
                0.0);
  });
}

/// (a) resident LORs, chunks back to back on one stream, one sync. With
/// `use_full`, the chunks run over the dmi-full LORs (for chunks of 1e7,
/// larger than dmi-subset).
void bm_chunks_resident(benchmark::State &state, std::size_t chunk,
                        gpu::launch_options opt, bool use_full) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const auto lors = use_full ? full().lors() : p.lors();
    const rp::span<float> out = use_full ? full().out.span() : p.out.span();
    double host_seconds = 0;
    bool timed = false;
    rb::time_on_stream(state, p.s, [&] {
      const auto t0 = std::chrono::steady_clock::now();
      forward_chunks(p.image, lors, out, chunk, opt, p.s);
      if (timed)
        host_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      timed = true; // the first call is the warm-up
    });
    const std::size_t calls = num_calls(lors.count, chunk);
    set_counters(state, lors.count, calls);
    if (state.iterations() > 0)
      state.counters["host_us_per_call"] =
          host_seconds * 1e6 / (double(state.iterations()) * double(calls));
    state.counters["threads_per_lor"] =
        chosen_threads_per_lor(opt, std::min(chunk, lors.count), p.image.device());
  });
}

/// (a) as a CUDA graph: the chunk loop captured once, the replay timed.
void bm_chunks_graph(benchmark::State &state, std::size_t chunk) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const auto lors = p.lors();
    graph_holder g;
    RESPROJ_CUDA_TRY(cudaStreamBeginCapture(p.s.get(), cudaStreamCaptureModeThreadLocal));
    try {
      forward_chunks(p.image, lors, p.out.span(), chunk, {}, p.s);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      (void)cudaStreamEndCapture(p.s.get(), &broken);
      if (broken != nullptr)
        (void)cudaGraphDestroy(broken);
      (void)cudaGetLastError();
      throw;
    }
    RESPROJ_CUDA_TRY(cudaStreamEndCapture(p.s.get(), &g.graph));
    RESPROJ_CUDA_TRY(cudaGraphInstantiate(&g.exec, g.graph, 0));
    rb::time_on_stream(state, p.s,
                       [&] { RESPROJ_CUDA_TRY(cudaGraphLaunch(g.exec, p.s.get())); });
    set_counters(state, lors.count, num_calls(lors.count, chunk));
  });
}

/// (b) host LORs through one host-blocking lor_streamer call over the whole
/// subset, max_chunk = chunk.
void bm_chunks_streamer(benchmark::State &state, std::size_t chunk, bool use_pinned) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    gpu::lor_streamer<float> &st = streamer(chunk); // max_chunk = chunk, 3 slots
    rp::lor_view<const float> host_lors = p.host_lors.view();
    rp::span<float> host_out(p.host_out.data(), p.host_out.size());
    if (use_pinned) {
      pinned_subset &h = pinned();
      host_lors = h.lors();
      host_out = h.out.span();
    }
    rb::time_on_host(state,
                     [&] { st.forward(p.image.cview(), host_lors, host_out, p.s); });
    set_counters(state, host_lors.count, num_calls(host_lors.count, chunk));
  });
}

/// (c) the naive pattern, per chunk: cudaMalloc image + LORs + output, copy
/// image and LORs from pageable memory, compute, copy back, cudaFree,
/// synchronise. At most `max_calls` chunks per iteration (the first ones of
/// dmi-subset): each call costs milliseconds.
void bm_chunks_naive(benchmark::State &state, std::size_t chunk, std::size_t max_calls) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const std::size_t total = p.count();
    const std::size_t calls = std::min(num_calls(total, chunk), max_calls);
    const std::size_t lors_done = std::min(total, calls * chunk);
    const int device = p.image.device();
    const std::size_t image_bytes = p.host_image.size() * sizeof(float);
    cudaStream_t s = p.s.get();
    rb::time_on_host(state, [&] {
      for (std::size_t c = 0; c < calls; ++c) {
        const std::size_t first = c * chunk;
        const std::size_t n = std::min(chunk, total - first);
        float *d_image = nullptr, *d_starts = nullptr, *d_ends = nullptr,
              *d_out = nullptr;
        RESPROJ_CUDA_TRY(cudaMalloc(&d_image, image_bytes));
        RESPROJ_CUDA_TRY(cudaMalloc(&d_starts, 3 * n * sizeof(float)));
        RESPROJ_CUDA_TRY(cudaMalloc(&d_ends, 3 * n * sizeof(float)));
        RESPROJ_CUDA_TRY(cudaMalloc(&d_out, n * sizeof(float)));
        RESPROJ_CUDA_TRY(cudaMemcpyAsync(d_image, p.host_image.data(), image_bytes,
                                         cudaMemcpyHostToDevice, s));
        RESPROJ_CUDA_TRY(cudaMemcpyAsync(d_starts, p.host_lors.starts.data() + 3 * first,
                                         3 * n * sizeof(float), cudaMemcpyHostToDevice,
                                         s));
        RESPROJ_CUDA_TRY(cudaMemcpyAsync(d_ends, p.host_lors.ends.data() + 3 * first,
                                         3 * n * sizeof(float), cudaMemcpyHostToDevice,
                                         s));
        gpu::forward<float>(
            gpu::device_image_view<const float>(d_image, p.geometry, device),
            rp::lor_view<const float>(d_starts, d_ends, n), rp::span<float>(d_out, n),
            p.s);
        RESPROJ_CUDA_TRY(cudaMemcpyAsync(p.host_out.data() + first, d_out,
                                         n * sizeof(float), cudaMemcpyDeviceToHost, s));
        RESPROJ_CUDA_TRY(cudaFree(d_out));
        RESPROJ_CUDA_TRY(cudaFree(d_ends));
        RESPROJ_CUDA_TRY(cudaFree(d_starts));
        RESPROJ_CUDA_TRY(cudaFree(d_image));
        RESPROJ_CUDA_TRY(cudaStreamSynchronize(s));
      }
    });
    set_counters(state, lors_done, calls);
  });
}

// -------------------------------------------------------- registration --

/// A chunk benchmark, for the "size your LOR chunks" table.
struct chunk_entry {
  std::string variant;
  std::string chunk_label;
  std::size_t chunk;
  std::string name; ///< registered name
  std::string note;
};
std::vector<chunk_entry> g_chunk_entries;

/// A threads-per-LOR sweep benchmark.
struct sweep_entry {
  std::string direction;
  std::string chunk_label;
  std::string tpl_label;
  std::string name;
};
std::vector<sweep_entry> g_sweep_entries;

const std::string k_subset_forward = "gpu/dmi-subset/forward";

std::string chunk_label(std::size_t chunk) {
  int k = 0;
  std::size_t c = chunk;
  while (c >= 10 && c % 10 == 0) {
    c /= 10;
    ++k;
  }
  return c == 1 ? "1e" + std::to_string(k) : std::to_string(chunk);
}

/// Manual time in microseconds, aggregates only. Repetitions (5) and the
/// minimum time per repetition (0.1 s) come from default flags (see main),
/// so that they do not become part of the benchmark names; a repetition of
/// a call longer than 0.1 s (dmi-full) is one timed iteration.

void register_all() {
  using benchmark::RegisterBenchmark;
  const gpu::launch_options automatic{};

  rb::configure(
      RegisterBenchmark(k_subset_forward.c_str(), bm_subset_forward, automatic));
  rb::configure(RegisterBenchmark("gpu/dmi-subset/back", bm_subset_back, automatic));
  // dmi-full: 70-800 ms per call: one timed iteration per repetition.
  rb::configure(RegisterBenchmark("gpu/dmi-full/forward", bm_full_forward, automatic));
  {
    gpu::launch_options rows;
    rows.rows = 1296; // [plane][view][radial]: lanes along planes
    rb::configure(RegisterBenchmark("gpu/dmi-full/forward/rows", bm_full_forward, rows));
    rb::configure(RegisterBenchmark("gpu/dmi-full/back/rows", bm_full_back, rows));
  }
  rb::configure(RegisterBenchmark("gpu/dmi-full/back", bm_full_back, automatic));
  // LORs derived on the device (sinogram descriptions, detector pairs).
  rb::configure(
      RegisterBenchmark("gpu/dmi-subset/forward/sinogram-source", bm_derived, 0, false));
  rb::configure(
      RegisterBenchmark("gpu/dmi-subset/back/sinogram-source", bm_derived, 0, true));
  rb::configure(
      RegisterBenchmark("gpu/dmi-subset/forward/detector-pairs", bm_derived, 1, false));
  rb::configure(
      RegisterBenchmark("gpu/dmi-subset/back/detector-pairs", bm_derived, 1, true));
  rb::configure(
      RegisterBenchmark("gpu/dmi-full/forward/sinogram-source", bm_derived, 2, false));
  rb::configure(
      RegisterBenchmark("gpu/dmi-full/back/sinogram-source", bm_derived, 2, true));

  const std::size_t subset_chunks[] = {1000, 10000, 100000, 1000000};
  const std::size_t chunk_1e7 = 10000000;

  for (std::size_t c : subset_chunks) {
    const std::string name = "gpu/dmi-chunks/resident/chunk:" + chunk_label(c);
    rb::configure(
        RegisterBenchmark(name.c_str(), bm_chunks_resident, c, automatic, false));
    g_chunk_entries.push_back({"resident", chunk_label(c), c, name, ""});
  }
  {
    const std::string name = "gpu/dmi-chunks/resident/chunk:" + chunk_label(chunk_1e7);
    rb::configure(
        RegisterBenchmark(name.c_str(), bm_chunks_resident, chunk_1e7, automatic, true));
    g_chunk_entries.push_back(
        {"resident", chunk_label(chunk_1e7), chunk_1e7, name, "dmi-full LORs"});
  }
  for (std::size_t c : {std::size_t(1000), std::size_t(10000)}) {
    const std::string name = "gpu/dmi-chunks/resident-graph/chunk:" + chunk_label(c);
    rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_graph, c));
    g_chunk_entries.push_back({"resident-graph", chunk_label(c), c, name, ""});
  }
  for (bool use_pinned : {true, false}) {
    const std::string variant = use_pinned ? "streamer-pinned" : "streamer-pageable";
    for (std::size_t c : subset_chunks) {
      const std::string name = "gpu/dmi-chunks/" + variant + "/chunk:" + chunk_label(c);
      rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_streamer, c, use_pinned));
      g_chunk_entries.push_back({variant, chunk_label(c), c, name, ""});
    }
  }
  constexpr std::size_t naive_max_calls = 32;
  for (std::size_t c : subset_chunks) {
    const std::string name = "gpu/dmi-chunks/naive/chunk:" + chunk_label(c);
    rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_naive, c, naive_max_calls));
    g_chunk_entries.push_back(
        {"naive", chunk_label(c), c, name,
         "first " + std::to_string(naive_max_calls) + " chunks at most"});
  }

  // Threads-per-LOR sweep (0 = the library's automatic choice).
  const int tpls[] = {1, 2, 4, 8, 16, 32, 0};
  auto tpl_label = [](int g) { return g == 0 ? std::string("auto") : std::to_string(g); };
  for (std::size_t c : {std::size_t(1000), std::size_t(10000), std::size_t(100000)}) {
    for (int g : tpls) {
      gpu::launch_options opt;
      opt.threads_per_lor = g;
      const std::string name =
          "gpu/tpl-sweep/forward/chunk:" + chunk_label(c) + "/tpl:" + tpl_label(g);
      rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_resident, c, opt, false));
      g_sweep_entries.push_back({"forward", chunk_label(c), tpl_label(g), name});
    }
  }
  // Resident chunks without the per-call pointer checks (host cost).
  for (std::size_t c : {std::size_t(1000), std::size_t(10000)}) {
    gpu::launch_options opt;
    opt.check_pointers = false;
    const std::string name = "gpu/dmi-chunks/resident-unchecked/chunk:" + chunk_label(c);
    rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_resident, c, opt, false));
  }
  // Lanes along sinogram planes: the subset is [1296 planes][8 views][415].
  for (int g : {1, 2, 4, 8, 0}) {
    gpu::launch_options opt;
    opt.threads_per_lor = g;
    opt.rows = 1296;
    std::string name = "gpu/rows-sweep/forward/tpl:" + tpl_label(g);
    rb::configure(RegisterBenchmark(name.c_str(), bm_subset_forward, opt));
    name = "gpu/rows-sweep/back/tpl:" + tpl_label(g);
    rb::configure(RegisterBenchmark(name.c_str(), bm_subset_back, opt));
  }
  for (int g : tpls) {
    gpu::launch_options opt;
    opt.threads_per_lor = g;
    std::string name = "gpu/tpl-sweep/forward/chunk:all/tpl:" + tpl_label(g);
    rb::configure(RegisterBenchmark(name.c_str(), bm_subset_forward, opt));
    g_sweep_entries.push_back({"forward", "all", tpl_label(g), name});
    name = "gpu/tpl-sweep/back/chunk:all/tpl:" + tpl_label(g);
    rb::configure(RegisterBenchmark(name.c_str(), bm_subset_back, opt));
    g_sweep_entries.push_back({"back", "all", tpl_label(g), name});
  }
}

// ----------------------------------------------------------- reporting --

/// Console reporter that also keeps, per run name, the median of each
/// counter (from the "median" aggregate, or computed over the repetitions
/// when no aggregate was reported).
class capture_reporter : public benchmark::ConsoleReporter {
public:
  capture_reporter() : benchmark::ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      const std::string name = r.run_name.str();
      if (rb::run_failed(r, 0)) {
        if (std::find(failed_names_.begin(), failed_names_.end(), name) ==
            failed_names_.end())
          failed_names_.push_back(name);
        continue;
      }
      std::map<std::string, double> values;
      for (const auto &c : r.counters)
        values[c.first] = c.second.value;
      values["seconds"] =
          r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median")
          medians_[name] = values;
      } else {
        repetitions_[name].push_back(values);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  /// Median of counter `key` of the run registered as `registered` (the
  /// reported name may carry suffixes such as "/manual_time"); NaN if absent.
  double median(const std::string &registered, const std::string &key) const {
    for (const auto &m : medians_)
      if (matches(m.first, registered)) {
        const auto it = m.second.find(key);
        return it == m.second.end() ? NAN : it->second;
      }
    for (const auto &r : repetitions_)
      if (matches(r.first, registered)) {
        std::vector<double> v;
        for (const auto &rep : r.second) {
          const auto it = rep.find(key);
          if (it != rep.end())
            v.push_back(it->second);
        }
        if (v.empty())
          return NAN;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
      }
    return NAN;
  }

  int failed() const noexcept { return int(failed_names_.size()); }
  const std::vector<std::string> &failed_names() const noexcept { return failed_names_; }

private:
  /// The reported name is the registered one plus Google Benchmark's own
  /// suffixes ("/manual_time", "_median", ...) only: "gpu/dmi-subset/forward"
  /// must not match "gpu/dmi-subset/forward/detector-pairs/...".
  static bool matches(const std::string &reported, const std::string &registered) {
    if (reported == registered)
      return true;
    const std::string suffix = "/manual_time";
    return reported.size() > registered.size() &&
           reported.compare(0, registered.size(), registered) == 0 &&
           reported.compare(registered.size(), suffix.size(), suffix) == 0;
  }

  std::map<std::string, std::map<std::string, double>> medians_;
  std::map<std::string, std::vector<std::map<std::string, double>>> repetitions_;
  std::vector<std::string> failed_names_;
};

/// 2.31e9 style.
std::string sci(double v) {
  if (!std::isfinite(v))
    return "n/a";
  if (v == 0)
    return "0";
  const int e = int(std::floor(std::log10(std::fabs(v))));
  double m = v / std::pow(10.0, e);
  int ee = e;
  if (std::fabs(m) >= 9.995) { // rounding carried into the next decade
    m /= 10;
    ++ee;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fe%d", m, ee);
  return buf;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v))
    return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// Prints the "size your LOR chunks" table; writes it as CSV to `csv_path`
/// if not empty.
void print_chunk_table(const capture_reporter &rep, const std::string &gpu_name,
                       const std::string &csv_path) {
  const double peak = rep.median(k_subset_forward, "items_per_second");
  std::printf("\n== size your LOR chunks: dmi-subset forward as chunks, %s ==\n",
              gpu_name.c_str());
  std::printf("peak = full dmi-subset forward in one call: %s LORs/s (median)\n",
              sci(peak).c_str());
  std::printf("%-18s %-6s %10s %12s %10s %6s  %s\n", "variant", "chunk", "us/call",
              "LORs/s", "% of peak", ">=90%", "note");

  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    if (!csv)
      std::fprintf(stderr, "cannot write %s\n", csv_path.c_str());
    else
      csv << "variant,chunk,us_per_call,lors_per_second,percent_of_peak,reaches_90,"
             "note\n";
  }

  std::vector<std::string> variants;
  std::map<std::string, std::string> first_90;
  for (const chunk_entry &e : g_chunk_entries) {
    const double rate = rep.median(e.name, "items_per_second");
    const double us = rep.median(e.name, "us_per_call");
    if (!std::isfinite(rate))
      continue; // filtered out or failed
    if (std::find(variants.begin(), variants.end(), e.variant) == variants.end())
      variants.push_back(e.variant);
    const double pct = std::isfinite(peak) && peak > 0 ? 100.0 * rate / peak : NAN;
    const bool reaches = std::isfinite(pct) && pct >= 90.0;
    if (reaches && first_90.find(e.variant) == first_90.end())
      first_90[e.variant] = e.chunk_label;
    const std::string yn = std::isfinite(pct) ? (reaches ? "yes" : "no") : "n/a";
    std::printf("%-18s %-6s %10s %12s %10s %6s  %s\n", e.variant.c_str(),
                e.chunk_label.c_str(), fixed(us, 2).c_str(), sci(rate).c_str(),
                fixed(pct, 1).c_str(), yn.c_str(), e.note.c_str());
    if (csv)
      csv << e.variant << ',' << e.chunk << ',' << fixed(us, 3) << ',' << rate << ','
          << fixed(pct, 2) << ',' << yn << ',' << e.note << '\n';
  }
  if (variants.empty()) {
    std::printf("(no chunk benchmark ran)\n");
    return;
  }
  std::printf("first chunk size reaching 90%% of peak:");
  for (const std::string &v : variants) {
    const auto it = first_90.find(v);
    std::printf(" %s: %s;", v.c_str(),
                it == first_90.end() ? "none" : it->second.c_str());
  }
  std::printf("\n(1e7 chunks of the host-LOR variants are not run: dmi-subset has only "
              "4.3e6 LORs; resident 1e7 runs over the dmi-full LORs)\n");
}

/// Prints the threads-per-LOR sweep: LORs/s per chunk size and threads per
/// LOR, and what "auto" chose.
void print_sweep_table(const capture_reporter &rep) {
  std::vector<std::pair<std::string, std::string>> rows; // direction, chunk
  std::vector<std::string> cols;
  for (const sweep_entry &e : g_sweep_entries) {
    const auto row = std::make_pair(e.direction, e.chunk_label);
    if (std::find(rows.begin(), rows.end(), row) == rows.end())
      rows.push_back(row);
    if (std::find(cols.begin(), cols.end(), e.tpl_label) == cols.end())
      cols.push_back(e.tpl_label);
  }
  bool ran = false;
  for (const sweep_entry &e : g_sweep_entries)
    ran = ran || std::isfinite(rep.median(e.name, "items_per_second"));
  if (!ran)
    return;
  std::printf(
      "\n== threads per LOR sweep (LORs/s, median; auto: the library's choice) ==\n");
  std::printf("%-8s %-6s", "", "chunk");
  for (const auto &c : cols)
    std::printf(" %10s", ("tpl:" + c).c_str());
  std::printf("  %s\n", "auto chose");
  for (const auto &row : rows) {
    bool any = false;
    std::string line;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-8s %-6s", row.first.c_str(), row.second.c_str());
    line += buf;
    double chosen = NAN;
    for (const auto &c : cols) {
      double rate = NAN;
      for (const sweep_entry &e : g_sweep_entries)
        if (e.direction == row.first && e.chunk_label == row.second && e.tpl_label == c) {
          rate = rep.median(e.name, "items_per_second");
          if (c == "auto")
            chosen = rep.median(e.name, "threads_per_lor");
        }
      any = any || std::isfinite(rate);
      std::snprintf(buf, sizeof buf, " %10s", sci(rate).c_str());
      line += buf;
    }
    if (any)
      std::printf("%s  %s\n", line.c_str(), fixed(chosen, 0).c_str());
  }
}

// -------------------------------------------------------------- context --

std::string run_command(const std::string &command) {
  std::string result;
  FILE *pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    return result;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr)
    result += buf;
  pclose(pipe);
  while (!result.empty() && (result.back() == '\n' || result.back() == '\r'))
    result.pop_back();
  return result;
}

/// "clocks.sm, clocks.max.sm" (MHz) of `device` through nvidia-smi; empty
/// if unavailable.
std::string smi_clocks(int device) {
  char bus[32] = {};
  std::string query = "nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem "
                      "--format=csv,noheader";
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) {
    const std::string r = run_command(query + " -i " + bus + " 2>/dev/null");
    if (!r.empty() && r.find("rror") == std::string::npos)
      return r;
  } else {
    (void)cudaGetLastError();
  }
  const std::string r = run_command(query + " 2>/dev/null | head -n 1");
  return r.find("rror") == std::string::npos ? r : std::string();
}

std::string add_gpu_context(int device) {
  cudaDeviceProp prop{};
  RESPROJ_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  int max_clock_khz = 0;
  if (cudaDeviceGetAttribute(&max_clock_khz, cudaDevAttrClockRate, device) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    max_clock_khz = 0;
  }
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  benchmark::AddCustomContext("gpu", prop.name);
  benchmark::AddCustomContext("gpu_sms", std::to_string(prop.multiProcessorCount));
  benchmark::AddCustomContext("gpu_l2_mib", fixed(prop.l2CacheSize / 1048576.0, 1));
  benchmark::AddCustomContext("gpu_memory_gib",
                              fixed(prop.totalGlobalMem / 1073741824.0, 1));
  if (max_clock_khz > 0)
    benchmark::AddCustomContext("gpu_max_sm_clock_mhz",
                                std::to_string(max_clock_khz / 1000));
  benchmark::AddCustomContext("cuda_driver", std::to_string(driver));
  benchmark::AddCustomContext("cuda_runtime", std::to_string(runtime));
  const std::string clocks = smi_clocks(device);
  if (!clocks.empty())
    benchmark::AddCustomContext("nvidia_smi_clocks_sm_maxsm_mem_at_start", clocks);
  benchmark::AddCustomContext("dmi_subset_lors", std::to_string(rb::dmi_subset_count));
  return prop.name;
}

/// Removes "--NAME=VALUE" from argv and returns VALUE (empty if absent).
std::string take_flag(int &argc, char **argv, const char *prefix) {
  std::string value;
  const std::size_t len = std::strlen(prefix);
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix, len) == 0)
      value = argv[i] + len;
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return value;
}

} // namespace

int main(int argc, char **argv) {
  const std::string chunk_csv = take_flag(argc, argv, "--chunk_csv=");
  const bool list_only = rb::lists_only(argc, argv); // before Initialize eats the flag

  if (!rb::initialize_with_defaults(argc, argv))
    return 1;

  const int devices = gpu::device_count();
  if (devices == 0 && !list_only) {
    std::printf("no CUDA device: GPU benchmarks skipped\n");
    return 0;
  }

  std::string gpu_name = "no GPU";
  int exit_code = 0;
  try {
    if (devices > 0)
      gpu_name = add_gpu_context(gpu::current_device());
    register_all();
    capture_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    if (!list_only) {
      print_chunk_table(reporter, gpu_name, chunk_csv);
      print_sweep_table(reporter);
      const std::string clocks = smi_clocks(gpu::current_device());
      if (!clocks.empty())
        std::printf(
            "\nnvidia-smi clocks.sm, clocks.max.sm, clocks.mem after the runs: %s\n",
            clocks.c_str());
      if (reporter.failed() > 0) {
        std::printf("\n%d benchmark run(s) reported an error:", reporter.failed());
        for (const auto &n : reporter.failed_names())
          std::printf(" %s", n.c_str());
        std::printf("\n");
        exit_code = 2;
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_gpu_projector: %s\n", e.what());
    exit_code = 1;
  }
  std::fflush(stdout);
  release_problems();
  benchmark::Shutdown();
  return exit_code;
}
