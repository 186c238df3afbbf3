// GPU non-TOF projector benchmarks on the reference problems
// (docs/benchmark-problems.md), float images, box phantom.
//
// Plain rows first: gpu::forward / gpu::back(op::non_tof{}, image, lors,
// out, stream), no tuning, on the LORs as a user has them. The dmi-subset
// and dmi-full end points are in [plane][view][radial] order and are
// declared so once (lor_view(...).with_layout(lor_layout::sinogram(views,
// radial))); a scanner::sinogram_source knows its layout itself:
//
//   gpu/dmi-subset/{forward,back}/plain      4,302,720 end points, resident,
//                                            declared sinogram-ordered
//                                            (8 views x 415 radial)
//   gpu/dmi-subset/{forward,back}/sinogram-source/plain
//                                            the same LORs derived on the
//                                            device from the sinogram source
//   gpu/dmi-subset/{forward,back}/detector-pairs/plain
//                                            8-byte detector pairs into the
//                                            resident detector table,
//                                            declared sinogram-ordered
//   gpu/dmi-full/{forward,back}/plain        146,292,480 end points, resident,
//                                            declared sinogram-ordered
//                                            (272 views x 415 radial)
//   gpu/dmi-full/{forward,back}/sinogram-source/plain
//   gpu/dmi-{subset,full}/back/reproducible/plain
//                                            the reproducible back projection:
//                                            the same plain call into a
//                                            gpu::fixed_point_image<float>
//                                            (exponent 32; integer atomics),
//                                            compare with .../back/plain
//   gpu/dmi-subset/streamed-back/pinned/301-planes
//                                            back projection of the dmi-subset
//                                            end points in pinned host memory
//                                            (declared sinogram-ordered, values
//                                            pinned) through one
//                                            gpu::lor_streamer::back call,
//                                            max_chunk = 301 planes' worth
//                                            (999,320 LORs)
//
// Chunk rows (every call a plain call; chunks of 10^K LORs hold no whole
// sinogram planes, so they run in memory order; chunks of whole planes keep
// lanes along planes):
//   gpu/dmi-chunks/resident/chunk:1eK        dmi-subset forward as chunks of
//                                            10^K LORs (K = 3..6; 1e7 runs
//                                            over the dmi-full LORs), back to
//                                            back on one stream, one sync
//   gpu/dmi-chunks/resident-graph/chunk:1eK  the same chunk loop captured once
//                                            into a CUDA graph, replay timed
//   gpu/dmi-chunks/streamer-pinned/chunk:1eK host LORs (pinned) through one
//                                            gpu::lor_streamer call
//   gpu/dmi-chunks/streamer-pageable/...     host LORs (pageable), likewise
//   gpu/dmi-chunks/{resident,streamer-pinned}-planes/planes:N
//                                            the same in chunks of N whole
//                                            planes (N = 3, 30, 301: 9,960,
//                                            99,600 and 999,320 LORs)
//   gpu/dmi-chunks/naive/chunk:1eK           per chunk: cudaMalloc image,
//                                            LORs and output, copy image and
//                                            LORs (pageable), compute, copy
//                                            back, cudaFree, synchronise
//
// Variant rows, after the plain ones (forced kernels: a gpu::kernel_choice
// run through gpu::detail::run_forward / run_back, or a gpu::tuning):
//   gpu/dmi-{subset,full}/{forward,back}/memory-order
//                                            the table's choice for LORs of
//                                            unknown order: 4 threads per LOR,
//                                            LORs in memory order
//   gpu/dmi-chunks/resident-unchecked/chunk:1eK
//                                            resident chunks with
//                                            gpu::tuning::check_pointers off
//   gpu/rows-sweep/{forward,back}/tpl:G      lanes along sinogram planes (the
//                                            plain rows' mapping) with G
//                                            threads per LOR (auto: the
//                                            table's)
//   gpu/tpl-sweep/forward/chunk:X/tpl:G      G threads per LOR: resident
//                                            chunks (gpu::tuning) / the whole
//                                            subset in memory order (chunk:all)
//   gpu/tpl-sweep/back/chunk:all/tpl:G       likewise, back projection
//
// Timing: CUDA events around the work on its stream (host wall clock for the
// host-blocking streamer and naive variants), UseManualTime, one warm-up
// call before each timed loop, 5 repetitions, aggregates only: read the
// `_median` rows. items_per_second is LORs per second; "us_per_call" is the
// time per projection call (chunk benchmarks); "host_us_per_call" is the
// host time to enqueue one call (resident chunks); "threads_per_lor" and
// "rows" say which kernel ran (rows: sinogram planes taken by neighbouring
// lanes, 0: memory order). Back projections use values all 1, and the image
// (or the fixed-point image) is zeroed outside the timed region.
//
// After the runs a "size your LOR chunks" table is printed (LORs/s per chunk
// size and variant, as a percentage of the plain dmi-subset forward in one
// call, which the table measures itself whatever --benchmark_filter says;
// the first chunk size reaching 90% of it; a last line with the chunk size
// to use), and a threads-per-LOR table.
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
#include "common/dmi_device_sources.cuh"
#include "common/gpu_variants.cuh"
#include "common/phantom.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/fixed_point_image.cuh"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
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
  /// Reproducible back projection output (dmi-subset and dmi-full), made
  /// on first use.
  std::unique_ptr<gpu::fixed_point_image<float>> fixed_image;
  gpu::device_buffer<float> starts, ends, out, ones;
  /// [plane][view][radial]: 8 views x 415 radial bins per plane.
  rp::lor_layout layout = rb::dmi_subset_layout();

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
  gpu::fixed_point_image<float> &fixed() {
    if (!fixed_image)
      fixed_image = std::make_unique<gpu::fixed_point_image<float>>(geometry, s);
    return *fixed_image;
  }
  /// The resident end points, declared sinogram-ordered.
  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), count(), layout);
  }
  /// The pageable host end points, declared sinogram-ordered.
  rp::lor_view<const float> host_view() const noexcept {
    return host_lors.view().with_layout(layout);
  }
};

