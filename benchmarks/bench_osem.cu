// OSEM benchmarks (docs/benchmark-problems.md, `dmi-lm-osem`), with the
// library's reconstruction layer (include/resproj/recon):
//
//   gpu/dmi-lm-osem/iteration       one full OSEM iteration, all 34 subsets
//                                   (TOF list-mode forward + ratio + back +
//                                   update), 40M events resident and
//                                   reordered once; items = events
//   gpu/dmi-lm-osem/fwd+back        the TOF list-mode forward and back
//                                   projections alone over the same events,
//                                   subsets and order (no ratio, no update),
//                                   the backend's plain calls (events
//                                   declared lor_layout::sorted_events());
//                                   iteration rate / this rate = the cost of
//                                   the OSEM bookkeeping
//   gpu/dmi-lm-osem/iteration/key:A-T-D/stencil:W
//                                   one iteration with every subset ordered
//                                   by a TOF key of A angle and T tilt bits
//                                   (tilt cells of D degrees; the library's
//                                   layout for these subsets is 4-2-15, the
//                                   one for calls of 1e7 events 5-3-7) and a
//                                   stencil workspace of width W (0: none;
//                                   the plain row takes the backend's own)
//   gpu/dmi-lm-osem/{forward,back}/key:A-T-D[/stencil:2]
//                                   one direction alone over all subsets,
//                                   ordered so, without (with) a workspace
//   pipeline/gpu/dmi-lm-osem        end to end, host-timed: list-mode file
//                                   on disk -> device (gpu/file_io.cuh) ->
//                                   split, validated, grouped by subset ->
//                                   reorder (TOF key), per-event corrections,
//                                   sensitivity with attenuation (second
//                                   stream) -> 2 iterations x 34 subsets ->
//                                   NIfTI on disk; counters: seconds per
//                                   phase (<phase>_s, the demo's table)
//   pipeline/cpu/dmi-lm-osem        the same phases on the CPU backend,
//                                   scaled down to end in well under a
//                                   minute on 16 cores: the first
//                                   RESPROJ_OSEM_CPU_EVENTS events (default
//                                   500,000 of 40M) and the sensitivity
//                                   over the first RESPROJ_OSEM_CPU_SENS_SUBSETS
//                                   of the 34 subsets (default 1); counters:
//                                   seconds and rate per phase, the scale
//                                   factors, est_full_s (each phase
//                                   extrapolated by its scale to the full
//                                   problem) and est_speedup (est_full_s /
//                                   the GPU pipeline's time in this run)
//
// Events: uniformly random LORs of the full dmi sinogram (seeded), TOF bin
// uniform in 8..20, event i in subset i mod 34. Attenuation: water cylinder
// (radius 150 mm, mu 0.0096/mm, full axial length); efficiencies 1;
// background 1e-3 counts per TOF bin. The file is written once to
// $TMPDIR (or /tmp) before the pipelines run. RESPROJ_OSEM_EVENTS (default
// 40,000,000) changes the event count, for quick checks only. Without a
// CUDA device only the CPU pipeline runs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../examples/common/phantom.hpp"
#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/dmi_problems.hpp"
#include "common/phantom.hpp"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/recon/cpu_osem.hpp"
#include "resproj/recon/gpu_listmode_setup.cuh"
#include "resproj/recon/phase_timing.hpp"
#include "resproj/resproj.hpp"

namespace rb = resproj_bench;
namespace rp = resproj;
namespace rs = resproj::scanner;
namespace ex = resproj_examples;
namespace gpu = resproj::gpu;
namespace recon = resproj::recon;

