// The sensitivity image with attenuation over every LOR on the GPU
// (recon/gpu_all_lor_sensitivity.cuh), with the tb-lm-osem water cylinder
// as the mu-map on tb's 240 x 240 x 682 image:
//
//   gpu/all_lor/tb/plain               the library call on the whole tb
//                                      scanner (1.6e11 LORs, all ring
//                                      differences)
//   gpu/all_lor/tb-unit3/plain         the same call on the sub-scanner of
//                                      unit 3 (rings 252-335, 2.5e9 LORs)
//   gpu/all_lor/tb-unit3/brute_force   every LOR of that sub-scanner walked;
//                                      counters: the largest difference to
//                                      the plain call over the image and
//                                      inside the body, relative to the
//                                      largest value
//   gpu/all_lor/tb/brute_force_sample  LOR by LOR over every 97th transaxial
//                                      crystal pair of tb (all ring pairs);
//                                      counter full_scanner_s: the time
//                                      scaled to every pair
//
// Wall time of the whole call (host plan, uploads, kernels, synchronised),
// one iteration per repetition, `_median` rows; items_per_second is LORs
// (the sampled ones for the sample). Without a CUDA device the program
// prints "no CUDA device" and exits with 0.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../examples/common/tb_phantom.hpp"
#include "common/bench_support.hpp"
#include "common/gpu_main.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/recon/gpu_all_lor_sensitivity.cuh"
#include "resproj/scanner/tb.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rc = resproj::recon;

struct problem {
  rp::image_geometry g = rp::scanner::tb_image_geometry();
  std::vector<float> mu =
      resproj_examples::tb_mu_image<float>(resproj_examples::tb_phantom::make(), g);
  rp::scanner::polygon_scanner tb = rp::scanner::tb();
  gpu::stream s;
  gpu::device_image<float> out{g, s};

  rp::span<const float> m() const { return {mu.data(), mu.size()}; }
  /// Rings [252, 336) of tb: unit 3.
  rp::scanner::polygon_scanner unit3() const {
    const auto &z = tb.ring_z();
    return rp::scanner::polygon_scanner(
        tb.num_sides(), tb.crystals_per_side(), tb.inner_radius(), tb.crystal_pitch(),
        std::vector<double>(z.begin() + 252, z.begin() + 336));
  }
  std::vector<float> download() {
    std::vector<float> h(std::size_t(g.num_voxels()));
    out.download(rp::span<float>(h.data(), h.size()), s);
    s.synchronize();
    return h;
  }
};

std::unique_ptr<problem> g_problem;
problem &get() {
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

// Wall time of each call, without the warm-up call of `time_on_host`: a
// call takes seconds and includes its own set-up, which is part of its cost.
template <class F> void timed(benchmark::State &state, F &&f) {
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

std::uint64_t lors_of(const rp::scanner::polygon_scanner &s) {
  const std::uint64_t nc = std::uint64_t(s.crystals_per_ring()),
                      nr = std::uint64_t(s.num_rings());
  return nc * (nc - 1) / 2 * nr * nr;
}

void bm_plain(benchmark::State &state, bool unit3) {
  rb::guarded(state, [&] {
    problem &p = get();
    const auto s = unit3 ? p.unit3() : p.tb;
    rc::all_lor_sensitivity_stats st;
    timed(state,
          [&] { rc::gpu_all_lor_sensitivity(s, p.g, p.m(), p.out.view(), p.s, &st); });
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(lors_of(s)));
    state.counters["mirror_flips"] = st.mirror_flips;
    state.counters["walks_per_lor"] =
        double(st.attenuation_walks + st.scatter_walks) / double(st.lors);
    state.counters["families"] = double(st.families);
  });
}

void bm_unit3_brute_force(benchmark::State &state) {
  rb::guarded(state, [&] {
    problem &p = get();
    const auto s = p.unit3();
    rc::gpu_all_lor_sensitivity(s, p.g, p.m(), p.out.view(), p.s);
    const std::vector<float> method = p.download();
    timed(state, [&] {
      rc::gpu_all_lor_sensitivity_brute_force(s, p.g, p.m(), p.out.view(), p.s);
    });
    const std::vector<float> brute = p.download();
    double peak = 0, peak_body = 0, worst = 0, worst_body = 0;
    for (std::size_t i = 0; i < brute.size(); ++i) {
      const double d = std::fabs(double(method[i]) - double(brute[i]));
      peak = std::max(peak, double(brute[i]));
      worst = std::max(worst, d);
      if (p.mu[i] > 0.f) {
        peak_body = std::max(peak_body, double(brute[i]));
        worst_body = std::max(worst_body, d);
      }
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(lors_of(s)));
    state.counters["max_error_rel"] = worst / peak;
    state.counters["max_error_in_body_rel"] = worst_body / peak_body;
  });
}

void bm_tb_brute_force_sample(benchmark::State &state) {
  rb::guarded(state, [&] {
    problem &p = get();
    const int nc = p.tb.crystals_per_ring(), nr = p.tb.num_rings();
    std::vector<rc::detail::crystal_pair> sample;
    std::uint64_t pair = 0;
    for (int c1 = 0; c1 < nc; ++c1)
      for (int c2 = c1 + 1; c2 < nc; ++c2, ++pair)
        if (pair % 97 == 0)
          sample.push_back({c1, c2, 1.0});
    const auto pairs = rc::detail::to_device(sample, p.s);
    const auto centres = rc::detail::to_device(p.tb.detector_centres(), p.s);
    const auto mu = rc::detail::to_device(p.mu, p.s);
    gpu::device_buffer<double> image(std::size_t(p.g.num_voxels()), p.s);
    double seconds = 0;
    timed(state, [&] {
      const auto t0 = std::chrono::steady_clock::now();
      rc::detail::launch_all_lor_brute_force(p.g, mu.data(), centres.data(), nc, nr,
                                             pairs.cspan(), image.data(), p.s);
      p.s.synchronize();
      seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    const double lors = double(sample.size()) * double(nr) * double(nr);
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(lors));
    state.counters["full_scanner_s"] = seconds * double(pair) / double(sample.size());
  });
}

void register_all() {
  using benchmark::RegisterBenchmark;
  const auto once = [](benchmark::internal::Benchmark *b) {
    b->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->Repetitions(3)
        ->ReportAggregatesOnly(true);
  };
  once(RegisterBenchmark("gpu/all_lor/tb/plain", bm_plain, false));
  once(RegisterBenchmark("gpu/all_lor/tb-unit3/plain", bm_plain, true));
  once(RegisterBenchmark("gpu/all_lor/tb-unit3/brute_force", bm_unit3_brute_force));
  once(RegisterBenchmark("gpu/all_lor/tb/brute_force_sample", bm_tb_brute_force_sample));
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_gpu_all_lor_sensitivity", register_all,
                      release_problems);
}