/// dmi-subset LORs in pinned host memory (declared sinogram-ordered), a
/// pinned output and pinned values all 1.
struct pinned_subset {
  gpu::pinned_buffer<float> starts, ends, out, ones;
  rp::lor_layout layout;
  explicit pinned_subset(const subset_problem &p)
      : starts(p.host_lors.starts.size()), ends(p.host_lors.ends.size()), out(p.count()),
        ones(p.count()), layout(p.layout) {
    std::copy(p.host_lors.starts.begin(), p.host_lors.starts.end(), starts.begin());
    std::copy(p.host_lors.ends.begin(), p.host_lors.ends.end(), ends.begin());
    std::fill(ones.begin(), ones.end(), 1.0f);
  }
  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), out.size(), layout);
  }
};

/// dmi-full LORs (146,292,480), resident. Generated on the host block of
/// planes by block (in parallel over planes) into pinned staging and
/// uploaded into one device buffer, so no 3.5 GB host copy is ever held.
struct full_problem {
  std::size_t count = 0;
  gpu::device_buffer<float> starts, ends, out, ones;
  /// [plane][view][radial]: 272 views x 415 radial bins per plane.
  rp::lor_layout layout = rb::dmi_full_layout();
  double setup_seconds = 0;

  explicit full_problem(subset_problem &p) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto scanner = rs::dmi();
    const auto sino = rs::dmi_sinogram();
    const auto views = rs::subset_views(sino, 0, 1); // every view
    const std::size_t per_plane = rs::sinogram_lor_count(sino, views.size(), 1);
    count = per_plane * std::size_t(sino.num_planes());
    starts = gpu::device_buffer<float>(3 * count, p.s);
    ends = gpu::device_buffer<float>(3 * count, p.s);
    out = gpu::device_buffer<float>(count, p.s);
    ones = gpu::device_buffer<float>(count, p.s);
    ones.fill(1.0f, p.s);