namespace {

constexpr std::size_t default_events = 40000000;
constexpr int osem_subsets = 34;
constexpr int osem_iterations = 2;
constexpr std::uint64_t osem_seed = rb::dmi_lm_osem_seed;

std::size_t env_count(const char *name, std::size_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  const long long n = std::atoll(v);
  return n > 0 ? std::size_t(n) : fallback;
}

std::string temp_dir() {
  const char *t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

/// The dmi scan, corrections and the list-mode file of the events (in
/// acquisition order; the host arrays are not kept).
struct problem {
  recon::sinogram_subsets sc{rs::dmi(), 65, osem_subsets, rb::reference_image_geometry()};
  recon::corrections corr;
  rp::tof_params<float> tof = rs::dmi_tof();
  std::size_t num_events = env_count("RESPROJ_OSEM_EVENTS", default_events);
  std::string path = temp_dir() + "/resproj_bench_osem.lm";

  problem() {
    const auto t0 = std::chrono::steady_clock::now();
    const auto &g = sc.image;
    corr.mu = ex::sample_image<float>(
        g,
        [](const double x[3]) {
          return x[0] * x[0] + x[1] * x[1] <= 150.0 * 150.0 ? 0.0096 : 0.0;
        },
        1);
    corr.efficiency.assign(sc.num_detectors(), 1.f);
    corr.scale = 1;
    corr.background = 1e-3f * float(tof.num_bins);
    const std::size_t n = num_events;
    const rb::dmi_events events = rb::make_dmi_events(n, osem_seed);
    const std::vector<rs::listmode_event> records = rs::pack_events(
        rp::span<const std::int32_t>(events.pairs.data(), events.pairs.size()),
        rp::span<const std::int16_t>(events.bins.data(), events.bins.size()));
    rp::io::write_listmode_file(
        path, rp::span<const rs::listmode_event>(records.data(), records.size()));
    std::fprintf(
        stderr, "dmi-lm-osem: %zu events generated and written to %s in %.1f s\n", n,
        path.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  ~problem() { std::remove(path.c_str()); }
  std::size_t sinogram_lors() const { return sc.total_count(); }
};

/// The resident GPU data (made once, with the pipeline's loader).
struct gpu_state {
  gpu::stream s;
  std::unique_ptr<recon::device_sinogram_subsets> ds;
  std::unique_ptr<recon::gpu_listmode_data> lm;
  explicit gpu_state(const problem &p) {
    ds = std::make_unique<recon::device_sinogram_subsets>(p.sc, s);
    gpu::device_file_io io;
    lm = std::make_unique<recon::gpu_listmode_data>(p.sc, *ds, io, p.path, p.corr, p.tof,
                                                    s);
  }
};

std::unique_ptr<problem> g_problem;
std::unique_ptr<gpu_state> g_gpu;
double g_gpu_pipeline_s = 0; ///< last GPU pipeline time (for est_speedup)

problem &prob() {
  if (!g_problem)
    g_problem = std::make_unique<problem>();
  return *g_problem;
}
gpu_state &gstate() {
  if (!g_gpu)
    g_gpu = std::make_unique<gpu_state>(prob());
  return *g_gpu;
}

/// The key layout the library gives each subset (all have about the same
/// size).
gpu::listmode_tof_key library_key() {
  return gpu::listmode_tof_key::for_image(prob().sc.image,
                                          prob().num_events / std::size_t(osem_subsets));
}

/// The events of every subset reordered with `key` (once per layout; the
/// rows that follow keep that order until another layout is asked for).
void use_key(const gpu::listmode_tof_key &key) {
  static gpu::listmode_tof_key in_use = library_key();
  const auto same = [](const gpu::listmode_tof_key &a, const gpu::listmode_tof_key &b) {
    return a.angle_bits == b.angle_bits && a.tilt_bits == b.tilt_bits &&
           a.tilt_cell_degrees == b.tilt_cell_degrees && a.xy_bits == b.xy_bits &&
           a.z_bits == b.z_bits && a.slab_bits == b.slab_bits &&
           a.axis_bits == b.axis_bits;
  };
  if (same(key, in_use))
    return;
  auto &g = gstate();
  recon::gpu_order_subsets(prob().sc.image, prob().tof, g.lm->detectors(), g.lm->events,
                           g.s, key);
  g.s.synchronize();
  in_use = key;
}

void set_items(benchmark::State &state, std::size_t items) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
  state.counters["events"] = double(items);
}

/// Counters `<key>_s` (and `<key>_rate` with `rates`) of every phase.
void phase_counters(benchmark::State &state, const recon::phase_table &t, bool rates) {
  for (const auto &p : t.phases) {
    state.counters[p.key + "_s"] = p.seconds;
    if (rates && p.items > 0 && p.seconds > 0)
      state.counters[p.key + "_rate"] = p.items / p.seconds;
  }
}

void bm_iteration(benchmark::State &state) {
  rb::guarded(state, [&] {
    use_key(library_key());
    auto &g = gstate();
    const auto x0 = recon::start_image(prob().sc.image, 1.f);
    auto b = g.lm->backend(x0);
    b.opt.check_pointers = false;
    rb::time_on_stream(
        state, g.s, [&] { b.x.buffer().fill(1.f, g.s); }, [&] { recon::osem(b, 1); });
    set_items(state, prob().num_events);
  });
}

void bm_fwd_back(benchmark::State &state) {
  rb::guarded(state, [&] {
    use_key(library_key());
    auto &g = gstate();
    auto b = g.lm->backend(recon::start_image(prob().sc.image, 1.f));
    b.opt.check_pointers = false;
    rb::time_on_stream(
        state, g.s, [&] { b.g.buffer().zero(g.s); },
        [&] {
          for (int k = 0; k < b.num_subsets(); ++k) {
            b.forward(k);
            const rp::span<const float> v(b.q.data(), b.count(k));
            gpu::back(b.tof_operation(k), b.g.view(), b.lors(k), v, g.s, b.opt);
          }
        });
    set_items(state, prob().num_events);
  });
}

/// Key layouts of the `/key:` rows: angle, tilt bits, tilt cell (degrees).
struct key_variant {
  int angle_bits, tilt_bits;
  float tilt_degrees;
};
gpu::listmode_tof_key key_of(const key_variant &v) {
  gpu::listmode_tof_key k;
  k.angle_bits = v.angle_bits;
  k.tilt_bits = v.tilt_bits;
  k.tilt_cell_degrees = v.tilt_degrees;
  return k;
}
std::string key_name(const key_variant &v) {
  return "key:" + std::to_string(v.angle_bits) + "-" + std::to_string(v.tilt_bits) + "-" +
         std::to_string(int(v.tilt_degrees));
}

/// Replaces the backend's own stencil workspace by one of `width` (0:
/// none), returned (it must outlive the backend's calls).
std::unique_ptr<gpu::stencil_workspace<float>>
replace_stencil(recon::gpu_listmode_backend &b, int width) {
  std::unique_ptr<gpu::stencil_workspace<float>> ws;
  b.opt.stencil = {};
  if (width > 0) {
    ws = std::make_unique<gpu::stencil_workspace<float>>(prob().sc.image, b.s, width);
    b.opt.stencil = ws->ref();
  }
  return ws;
}

/// One direction over every subset, with the events ordered by `key`:
/// forward (`back` false) or back, the backend's calls; the back
/// projection with a stencil workspace of `stencil_width` (0: none).
void bm_direction(benchmark::State &state, key_variant key, bool back,
                  int stencil_width) {
  rb::guarded(state, [&] {
    use_key(key_of(key));
    auto &g = gstate();
    auto b = g.lm->backend(recon::start_image(prob().sc.image, 1.f));
    b.opt.check_pointers = false;
    const auto ws = replace_stencil(b, stencil_width);
    b.q.fill(1.f, g.s);
    rb::time_on_stream(
        state, g.s, [&] { b.g.buffer().zero(g.s); },
        [&] {
          for (int k = 0; k < b.num_subsets(); ++k) {
            if (!back) {
              b.forward(k);
              continue;
            }
            const rp::span<const float> v(b.q.data(), b.count(k));
            gpu::back(b.tof_operation(k), b.g.view(), b.lors(k), v, g.s, b.opt);
          }
        });
    set_items(state, prob().num_events);
  });
}

/// One OSEM iteration with the events ordered by `key` and a stencil
/// workspace of `width` (0: none) for the back projections.
void bm_iteration_variant(benchmark::State &state, key_variant key, int width) {
  rb::guarded(state, [&] {
    use_key(key_of(key));
    auto &g = gstate();
    const auto x0 = recon::start_image(prob().sc.image, 1.f);
    auto b = g.lm->backend(x0);
    b.opt.check_pointers = false;
    const auto ws = replace_stencil(b, width);
    rb::time_on_stream(
        state, g.s, [&] { b.x.buffer().fill(1.f, g.s); }, [&] { recon::osem(b, 1); });
    set_items(state, prob().num_events);
  });
}

/// The end-to-end pipeline on the GPU, with the demo's loader and phases.
void bm_pipeline_gpu(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &p = prob();
    auto &g = gstate(); // device tables and a warm context; the data are redone below
    const std::string out = temp_dir() + "/resproj_bench_osem_gpu.nii";
    recon::phase_table t;
    auto run = [&] {
      t = {};
      recon::stopwatch w;
      gpu::device_file_io io;
      const recon::gpu_listmode_data data(p.sc, *g.ds, io, p.path, p.corr, p.tof, g.s,
                                          &t);
      w.lap(); // the data's phases are in the table already
      auto b = data.backend(recon::start_image(p.sc.image, 1.f));
      b.opt.check_pointers = false;
      g.s.synchronize();
      t.add("backend", "OSEM backend set-up", w.lap());
      recon::osem(b, osem_iterations);
      t.add("osem", "OSEM iterations", w.lap(), double(data.count()) * osem_iterations,
            "events");
      gpu::write_nifti_from_device(io, out, b.x, g.s);
      t.add("nifti", "write NIfTI (device -> file)", w.lap());
    };
    run(); // warm-up (module loading, pool growth)
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.SetIterationTime(sec);
      g_gpu_pipeline_s = sec;
    }
    std::remove(out.c_str());
    set_items(state, p.num_events);
    phase_counters(state, t, false);
    std::fprintf(stderr, "pipeline/gpu phases (last run):\n");
    t.print(stderr);
  });
}

