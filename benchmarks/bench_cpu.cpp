// CPU backend benchmarks on the reference problems
// (docs/benchmark-problems.md): non-TOF forward and back projection of the
// box phantom over `dmi-subset` LORs, by default restricted to its first 106
// planes, ring differences 0 and +-1 ("dmi-subset-small", 351,920 LORs; the
// LORs sample as many image planes on average as those of the whole subset,
// so LORs/s carry over). One iteration takes about 0.5 s (forward) to 1.5 s
// (back) on 2 cores.
//
// Extra flag (before the Google Benchmark flags):
//   --dmi_planes=N   use the first N planes of dmi-subset (1296 = the whole
//                    problem, "dmi-subset")
// Each benchmark runs 5 repetitions after a warm-up; read the median.
// items_per_second is LORs per second. Back projections project ones into
// an image zeroed outside the timed region.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "common/phantom.hpp"
#include "resproj/cpu/projector.hpp"

namespace {

namespace rp = resproj;
namespace rb = resproj_bench;

/// Image, LORs and output buffers of one problem in one precision.
template <class T> struct problem {
  rp::image_geometry geometry = rb::reference_image_geometry();
  std::vector<T> image;      ///< box phantom (forward input)
  std::vector<T> back_image; ///< back projection output
  rb::lor_set<T> lors;
  std::vector<T> projection; ///< forward output
  std::vector<T> ones;       ///< back projection input

  explicit problem(int num_planes)
      : image(rb::box_phantom<T>(geometry)),
        back_image(std::size_t(geometry.num_voxels())),
        lors(rb::dmi_subset_lors<T>(num_planes)), projection(lors.count()),
        ones(lors.count(), T(1)) {}

  void forward(const rp::cpu::options &opt = {}) {
    rp::cpu::forward(rp::op::non_tof{}, rp::image_view<const T>(image.data(), geometry),
                     lors.view(), rp::span<T>(projection.data(), projection.size()), opt);
  }
  void back(const rp::cpu::options &opt) {
    rp::cpu::back(rp::op::non_tof{}, rp::image_view<T>(back_image.data(), geometry),
                  lors.view(), rp::span<const T>(ones.data(), ones.size()), opt);
  }
};

template <class T> void forward_benchmark(benchmark::State &state, problem<T> *p) {
  for (auto _ : state) {
    p->forward();
    benchmark::DoNotOptimize(p->projection.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(p->lors.count()));
}

// Back projection of all ones; the image is zeroed outside the timed region.
template <class T>
void back_benchmark(benchmark::State &state, problem<T> *p,
                    rp::cpu::back_accumulation accumulation) {
  rp::cpu::options opt;
  opt.accumulation = accumulation;
  for (auto _ : state) {
    state.PauseTiming();
    std::fill(p->back_image.begin(), p->back_image.end(), T(0));
    state.ResumeTiming();
    p->back(opt);
    benchmark::DoNotOptimize(p->back_image.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(p->lors.count()));
}

void configure(benchmark::internal::Benchmark *b) {
  b->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(5)
      ->DisplayAggregatesOnly(true);
}

// Removes "--dmi_planes=N" from argv; returns N (default: dmi-subset-small).
int take_planes_flag(int &argc, char **argv) {
  int planes = rb::dmi_subset_small_planes;
  const char *flag = "--dmi_planes=";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
      planes = std::atoi(argv[i] + std::strlen(flag));
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return planes;
}

} // namespace

int main(int argc, char **argv) {
  const int planes = take_planes_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  if (planes < 1 || planes > 1296) {
    std::fprintf(stderr, "--dmi_planes must be in 1..1296\n");
    return 1;
  }

  const std::string name = "cpu/" + rb::dmi_subset_name(planes);
  problem<float> pf(planes);
  problem<double> pd(planes);

  // Warm-up (threads, page faults) and a sanity figure for the context.
  pf.forward();
  pd.forward();
  pf.back({});
  pd.back({});
  const auto zeros = std::count(pf.projection.begin(), pf.projection.end(), 0.f);
#if defined(_OPENMP)
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
#else
  benchmark::AddCustomContext("omp_threads", "1 (built without OpenMP)");
#endif
  benchmark::AddCustomContext("lors", std::to_string(pf.lors.count()));
  benchmark::AddCustomContext(
      "forward_zero_fraction",
      std::to_string(double(zeros) / double(pf.projection.size())));

  using acc = rp::cpu::back_accumulation;
  configure(benchmark::RegisterBenchmark((name + "/forward/float").c_str(),
                                         forward_benchmark<float>, &pf));
  configure(benchmark::RegisterBenchmark((name + "/forward/double").c_str(),
                                         forward_benchmark<double>, &pd));
  configure(benchmark::RegisterBenchmark((name + "/back/atomic/float").c_str(),
                                         back_benchmark<float>, &pf, acc::atomic));
  configure(benchmark::RegisterBenchmark((name + "/back/thread_images/float").c_str(),
                                         back_benchmark<float>, &pf, acc::thread_images));
  configure(benchmark::RegisterBenchmark((name + "/back/atomic/double").c_str(),
                                         back_benchmark<double>, &pd, acc::atomic));
  configure(benchmark::RegisterBenchmark((name + "/back/thread_images/double").c_str(),
                                         back_benchmark<double>, &pd,
                                         acc::thread_images));

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
