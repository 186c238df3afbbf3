// OSEM benchmarks (spec/benchmark-problems.md, `dmi-lm-osem`), with the
// examples' reconstruction code (examples/common):
//
//   gpu/dmi-lm-osem/iteration       one full OSEM iteration, all 34 subsets
//                                   (TOF list-mode forward + ratio + back +
//                                   update), 40M events resident and
//                                   reordered once; items = events
//   gpu/dmi-lm-osem/fwd+back        the TOF list-mode forward and back
//                                   projections alone over the same events,
//                                   subsets and order (no ratio, no update);
//                                   iteration rate / this rate = the cost of
//                                   the OSEM bookkeeping
//   pipeline/gpu/dmi-lm-osem        end to end, host-timed: list-mode file
//                                   on disk -> host arrays -> device ->
//                                   per-event corrections, sensitivity with
//                                   attenuation, reorder -> 2 iterations x
//                                   34 subsets -> NIfTI on disk
//   pipeline/cpu/dmi-lm-osem        the same pipeline on the CPU backend,
//                                   with RESPROJ_OSEM_CPU_EVENTS events
//                                   (default 4,000,000 = 10%; the
//                                   sensitivity image is the full one);
//                                   one run
//
// Events: uniformly random LORs of the full dmi sinogram (seeded), TOF bin
// uniform in 8..20, event i in subset i mod 34. Attenuation: water cylinder
// (radius 150 mm, mu 0.0096/mm, full axial length); efficiencies 1;
// background 1e-3 counts per TOF bin. The file is written once to
// $TMPDIR (or /tmp) before the pipelines run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../examples/common/listmode_io.hpp"
#include "../examples/common/osem.hpp"
#include "../examples/common/osem_gpu.cuh"
#include "../examples/common/phantom.hpp"
#include "../examples/common/synthetic.hpp"
#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/phantom.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/resproj.hpp"

namespace rb = resproj_bench;
namespace rp = resproj;
namespace rs = resproj::scanner;
namespace ex = resproj_examples;
namespace gpu = resproj::gpu;

namespace {

constexpr std::size_t osem_events = 40000000;
constexpr int osem_subsets = 34;
constexpr std::uint64_t osem_seed = 20261130;

rp::tof_params<float> dmi_tof() {
  rp::tof_params<float> t;
  t.num_bins = 29;
  t.bin_width = float(13 * 0.01302 * 299.792 / 2); // 25.37 mm
  t.sigma = float(299.792 / 2 * 0.385 / 2.355);    // 24.51 mm
  t.num_sigmas = 3;
  return t;
}

std::string temp_dir() {
  const char *t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

/// The dmi scan, corrections and the 40M events in acquisition order.
struct problem {
  ex::scan sc{rs::dmi(), 65, osem_subsets, rb::reference_image_geometry()};
  ex::corrections corr;
  ex::listmode_data events; ///< acquisition order, pairs and bins only
  rp::tof_params<float> tof = dmi_tof();
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
    const auto &layout = sc.layout;
    const std::uint64_t per_plane =
        std::uint64_t(layout.num_views) * std::uint64_t(layout.num_radial);
    const std::uint64_t total = per_plane * std::uint64_t(layout.num_planes());
    events.pairs.resize(2 * osem_events);
    events.bins.resize(osem_events);
    constexpr std::size_t block = 65536; // one seeded generator per block
    rb::parallel_ranges((osem_events + block - 1) / block, [&](std::size_t b0,
                                                               std::size_t nb) {
      for (std::size_t k = b0; k < b0 + nb; ++k) {
        std::mt19937_64 rng(osem_seed + 7919 * k);
        std::uniform_int_distribution<std::uint64_t> pick(0, total - 1);
        std::uniform_int_distribution<int> bin(8, 20);
        const std::size_t last = std::min(osem_events, (k + 1) * block);
        for (std::size_t i = k * block; i < last; ++i) {
          const std::uint64_t idx = pick(rng);
          const int plane = int(idx / per_plane);
          const std::uint64_t rest = idx % per_plane;
          const auto p =
              layout.detector_pair(plane, int(rest / std::uint64_t(layout.num_radial)),
                                   int(rest % std::uint64_t(layout.num_radial)));
          events.pairs[2 * i] = p.first;
          events.pairs[2 * i + 1] = p.second;
          events.bins[i] = std::int16_t(bin(rng));
        }
      }
    });
    const auto records = rs::pack_events(
        rp::span<const std::int32_t>(events.pairs.data(), events.pairs.size()),
        rp::span<const std::int16_t>(events.bins.data(), events.bins.size()));
    rp::io::write_listmode_file(
        path, rp::span<const rs::listmode_event>(records.data(), records.size()));
    std::fprintf(
        stderr, "dmi-lm-osem: %zu events generated and written to %s in %.1f s\n",
        osem_events, path.c_str(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  ~problem() { std::remove(path.c_str()); }
};

/// The resident GPU data (made once).
struct gpu_state {
  gpu::stream s;
  std::unique_ptr<ex::device_scan> ds;
  std::unique_ptr<ex::gpu_listmode_problem> lm;
  explicit gpu_state(const problem &p) {
    ds = std::make_unique<ex::device_scan>(p.sc, s);
    ex::listmode_data grouped = p.events;
    ex::group_by_subset(grouped, osem_subsets);
    lm = std::make_unique<ex::gpu_listmode_problem>(p.sc, *ds, grouped, p.corr, p.tof, s);
  }
};

std::unique_ptr<problem> g_problem;
std::unique_ptr<gpu_state> g_gpu;
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

void set_items(benchmark::State &state, std::size_t items) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
  state.counters["events"] = double(items);
}

void bm_iteration(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &g = gstate();
    const auto x0 = ex::start_image(prob().sc.image, 1.f);
    auto b = g.lm->backend(x0);
    b.opt.check_pointers = false;
    rb::time_on_stream(
        state, g.s, [&] { b.x.buffer().fill(1.f, g.s); }, [&] { ex::osem(b, 1); });
    set_items(state, osem_events);
  });
}

void bm_fwd_back(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &g = gstate();
    auto b = g.lm->backend(ex::start_image(prob().sc.image, 1.f));
    b.opt.check_pointers = false;
    rb::time_on_stream(
        state, g.s, [&] { b.g.buffer().zero(g.s); },
        [&] {
          for (int k = 0; k < b.num_subsets(); ++k) {
            b.forward(k);
            const rp::span<const float> v(b.q.data(), b.count(k));
            gpu::back_tof_lm<float>(b.g, b.lors(k), b.bins_of(k), b.tof, v, b.opt, g.s);
          }
        });
    set_items(state, osem_events);
  });
}