/// The end-to-end pipeline on the CPU backend, scaled down (see the top).
void bm_pipeline_cpu(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &p = prob();
    const std::size_t n =
        std::min(p.num_events, env_count("RESPROJ_OSEM_CPU_EVENTS", 500000));
    const int ksens = int(std::min<std::size_t>(
        std::size_t(osem_subsets), env_count("RESPROJ_OSEM_CPU_SENS_SUBSETS", 1)));
    std::size_t sens_lors = 0;
    for (int k = 0; k < ksens; ++k)
      sens_lors += p.sc.subset_count(k);
    const double event_scale = double(p.num_events) / double(n);
    const double lor_scale = double(p.sinogram_lors()) / double(sens_lors);
    const std::string out = temp_dir() + "/resproj_bench_osem_cpu.nii";
    recon::phase_table t;
    for (auto _ : state) {
      t = {};
      recon::stopwatch w;
      recon::listmode_data lm = recon::read_listmode_data(
          p.path, std::int64_t(p.sc.num_detectors()), p.tof.num_bins, n);
      t.add("read", "read file (host), validate", w.lap(), double(n), "events");
      recon::listmode_corrections(p.sc, p.corr, p.tof, lm);
      t.add("corr", "per-event corrections", w.lap(), double(n), "events");
      recon::group_by_subset(lm, osem_subsets);
      t.add("group", "group by subset", w.lap(), double(n), "events");
      auto sens = recon::sensitivity_image(p.sc, p.corr, ksens);
      for (float &v : sens)
        v *= float(lor_scale); // stands in for the whole sinogram's
      t.add("sens", "sensitivity with attenuation", w.lap(), double(sens_lors), "LORs");
      recon::cpu_listmode_backend b(p.sc, lm, p.tof, std::move(sens),
                                    recon::start_image(p.sc.image, 1.f));
      recon::osem(b, osem_iterations);
      t.add("osem", "OSEM iterations", w.lap(), double(n) * osem_iterations, "events");
      rp::io::write_nifti(out, rp::span<const float>(b.x.data(), b.x.size()), p.sc.image);
      t.add("nifti", "write NIfTI", w.lap());
      state.SetIterationTime(t.total());
    }
    std::remove(out.c_str());
    set_items(state, n);
    phase_counters(state, t, true);
    double est = 0;
    for (const auto &ph : t.phases)
      est += ph.seconds * (ph.key == "sens"    ? lor_scale
                           : ph.key == "nifti" ? 1.0
                                               : event_scale);
    int threads = 1;
#if defined(_OPENMP)
    threads = omp_get_max_threads();
#endif
    state.counters["threads"] = threads;
    state.counters["event_scale"] = event_scale;
    state.counters["lor_scale"] = lor_scale;
    state.counters["est_full_s"] = est;
    if (g_gpu_pipeline_s > 0)
      state.counters["est_speedup"] = est / g_gpu_pipeline_s;
    state.SetLabel("scaled: events x" + std::to_string(int(event_scale + 0.5)) +
                   ", sensitivity LORs x" + std::to_string(int(lor_scale + 0.5)));
    std::fprintf(stderr,
                 "pipeline/cpu: %zu of %zu events (x%.1f), sensitivity over %d of %d "
                 "subsets (x%.1f), %d OpenMP thread(s)%s; phases:\n",
                 n, p.num_events, event_scale, ksens, osem_subsets, lor_scale, threads,
                 threads == 1 ? " (serial: this file was compiled without OpenMP)" : "");
    t.print(stderr);
    std::fprintf(stderr, "  full problem, each phase extrapolated by its scale: %.1f s\n",
                 est);
  });
}

} // namespace

