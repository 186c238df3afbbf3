// All-LOR sensitivity image with attenuation on the CPU
// (recon/all_lor_sensitivity.hpp), LORs per second:
//
//   all_lor/<scanner>/plain        the library call (axial families)
//   all_lor/<scanner>/brute_force  every LOR walked (the reference)
//
// on "tb10", a tb-like scanner (24 sides of 5 crystals, 4 units of 10
// rings 2.85 mm apart with 4 mm gaps, 36 x 36 x 48 voxels of 2.85 mm, an
// elliptic water cylinder covering 80% of the image's axial length). Then
// "tb_walks": for the full tb scanner and the tb-lm-osem water cylinder,
// the walks the method takes per LOR, counted on every 2000th transaxial
// crystal pair without the mirror flips (the counters; the time is that of
// the sample), and the number of flips the call would use (each halves
// the walks).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../examples/common/tb_phantom.hpp"
#include "common/bench_support.hpp"
#include "resproj/recon/all_lor_sensitivity.hpp"
#include "resproj/scanner/tb.hpp"

namespace {

namespace rc = resproj::recon;
using resproj::image_geometry;
using resproj::span;
using resproj::scanner::polygon_scanner;

constexpr double pitch = 2.85;

polygon_scanner tb10() {
  std::vector<double> z;
  for (int r = 0; r < 40; ++r)
    z.push_back(pitch * r + 4.0 * (r / 10));
  const double centre = 0.5 * (z.front() + z.back());
  for (double &v : z)
    v -= centre;
  const double pi = 3.14159265358979323846;
  return polygon_scanner(24, 5, 5 * pitch / (2 * std::tan(pi / 24)), pitch, z);
}

image_geometry tb10_image() {
  return image_geometry::centred({36, 36, 48}, {pitch, pitch, pitch});
}

std::vector<float> tb10_mu(const image_geometry &g) {
  std::vector<float> mu(std::size_t(g.num_voxels()), 0.f);
  std::size_t o = 0;
  for (std::int64_t i = 0; i < 36; ++i)
    for (std::int64_t j = 0; j < 36; ++j)
      for (std::int64_t k = 0; k < 48; ++k, ++o) {
        const double x = g.origin()[0] + pitch * double(i);
        const double y = g.origin()[1] + pitch * double(j);
        const double z = g.origin()[2] + pitch * double(k);
        if ((x / 27) * (x / 27) + (y / 18) * (y / 18) <= 1 &&
            std::fabs(z) <= 0.4 * 48 * pitch)
          mu[o] = 0.0096f;
      }
  return mu;
}

template <bool Brute> void all_lor_tb10(benchmark::State &state) {
  const auto s = tb10();
  const auto g = tb10_image();
  const auto mu = tb10_mu(g);
  const span<const float> m(mu.data(), mu.size());
  rc::all_lor_sensitivity_stats st;
  for (auto _ : state) {
    std::vector<float> out = Brute ? rc::all_lor_sensitivity_brute_force(s, g, m)
                                   : rc::all_lor_sensitivity(s, g, m, 0, &st);
    benchmark::DoNotOptimize(out.data());
  }
  const double lors = 120.0 * 119.0 / 2.0 * 40.0 * 40.0;
  state.SetItemsProcessed(std::int64_t(lors) * state.iterations());
  if (!Brute) {
    state.counters["walks_per_lor"] =
        double(st.attenuation_walks + st.scatter_walks) / double(st.lors);
    state.counters["mirror_flips"] = st.mirror_flips;
  }
}

void tb_walks(benchmark::State &state) {
  namespace math = resproj::math;
  const auto s = resproj::scanner::tb();
  const auto g = resproj::scanner::tb_image_geometry();
  const auto mu =
      resproj_examples::tb_mu_image<float>(resproj_examples::tb_phantom::make(), g);
  const rc::detail::padded_attenuation p =
      rc::detail::pad_attenuation(g, 2, 2, span<const float>(mu.data(), mu.size()));
  math::family_grid<float> f;
  f.gp = math::image_grid<float>::from(p.gp);
  f.mu = p.mu.data();
  f.support = p.support.data();
  f.run_first = p.run_first.data();
  f.run_last = p.run_last.data();
  const std::vector<float> centres = s.detector_centres();
  const std::vector<int> run = rc::detail::ring_runs(s.ring_z(), pitch);
  const int flips = rc::detail::find_mirror_symmetry(
                        s, g, p.gp, span<const float>(mu.data(), mu.size()), centres)
                        .num_flips();
  std::vector<double> diff(std::size_t(p.gp.num_voxels()), 0.0);
  const int nc = s.crystals_per_ring();
  std::uint64_t lors = 0, families = 0, crossing = 0, attenuation = 0, scatter = 0;
  for (auto _ : state) {
    std::uint64_t pair = 0;
    for (int c1 = 0; c1 < nc; ++c1)
      for (int c2 = c1 + 1; c2 < nc; ++c2, ++pair) {
        if (pair % 2000 != 0)
          continue;
        rc::detail::for_each_family(run, [&](int r1, int r2, int K) {
          const rc::detail::family_ends end{
              centres.data(), std::size_t(nc), c1, c2, r1, r2};
          const math::family_work w = math::back_project_family<float, double>(
              f, K, end, diff.data(), [](double *v, double x) { *v += x; });
          lors += std::uint64_t(K);
          ++families;
          crossing += w.scatter_walks > 0 ? std::uint64_t(K) : 0;
          attenuation += w.attenuation_walks;
          scatter += w.scatter_walks;
        });
      }
  }
  state.counters["lors"] = double(lors);
  state.counters["mirror_flips"] = flips;
  state.counters["families"] = double(families);
  state.counters["crossing_fraction"] = double(crossing) / double(lors);
  state.counters["attenuation_walks_per_crossing_lor"] =
      double(attenuation) / double(crossing);
  state.counters["scatter_walks_per_crossing_lor"] = double(scatter) / double(crossing);
}

} // namespace

BENCHMARK(all_lor_tb10<false>)
    ->Name("all_lor/tb10/plain")
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3);
BENCHMARK(all_lor_tb10<true>)
    ->Name("all_lor/tb10/brute_force")
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3);
BENCHMARK(tb_walks)
    ->Name("all_lor/tb_walks")
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->Repetitions(1);

int main(int argc, char **argv) {
  if (!resproj_bench::initialize_with_defaults(argc, argv))
    return 1;
  return resproj_bench::run_registered(
      "bench_all_lor_sensitivity", [] {}, [] {});
}