    constexpr int block_planes = 144; // 1296 = 9 blocks; 2 x 195 MB pinned
    const std::size_t block_values = 3 * per_plane * block_planes;
    gpu::pinned_buffer<float> h_starts(block_values), h_ends(block_values);
    for (int first = 0; first < sino.num_planes(); first += block_planes) {
      const int planes = std::min(block_planes, sino.num_planes() - first);
      rb::parallel_ranges(std::size_t(planes), [&](std::size_t p0, std::size_t np) {
        const std::size_t offset = 3 * per_plane * p0;
        const std::size_t values = 3 * per_plane * np;
        rs::sinogram_lors(scanner, sino, views, first + int(p0), int(np),
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

  /// The resident end points, declared sinogram-ordered.
  rp::lor_view<const float> lors() const noexcept {
    return rp::lor_view<const float>(starts.data(), ends.data(), count, layout);
  }
};

/// The reference scanner's tables on the device, the sinogram sources of
/// dmi-subset and dmi-full over them, and 8-byte detector pairs of
/// dmi-subset (in the same order, declared sinogram-ordered).
struct detector_problem {
  rb::dmi_device_tables tables;
  gpu::device_buffer<std::int32_t> subset_pairs;
  rp::detector_pairs<float> subset_indexed;

  explicit detector_problem(subset_problem &p) : tables(p.s) {
    const auto sino = rs::dmi_sinogram();
    const auto plane_table = sino.plane_table();
    const auto sv = rs::subset_views(sino, 0, rs::dmi_num_subsets);
    // Explicit detector pairs of dmi-subset, in the same order.
    const auto host_geometry = sino.geometry(plane_table.data());
    std::vector<std::int32_t> pairs;
    pairs.reserve(2 * tables.subset.count);
    for (int plane = 0; plane < sino.num_planes(); ++plane)
      for (int view : sv)
        for (int radial = 0; radial < sino.num_radial; ++radial) {
          int da, db;
          host_geometry.detector_pair(plane, view, radial, da, db);
          pairs.push_back(da);
          pairs.push_back(db);
        }
    subset_pairs = gpu::make_device_buffer(
        rp::span<const std::int32_t>(pairs.data(), pairs.size()), p.s);
    subset_indexed =
        rp::detector_pairs<float>(tables.detectors.data(), tables.num_detectors,
                                  subset_pairs.data(), tables.subset.count, p.layout);
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

constexpr rp::op::non_tof non_tof{};

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

/// Plain forward projection of `lors` in consecutive chunks of `chunk` LORs,
/// all queued on `s`, no synchronisation.
void forward_chunks(const gpu::device_image<float> &image, rp::lor_view<const float> lors,
                    rp::span<float> out, std::size_t chunk, const gpu::tuning &t,
                    gpu::stream_ref s) {
  for (std::size_t first = 0; first < lors.count; first += chunk) {
    const std::size_t n = std::min(chunk, lors.count - first);
    gpu::forward(non_tof, image.cview(), lors.subview(first, n), out.subspan(first, n), s,
                 t);
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

/// The kernel of a whole-problem row: the plain call, or a forced variant,
/// the table's choice as for `layout` with the overrides `tuning`.
struct kernel_spec {
  bool plain = true;
  bool reproducible = false; ///< back: the plain call into a fixed-point image
  rp::lor_layout layout{};
  gpu::tuning tuning{};

  static kernel_spec plain_call() { return {}; }
  static kernel_spec reproducible_call() {
    kernel_spec k;
    k.reproducible = true;
    return k;
  }
  static kernel_spec as_for(rp::lor_layout l, int threads_per_lor = 0) {
    kernel_spec k;
    k.plain = false;
    k.layout = l;
    k.tuning.threads_per_lor = threads_per_lor;
    return k;
  }
};

/// LOR sources of the whole-problem rows.
enum class source {
  subset_end_points,
  subset_sinogram,
  subset_pairs,
  full_end_points,
  full_sinogram
};

/// Forward or back projection of a whole LOR source with kernel `k`.
/// Counter "bytes_per_lor": LOR bytes read from memory per LOR (24 for end
/// points, 8 for detector pairs, 0 for a sinogram source); "zero_fraction"
/// (dmi-subset forward): the fraction of values exactly 0, a sanity check
/// (about 0.557 for the box phantom).
template <class Source>
void run_source(benchmark::State &state, const Source &lors, rp::span<float> out,
                rp::span<const float> ones, bool back, const kernel_spec &k,
                double bytes_per_lor, bool subset_output) {
  subset_problem &p = subset();
  const int device = p.image.device();
  const auto dir = back ? gpu::direction::back : gpu::direction::forward;
  const gpu::kernel_choice c =
      k.plain ? rb::plain_choice(non_tof, dir, lors, device)
              : rb::choice_as(non_tof, dir, k.layout, lors.count, device, k.tuning);
  if (back && k.reproducible) {
    gpu::fixed_point_image<float> &acc = p.fixed();
    rb::time_on_stream(
        state, p.s, [&] { acc.clear(p.s); },
        [&] { gpu::back(non_tof, acc, lors, ones, p.s); });
  } else if (back) {
    const auto image = p.back_image.view();
    if (!k.plain)
      rb::check_back(non_tof, image, lors, ones, p.s, k.tuning);
    rb::time_on_stream(
        state, p.s, [&] { p.back_image.zero(p.s); },
        [&] {
          if (k.plain)
            gpu::back(non_tof, image, lors, ones, p.s);
          else
            rb::back_as(c, non_tof, image, lors, ones, p.s);
        });
  } else {
    const auto image = p.image.cview();
    if (!k.plain)
      rb::check_forward(non_tof, image, lors, out, p.s, k.tuning);
    rb::time_on_stream(state, p.s, [&] {
      if (k.plain)
        gpu::forward(non_tof, image, lors, out, p.s);
      else
        rb::forward_as(c, non_tof, image, lors, out, p.s);
    });
    if (subset_output) {
      p.out.copy_to_host(rp::span<float>(p.host_out.data(), p.host_out.size()), p.s);
      p.s.synchronize();
      const auto zeros = std::count(p.host_out.begin(), p.host_out.end(), 0.0f);
      state.counters["zero_fraction"] = double(zeros) / double(p.host_out.size());
    }
  }
  set_counters(state, lors.count);
  rb::choice_counters(state, c);
  state.counters["bytes_per_lor"] = bytes_per_lor;
}

void bm_whole(benchmark::State &state, source src, bool back, kernel_spec k) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    switch (src) {
    case source::subset_end_points:
      run_source(state, p.lors(), p.out.span(), p.ones.cspan(), back, k, 24.0, true);
      break;
    case source::subset_sinogram:
      run_source(state, detectors().tables.subset, p.out.span(), p.ones.cspan(), back, k,
                 0.0, true);
      break;
    case source::subset_pairs:
      run_source(state, detectors().subset_indexed, p.out.span(), p.ones.cspan(), back, k,
                 8.0, true);
      break;
    case source::full_end_points:
      run_source(state, full().lors(), full().out.span(), full().ones.cspan(), back, k,
                 24.0, false);
      break;
    case source::full_sinogram:
      run_source(state, detectors().tables.full, full().out.span(), full().ones.cspan(),
                 back, k, 0.0, false);
      break;
    }
  });
}

/// Back projection of the dmi-subset end points in pinned host memory
/// (declared sinogram-ordered) through one host-blocking lor_streamer call,
/// max_chunk = `planes` whole sinogram planes' worth of LORs.
void bm_streamed_back(benchmark::State &state, int planes) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    pinned_subset &h = pinned();
    const rp::lor_view<const float> host_lors = h.lors();
    const std::size_t max_chunk = std::size_t(planes) * host_lors.layout.lors_per_plane;
    gpu::lor_streamer<float> &st = streamer(max_chunk);
    const rp::span<const float> values = h.ones.cspan();
    rb::time_on_host(
        state,
        [&] {
          p.back_image.zero(p.s);
          p.s.synchronize();
        },
        [&] { st.back(non_tof, p.back_image.view(), host_lors, values, p.s); });
    set_counters(state, host_lors.count, num_calls(host_lors.count, max_chunk));
    state.counters["max_chunk"] = double(max_chunk);
  });
}

/// (a) resident LORs, plain chunks back to back on one stream, one sync.
/// With `use_full`, the chunks run over the dmi-full LORs (for chunks of
/// 1e7, larger than dmi-subset). `t`: overrides (a tuned variant).
void bm_chunks_resident(benchmark::State &state, std::size_t chunk, gpu::tuning t,
                        bool use_full) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const auto lors = use_full ? full().lors() : p.lors();
    const rp::span<float> out = use_full ? full().out.span() : p.out.span();
    double host_seconds = 0;
    bool timed = false;
    rb::time_on_stream(state, p.s, [&] {
      const auto t0 = std::chrono::steady_clock::now();
      forward_chunks(p.image, lors, out, chunk, t, p.s);
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
    rb::choice_counters(state,
                        rb::plain_choice(non_tof, gpu::direction::forward,
                                         lors.subview(0, std::min(chunk, lors.count)),
                                         p.image.device(), t));
  });
}

/// (a) as a CUDA graph: the plain chunk loop captured once, the replay
/// timed.
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

/// (b) host LORs (declared sinogram-ordered) through one host-blocking
/// lor_streamer call over the whole subset, max_chunk = chunk.
void bm_chunks_streamer(benchmark::State &state, std::size_t chunk, bool use_pinned) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    gpu::lor_streamer<float> &st = streamer(chunk); // max_chunk = chunk, 3 slots
    rp::lor_view<const float> host_lors = p.host_view();
    rp::span<float> host_out(p.host_out.data(), p.host_out.size());
    if (use_pinned) {
      pinned_subset &h = pinned();
      host_lors = h.lors();
      host_out = h.out.span();
    }
    rb::time_on_host(
        state, [&] { st.forward(non_tof, p.image.cview(), host_lors, host_out, p.s); });
    set_counters(state, host_lors.count, num_calls(host_lors.count, chunk));
  });
}