/// The end-to-end pipeline on the GPU.
void bm_pipeline_gpu(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &p = prob();
    auto &g = gstate(); // device tables and a warm context; the data are redone below
    const std::string out = temp_dir() + "/resproj_bench_osem_gpu.nii";
    rb::time_on_host(state, [&] {
      ex::listmode_data lm = ex::load_events(p.path);
      ex::group_by_subset(lm, osem_subsets);
      const ex::gpu_listmode_problem data(p.sc, *g.ds, lm, p.corr, p.tof, g.s);
      auto b = data.backend(ex::start_image(p.sc.image, 1.f));
      b.opt.check_pointers = false;
      ex::osem(b, 2);
      const auto x = b.image();
      rp::io::write_nifti(out, rp::span<const float>(x.data(), x.size()), p.sc.image);
    });
    std::remove(out.c_str());
    set_items(state, osem_events);
  });
}

/// The end-to-end pipeline on the CPU backend (fewer events).
void bm_pipeline_cpu(benchmark::State &state) {
  rb::guarded(state, [&] {
    auto &p = prob();
    const char *env = std::getenv("RESPROJ_OSEM_CPU_EVENTS");
    const std::size_t n =
        std::min(osem_events, env ? std::size_t(std::atoll(env)) : std::size_t(4000000));
    const std::string out = temp_dir() + "/resproj_bench_osem_cpu.nii";
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<rs::listmode_event> rec(n);
      rp::io::read_listmode_events(p.path, 0, n,
                                   rp::span<rs::listmode_event>(rec.data(), n));
      ex::listmode_data lm;
      rs::split_events(rec, lm.pairs, lm.bins);
      ex::listmode_corrections(p.sc, p.corr, p.tof, lm);
      ex::group_by_subset(lm, osem_subsets);
      ex::cpu_listmode_backend b(p.sc, lm, p.tof, ex::cpu_sensitivity(p.sc, p.corr),
                                 ex::start_image(p.sc.image, 1.f));
      ex::osem(b, 2);
      rp::io::write_nifti(out, rp::span<const float>(b.x.data(), b.x.size()), p.sc.image);
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::remove(out.c_str());
    set_items(state, n);
  });
}

} // namespace

int main(int argc, char **argv) {
  const bool list_only = rb::lists_only(argc, argv);
  if (!rb::initialize_with_defaults(argc, argv))
    return 1;
  if (gpu::device_count() == 0 && !list_only) {
    std::printf("no CUDA device: OSEM benchmarks skipped\n");
    return 0;
  }
  int code = 0;
  try {
    rb::configure(
        benchmark::RegisterBenchmark("gpu/dmi-lm-osem/iteration", bm_iteration));
    rb::configure(benchmark::RegisterBenchmark("gpu/dmi-lm-osem/fwd+back", bm_fwd_back));
    benchmark::RegisterBenchmark("pipeline/gpu/dmi-lm-osem", bm_pipeline_gpu)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(3)
        ->Iterations(1);
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