int main(int argc, char **argv) {
  const bool list_only = rb::lists_only(argc, argv);
  if (!rb::initialize_with_defaults(argc, argv))
    return 1;
  const bool have_gpu = gpu::device_count() > 0;
  if (!have_gpu && !list_only)
    std::printf("no CUDA device: only the CPU pipeline runs\n");
  int code = 0;
  try {
    if (have_gpu || list_only) {
      rb::configure(
          benchmark::RegisterBenchmark("gpu/dmi-lm-osem/iteration", bm_iteration));
      rb::configure(
          benchmark::RegisterBenchmark("gpu/dmi-lm-osem/fwd+back", bm_fwd_back));
      // Variants: the former layout (5 angle, 3 tilt bits) and the
      // library's (4, 2 for these subsets), each without and with a stencil
      // workspace of width 2; then forward and back alone over a sweep of
      // layouts (no workspace) and the library's with its workspace.
      const key_variant former{5, 3, 7.5f}, coarse{4, 2, 15.f};
      for (const auto &k : {former, coarse})
        for (int w : {0, 2})
          rb::configure(
              benchmark::RegisterBenchmark(("gpu/dmi-lm-osem/iteration/" + key_name(k) +
                                            "/stencil:" + std::to_string(w))
                                               .c_str(),
                                           bm_iteration_variant, k, w));
      const key_variant keys[] = {
          former, {4, 3, 7.5f}, coarse, {3, 2, 15.f}, {3, 1, 30.f}};
      for (const auto &k : keys)
        for (bool back : {false, true})
          rb::configure(benchmark::RegisterBenchmark(
              ("gpu/dmi-lm-osem/" + std::string(back ? "back" : "forward") + "/" +
               key_name(k))
                  .c_str(),
              bm_direction, k, back, 0));
      for (const auto &k : {former, coarse})
        rb::configure(benchmark::RegisterBenchmark(
            ("gpu/dmi-lm-osem/back/" + key_name(k) + "/stencil:2").c_str(), bm_direction,
            k, true, 2));
      benchmark::RegisterBenchmark("pipeline/gpu/dmi-lm-osem", bm_pipeline_gpu)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Repetitions(3)
          ->Iterations(1);
    }
    benchmark::RegisterBenchmark("pipeline/cpu/dmi-lm-osem", bm_pipeline_cpu)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(1)
        ->Iterations(1);
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_osem: %s\n", e.what());
    code = 1;
  }
  g_gpu.reset();
  g_problem.reset();
  benchmark::Shutdown();
  return code;
}