/// (c) the naive pattern, per chunk: cudaMalloc image + LORs + output, copy
/// image and LORs from pageable memory, compute (plain call), copy back,
/// cudaFree, synchronise. At most `max_calls` chunks per iteration (the
/// first ones of dmi-subset): each call costs milliseconds.
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
        gpu::forward(non_tof,
                     gpu::device_image_view<const float>(d_image, p.geometry, device),
                     rp::lor_view<const float>(d_starts, d_ends, n, p.layout),
                     rp::span<float>(d_out, n), p.s);
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
  const kernel_spec plain = kernel_spec::plain_call();
  const gpu::tuning automatic{};

  // Plain calls first: every source as a user has it.
  const struct {
    source src;
    const char *family; ///< "<problem>/<direction>" is inserted before it
  } plain_rows[] = {
      {source::subset_end_points, ""},
      {source::subset_sinogram, "/sinogram-source"},
      {source::subset_pairs, "/detector-pairs"},
      {source::full_end_points, ""},
      {source::full_sinogram, "/sinogram-source"},
  };
  for (const auto &r : plain_rows) {
    const bool is_full =
        r.src == source::full_end_points || r.src == source::full_sinogram;
    const std::string problem = is_full ? "gpu/dmi-full/" : "gpu/dmi-subset/";
    for (const bool back : {false, true}) {
      // dmi-full: 50-800 ms per call: one timed iteration per repetition.
      const std::string name =
          problem + (back ? "back" : "forward") + r.family + "/plain";
      rb::configure(RegisterBenchmark(name.c_str(), bm_whole, r.src, back, plain));
    }
  }
  // The reproducible back projection (plain call, fixed-point image).
  rb::configure(RegisterBenchmark("gpu/dmi-subset/back/reproducible/plain", bm_whole,
                                  source::subset_end_points, true,
                                  kernel_spec::reproducible_call()));
  rb::configure(RegisterBenchmark("gpu/dmi-full/back/reproducible/plain", bm_whole,
                                  source::full_end_points, true,
                                  kernel_spec::reproducible_call()));
  rb::configure(RegisterBenchmark("gpu/dmi-subset/streamed-back/pinned/301-planes",
                                  bm_streamed_back, 301));

  // Chunk rows (plain calls).
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
  // Chunks of whole sinogram planes.
  const std::size_t per_plane = rb::dmi_subset_layout().lors_per_plane;
  for (const bool streamed : {false, true})
    for (int planes : {3, 30, 301}) {
      const std::size_t c = std::size_t(planes) * per_plane;
      const std::string variant = streamed ? "streamer-pinned-planes" : "resident-planes";
      const std::string name =
          "gpu/dmi-chunks/" + variant + "/planes:" + std::to_string(planes);
      if (streamed)
        rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_streamer, c, true));
      else
        rb::configure(
            RegisterBenchmark(name.c_str(), bm_chunks_resident, c, automatic, false));
      g_chunk_entries.push_back(
          {variant, chunk_label(c), c, name, std::to_string(planes) + " planes"});
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

  // Variants. The table's choice for LORs of unknown order (memory order).
  const kernel_spec memory_order = kernel_spec::as_for(rp::lor_layout{});
  for (const bool back : {false, true}) {
    const std::string dir = back ? "back" : "forward";
    rb::configure(RegisterBenchmark(("gpu/dmi-subset/" + dir + "/memory-order").c_str(),
                                    bm_whole, source::subset_end_points, back,
                                    memory_order));
    rb::configure(RegisterBenchmark(("gpu/dmi-full/" + dir + "/memory-order").c_str(),
                                    bm_whole, source::full_end_points, back,
                                    memory_order));
  }
  // Resident chunks without the per-call pointer checks (host cost).
  for (std::size_t c : {std::size_t(1000), std::size_t(10000)}) {
    gpu::tuning t;
    t.check_pointers = false;
    const std::string name = "gpu/dmi-chunks/resident-unchecked/chunk:" + chunk_label(c);
    rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_resident, c, t, false));
  }
  // Lanes along sinogram planes (dmi-subset: [1296 planes][8 views][415]),
  // threads per LOR forced.
  auto tpl_label = [](int g) { return g == 0 ? std::string("auto") : std::to_string(g); };
  for (int g : {1, 2, 4, 8, 0}) {
    const kernel_spec rows = kernel_spec::as_for(rb::dmi_subset_layout(), g);
    std::string name = "gpu/rows-sweep/forward/tpl:" + tpl_label(g);
    rb::configure(RegisterBenchmark(name.c_str(), bm_whole, source::subset_end_points,
                                    false, rows));
    name = "gpu/rows-sweep/back/tpl:" + tpl_label(g);
    rb::configure(
        RegisterBenchmark(name.c_str(), bm_whole, source::subset_end_points, true, rows));
  }
  // Threads-per-LOR sweep (auto = the table's choice): resident chunks
  // (memory order: no chunk holds whole planes) through gpu::tuning, and the
  // whole subset forced into memory order.
  const int tpls[] = {1, 2, 4, 8, 16, 32, 0};
  for (std::size_t c : {std::size_t(1000), std::size_t(10000), std::size_t(100000)}) {
    for (int g : tpls) {
      gpu::tuning t;
      t.threads_per_lor = g;
      const std::string name =
          "gpu/tpl-sweep/forward/chunk:" + chunk_label(c) + "/tpl:" + tpl_label(g);
      rb::configure(RegisterBenchmark(name.c_str(), bm_chunks_resident, c, t, false));
      g_sweep_entries.push_back({"forward", chunk_label(c), tpl_label(g), name});
    }
  }
  for (int g : tpls) {
    const kernel_spec k = kernel_spec::as_for(rp::lor_layout{}, g);
    std::string name = "gpu/tpl-sweep/forward/chunk:all/tpl:" + tpl_label(g);
    rb::configure(
        RegisterBenchmark(name.c_str(), bm_whole, source::subset_end_points, false, k));
    g_sweep_entries.push_back({"forward", "all", tpl_label(g), name});
    name = "gpu/tpl-sweep/back/chunk:all/tpl:" + tpl_label(g);
    rb::configure(
        RegisterBenchmark(name.c_str(), bm_whole, source::subset_end_points, true, k));
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

/// LORs/s of the plain dmi-subset forward projection in one call (the end
/// points declared sinogram-ordered, as gpu/dmi-subset/forward/plain), timed
/// here with CUDA events as the benchmarks time it: one warm-up call, then
/// `repetitions` repetitions of at least `min_seconds` of calls each; the
/// median over the repetitions.
double measure_subset_peak(int repetitions = 5, double min_seconds = 0.1) {
  subset_problem &p = subset();
  const auto lors = p.lors();
  const auto image = p.image.cview();
  const rp::span<float> out = p.out.span();
  gpu::forward(non_tof, image, lors, out, p.s); // warm-up
  p.s.synchronize();
  gpu::event start(/*timing=*/true), stop(/*timing=*/true);
  std::vector<double> rates;
  for (int r = 0; r < repetitions; ++r) {
    double seconds = 0;
    std::size_t calls = 0;
    while (seconds < min_seconds) {
      start.record(p.s);
      gpu::forward(non_tof, image, lors, out, p.s);
      stop.record(p.s);
      stop.synchronize();
      seconds += double(gpu::event::elapsed_ms(start, stop)) * 1e-3;
      ++calls;
    }
    rates.push_back(double(calls) * double(lors.count) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  const std::size_t n = rates.size();
  return n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
}

/// Prints the "size your LOR chunks" table, its peak measured here (so the
/// table is complete whatever --benchmark_filter selected), and a last line
/// with the chunk size to use; writes the table as CSV to `csv_path` if not
/// empty.
void print_chunk_table(const capture_reporter &rep, const std::string &gpu_name,
                       const std::string &csv_path) {
  bool any = false;
  for (const chunk_entry &e : g_chunk_entries)
    any = any || std::isfinite(rep.median(e.name, "items_per_second"));
  std::printf("\n== size your LOR chunks: dmi-subset forward as chunks, %s ==\n",
              gpu_name.c_str());
  if (!any) {
    std::printf("(no chunk benchmark ran)\n");
    return;
  }
  double peak = NAN;
  try {
    peak = measure_subset_peak();
  } catch (const std::exception &e) {
    std::printf("peak not measured: %s\n", e.what());
  }
  std::printf("peak = plain dmi-subset forward in one call (end points declared "
              "sinogram-ordered), measured for this table: %s LORs/s (median of 5)\n",
              sci(peak).c_str());
  std::printf("%-22s %-7s %10s %12s %10s %6s  %s\n", "variant", "chunk", "us/call",
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
    std::printf("%-22s %-7s %10s %12s %10s %6s  %s\n", e.variant.c_str(),
                e.chunk_label.c_str(), fixed(us, 2).c_str(), sci(rate).c_str(),
                fixed(pct, 1).c_str(), yn.c_str(), e.note.c_str());
    if (csv)
      csv << e.variant << ',' << e.chunk << ',' << fixed(us, 3) << ',' << rate << ','
          << fixed(pct, 2) << ',' << yn << ',' << e.note << '\n';
  }
  std::printf("first chunk size reaching 90%% of peak:");
  for (const std::string &v : variants) {
    const auto it = first_90.find(v);
    std::printf(" %s: %s;", v.c_str(),
                it == first_90.end() ? "none" : it->second.c_str());
  }
  std::printf("\n(1e7 chunks of the host-LOR variants are not run: dmi-subset has only "
              "4.3e6 LORs; resident 1e7 runs over the dmi-full LORs)\n");

  // The recommendation, for LORs resident on the device (resident
  // variants) and in host memory (streamer variants): the smallest chunk
  // measured that reaches 90% of the one-call peak, else the best one.
  struct pick {
    const chunk_entry *entry = nullptr;
    double pct = NAN;
  };
  const auto choose = [&](const std::string &prefix) {
    pick first, best;
    for (const chunk_entry &e : g_chunk_entries) {
      if (e.variant.compare(0, prefix.size(), prefix) != 0)
        continue;
      const double rate = rep.median(e.name, "items_per_second");
      const double pct = std::isfinite(peak) && peak > 0 ? 100.0 * rate / peak : NAN;
      if (!std::isfinite(pct))
        continue;
      if (pct >= 90.0 && (first.entry == nullptr || e.chunk < first.entry->chunk))
        first = {&e, pct};
      if (best.entry == nullptr || pct > best.pct)
        best = {&e, pct};
    }
    return std::make_pair(first, best);
  };
  const auto describe = [](const pick &p) {
    std::string d = std::to_string(p.entry->chunk) + " LORs";
    if (!p.entry->note.empty())
      d += ", " + p.entry->note;
    return d + " (" + p.entry->variant + ", " + fixed(p.pct, 1) + "% of peak)";
  };
  const auto advice = [&](const std::string &prefix) -> std::string {
    const auto picks = choose(prefix);
    if (picks.first.entry != nullptr)
      return describe(picks.first) + " or more per call";
    if (picks.second.entry != nullptr)
      return "as large as you can: none measured reaches 90% of peak; best " +
             describe(picks.second);
    return "";
  };
  const std::string device = advice("resident"), host = advice("streamer");
  std::string line = "chunk size to use:";
  if (!device.empty())
    line += " LORs on the device: " + device + (host.empty() ? "" : ";");
  if (!host.empty())
    line += " LORs in host memory: " + host;
  if (device.empty() && host.empty())
    line += " n/a (no resident or streamer chunk ran)";
  std::printf("%s\n", line.c_str());
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
