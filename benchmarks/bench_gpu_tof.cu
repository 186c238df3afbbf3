// GPU TOF projector benchmarks on the reference problems
// (spec/benchmark-problems.md), float images, box phantom, DMI TOF
// parameters (29 bins of 25.37 mm, sigma 24.51 mm, 3 sigma, offset 0):
//
//   gpu/dmi-tof-subset/{forward,back}[/rows]  TOF sinogram over dmi-subset
//                                             (4,302,720 LORs x 29 bins);
//                                             /rows: launch_options::rows =
//                                             1296 (lanes along planes)
//   gpu/dmi-tof-lm/{forward,back}             10,000,000 events: uniformly
//                                             random LORs of the full dmi
//                                             sinogram (seeded), TOF bin
//                                             uniform in 8..20, random order
//   gpu/dmi-tof-lm-sorted/{forward,back}      the same events after the
//                                             one-time gpu::listmode_order
//                                             (LOR-only key)
//   gpu/dmi-tof-lm-tofsorted/{forward,back}   the same events ordered by the
//                                             TOF-aware key (direction, then
//                                             Z-order of the TOF-bin centre)
//   gpu/dmi-tof-lm/reorder                    that reorder: key + radix sort
//                                             + gather of LORs and bins
//   gpu/dmi-tof-lm/reorder/order-only         key + radix sort only
//   gpu/dmi-tof-lm/reorder/tof-key            the reorder with the TOF key
//   gpu/dmi-tof-lm-tofsorted-{coarse,fine}/.. TOF key with 11.25 / 2.8 degree
//                                             direction cells (default 5.6)
//
// Kernel variants (gpu::tof_kernel_options, same results to float
// rounding): no suffix = the library defaults (fast erfc everywhere;
// list-mode: sample-first forward, vector-atomic back). Suffixes:
//   /plain         list-mode: every lever off (the original kernels, exact
//                  erfc)
//   /vec-atomics   sinogram back: float2/float4 atomics for the two
//                  bilinear neighbours adjacent in memory
//   /lockstep      list-mode, defaults + one thread per event, a warp's
//                  lanes walking the union of their plane ranges in lock-step
//   /lockstep+warp-aggregate  list-mode back, lock-step with the lanes'
//                  amounts for one voxel summed in the warp (one atomic each)
//   /exact-erfc    bin-edge values from CUDA's erfcf and an IEEE division
//                  for the window total, instead of the default
//                  math::fast_erfc (relative error ~1e-6, hardware rcp/exp:
//                  ~15 instructions per edge against erfcf's ~40); combines
//                  with the others (/lockstep+exact-erfc, ...)
//   /tpl:G         G threads per event (LOR)
//   /stencil[-w4][+...]  back projection with a gpu::stencil_workspace of
//                  width 2 (-w4: width 4): vector atomics into the image's
//                  stencil layout; the reduction into the image is timed too
//   /vec-loads     list-mode forward: paired vector loads of the image
//   /weight-first+vec-loads  the same with the TOF weight evaluated first
//
// Timing: CUDA events around the work on its stream, UseManualTime, one
// warm-up call before each timed loop, 5 repetitions, aggregates only: read
// the `_median` rows. items_per_second is LORs (events) per second;
// "bins_per_second" is LORs x TOF bins per second (sinogram). Back
// projections use values all 1 and the image is zeroed outside the timed
// region.
//
// Without a CUDA device the program prints "no CUDA device" and exits with
// 0. Exit code 2 if any benchmark reported an error.

#include <benchmark/benchmark.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/dmi_problems.hpp"
#include "common/gpu_main.cuh"
#include "common/phantom.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/tof_projector.cuh"
#include "resproj/scanner/dmi.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rs = resproj::scanner;

constexpr std::size_t lm_events = rb::dmi_tof_lm_events;

/// Shared state: image, back image, stream.
struct base_problem {
  rp::image_geometry geometry = rb::reference_image_geometry();
  gpu::stream s;
  gpu::device_image<float> image, back_image;
  /// Stencil workspaces of width 2 and 4, made on first use.
  std::unique_ptr<gpu::stencil_workspace<float>> stencil_ws, stencil_ws4;
  base_problem() : image(geometry, s), back_image(geometry, s) {
    const auto host = rb::box_phantom<float>(geometry);
    image.upload(rp::span<const float>(host.data(), host.size()), s);
    back_image.zero(s);
    s.synchronize();
  }
  /// The image's stencil workspace of `width` (tof_kernel_options::stencil).
  gpu::stencil_workspace_ref stencil(int width) {
    auto &w = width == 4 ? stencil_ws4 : stencil_ws;
    if (!w)
      w = std::make_unique<gpu::stencil_workspace<float>>(geometry, s, width);
    return w->ref();
  }
};

/// dmi-tof-subset: dmi-subset LORs resident, N-wide output and ones.
struct subset_problem {
  std::size_t count = 0;
  gpu::device_buffer<float> starts, ends, out, ones;
  explicit subset_problem(base_problem &b) {
    const auto lors = rb::dmi_subset_lors<float>();
    count = lors.count();
    const std::size_t nb = std::size_t(rb::dmi_tof<float>().num_bins);
    starts = gpu::make_device_buffer(
        rp::span<const float>(lors.starts.data(), lors.starts.size()), b.s);
    ends = gpu::make_device_buffer(
        rp::span<const float>(lors.ends.data(), lors.ends.size()), b.s);
    out = gpu::device_buffer<float>(count * nb, b.s);
    ones = gpu::device_buffer<float>(count * nb, b.s);
    ones.fill(1.0f, b.s);
    b.s.synchronize();
  }
  rp::lor_view<const float> lors() const { return {starts.data(), ends.data(), count}; }
};

/// Event order of a list-mode benchmark: as generated, the LOR-only key,
/// the TOF-aware key (default layout, a coarser and a finer direction).
enum class lm_order { random, lor_key, tof_key, tof_key_coarse, tof_key_fine };

/// TOF key layout of an order.
gpu::listmode_tof_key key_layout(lm_order order) {
  gpu::listmode_tof_key k;
  if (order == lm_order::tof_key_coarse) {
    k.angle_bits = 4; // 11.25 degrees
    k.tilt_bits = 2;
    k.tilt_cell_degrees = 15;
  } else if (order == lm_order::tof_key_fine) {
    k.angle_bits = 6; // 2.8 degrees
    k.tilt_bits = 3;
    k.tilt_cell_degrees = 5;
    k.xy_bits = 8;
    k.z_bits = 7;
  }
  return k;
}

/// dmi-tof-lm: 1e7 random events of the full dmi sinogram, resident, and
/// their sorted copies (made once by the first sorted benchmark).
struct lm_problem {
  std::size_t count = lm_events;
  gpu::device_buffer<float> starts, ends, out, ones;
  gpu::device_buffer<std::int16_t> bins;
  /// The events reordered by one of the keys (made once, on first use).
  struct sorted_copy {
    bool ready = false;
    gpu::device_buffer<float> starts, ends;
    gpu::device_buffer<std::int16_t> bins;
    gpu::device_buffer<std::uint32_t> perm;
    rp::lor_view<const float> lors(std::size_t n) const {
      return {starts.data(), ends.data(), n};
    }
  };
  sorted_copy by_lor, by_tof; ///< LOR-only key, TOF-aware key (default layout)
  sorted_copy by_tof_coarse, by_tof_fine; ///< TOF key, coarser / finer direction
  gpu::device_buffer<unsigned char> workspace;
  std::size_t workspace_bytes = 0;

  explicit lm_problem(base_problem &b) {
    const auto t0 = std::chrono::steady_clock::now();
    const rb::dmi_events events = rb::make_dmi_events(count, rb::dmi_tof_lm_seed);
    std::vector<float> hs, he;
    rb::end_points_of(rs::dmi().detector_centres(), events.pairs, hs, he);
    const std::vector<std::int16_t> &hb = events.bins;
    starts = gpu::make_device_buffer(rp::span<const float>(hs.data(), hs.size()), b.s);
    ends = gpu::make_device_buffer(rp::span<const float>(he.data(), he.size()), b.s);
    bins =
        gpu::make_device_buffer(rp::span<const std::int16_t>(hb.data(), hb.size()), b.s);
    out = gpu::device_buffer<float>(count, b.s);
    ones = gpu::device_buffer<float>(count, b.s);
    ones.fill(1.0f, b.s);
    for (sorted_copy *c : {&by_lor, &by_tof, &by_tof_coarse, &by_tof_fine}) {
      c->starts = gpu::device_buffer<float>(3 * count, b.s);
      c->ends = gpu::device_buffer<float>(3 * count, b.s);
      c->bins = gpu::device_buffer<std::int16_t>(count, b.s);
      c->perm = gpu::device_buffer<std::uint32_t>(count, b.s);
    }
    workspace_bytes = gpu::listmode_order_workspace_bytes(count);
    workspace = gpu::device_buffer<unsigned char>(workspace_bytes, b.s);
    b.s.synchronize();
    std::fprintf(
        stderr, "dmi-tof-lm: %zu events generated and uploaded in %.2f s\n", count,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  rp::lor_view<const float> lors() const { return {starts.data(), ends.data(), count}; }

  sorted_copy &copy_of(lm_order order) {
    switch (order) {
    case lm_order::tof_key:
      return by_tof;
    case lm_order::tof_key_coarse:
      return by_tof_coarse;
    case lm_order::tof_key_fine:
      return by_tof_fine;
    default:
      return by_lor;
    }
  }

  /// The permutation only: key kernel + radix sort.
  void order_only(const rp::image_geometry &g, lm_order order, gpu::stream_ref s) {
    sorted_copy &c = copy_of(order);
    if (order == lm_order::lor_key || order == lm_order::random)
      gpu::listmode_order<float>(g, lors(), c.perm.span(), workspace.data(),
                                 workspace_bytes, s);
    else
      gpu::listmode_order<float>(g, lors(), bins.cspan(), rb::dmi_tof<float>(),
                                 c.perm.span(), workspace.data(), workspace_bytes, s,
                                 key_layout(order));
  }
  /// The whole one-time reorder: order, then gather LORs and bins.
  void reorder(const rp::image_geometry &g, lm_order order, gpu::stream_ref s) {
    order_only(g, order, s);
    sorted_copy &c = copy_of(order);
    gpu::gather_lors<float>(lors(), c.perm.cspan(), c.starts.span(), c.ends.span(), s);
    gpu::gather<std::int16_t>(bins.cspan(), c.perm.cspan(), c.bins.span(), s);
  }
  sorted_copy &ensure_sorted(const rp::image_geometry &g, lm_order order,
                             gpu::stream_ref s) {
    sorted_copy &c = copy_of(order);
    if (!c.ready) {
      reorder(g, order, s);
      s.synchronize();
      c.ready = true;
    }
    return c;
  }
};

std::unique_ptr<base_problem> g_base;
std::unique_ptr<subset_problem> g_subset;
std::unique_ptr<lm_problem> g_lm;

base_problem &base() {
  if (!g_base)
    g_base = std::make_unique<base_problem>();
  return *g_base;
}
subset_problem &subset() {
  if (!g_subset)
    g_subset = std::make_unique<subset_problem>(base());
  return *g_subset;
}
lm_problem &lm() {
  if (!g_lm)
    g_lm = std::make_unique<lm_problem>(base());
  return *g_lm;
}

void release_problems() noexcept {
  try {
    if (g_base)
      g_base->s.synchronize();
  } catch (...) {
  }
  g_lm.reset();
  g_subset.reset();
  g_base.reset();
}

void set_counters(benchmark::State &state, std::size_t items, int bins_per_item = 0) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
  if (bins_per_item > 0)
    state.counters["bins_per_second"] = benchmark::Counter(
        double(state.iterations()) * double(items) * double(bins_per_item),
        benchmark::Counter::kIsRate);
}

// ---------------------------------------------------------- benchmarks --

void bm_subset_forward(benchmark::State &state, gpu::launch_options opt,
                       gpu::tof_kernel_options variant) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    subset_problem &p = subset();
    const auto tof = rb::dmi_tof<float>();
    rb::time_on_stream(state, b.s, [&] {
      gpu::forward_tof_sino<float>(b.image.cview(), p.lors(), tof, p.out.span(), opt,
                                   variant, b.s);
    });
    set_counters(state, p.count, tof.num_bins);
    state.counters["threads_per_lor"] =
        gpu::detail::threads_per_lor(opt, p.count, b.image.device());
  });
}

void bm_subset_back(benchmark::State &state, gpu::launch_options opt,
                    gpu::tof_kernel_options variant) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    subset_problem &p = subset();
    const auto tof = rb::dmi_tof<float>();
    rb::time_on_stream(
        state, b.s, [&] { b.back_image.zero(b.s); },
        [&] {
          gpu::back_tof_sino<float>(b.back_image.view(), p.lors(), tof, p.ones.cspan(),
                                    opt, variant, b.s);
        });
    set_counters(state, p.count, tof.num_bins);
    state.counters["threads_per_lor"] =
        gpu::detail::threads_per_lor(opt, p.count, b.image.device());
  });
}

/// The events of `order` (sorting them once on first use).
void select_events(base_problem &b, lm_problem &p, lm_order order,
                   rp::lor_view<const float> &lors, rp::span<const std::int16_t> &bins) {
  lors = p.lors();
  bins = p.bins.cspan();
  if (order == lm_order::random)
    return;
  const auto &c = p.ensure_sorted(b.geometry, order, b.s);
  lors = c.lors(p.count);
  bins = c.bins.cspan();
}

void bm_lm_forward(benchmark::State &state, lm_order order, gpu::launch_options opt,
                   gpu::tof_kernel_options variant) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const auto tof = rb::dmi_tof<float>();
    rb::time_on_stream(state, b.s, [&] {
      gpu::forward_tof_lm<float>(b.image.cview(), lors, bins, tof, p.out.span(), opt,
                                 variant, b.s);
    });
    set_counters(state, p.count);
    state.counters["threads_per_lor"] =
        gpu::detail::threads_per_event(opt, p.count, b.image.device());
  });
}

void bm_lm_back(benchmark::State &state, lm_order order, gpu::launch_options opt,
                gpu::tof_kernel_options variant) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const auto tof = rb::dmi_tof<float>();
    rb::time_on_stream(
        state, b.s, [&] { b.back_image.zero(b.s); },
        [&] {
          gpu::back_tof_lm<float>(b.back_image.view(), lors, bins, tof, p.ones.cspan(),
                                  opt, variant, b.s);
        });
    set_counters(state, p.count);
    state.counters["threads_per_lor"] =
        gpu::detail::threads_per_event(opt, p.count, b.image.device());
  });
}

/// `bm_lm_back` / `bm_subset_back` with `variant.stencil` = the image's
/// stencil workspace of `width` (allocated outside the timed region).
void bm_lm_back_stencil(benchmark::State &state, lm_order order, gpu::launch_options opt,
                        gpu::tof_kernel_options variant, int width) {
  rb::guarded(state, [&] { variant.stencil = base().stencil(width); });
  bm_lm_back(state, order, opt, variant);
}
void bm_subset_back_stencil(benchmark::State &state, gpu::launch_options opt,
                            gpu::tof_kernel_options variant, int width) {
  rb::guarded(state, [&] { variant.stencil = base().stencil(width); });
  bm_subset_back(state, opt, variant);
}

void bm_reorder(benchmark::State &state, bool order_only, lm_order order) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rb::time_on_stream(state, b.s, [&] {
      if (order_only)
        p.order_only(b.geometry, order, b.s);
      else
        p.reorder(b.geometry, order, b.s);
    });
    set_counters(state, p.count);
    p.copy_of(order).ready = !order_only;
  });
}

void register_all() {
  using benchmark::RegisterBenchmark;
  const gpu::launch_options automatic{};
  const gpu::tof_kernel_options defaults{}, plain = gpu::tof_kernel_options::plain();
  gpu::tof_kernel_options sino_vec = defaults, lockstep = defaults, aggregate = defaults;
  sino_vec.sino_vector_atomics = true;
  lockstep.lockstep = true;
  aggregate.lockstep = true;
  aggregate.warp_aggregate = true;
  // Exact erfc (the defaults use math::fast_erfc for float).
  gpu::tof_kernel_options exact = defaults;
  exact.fast_erfc = false;
  gpu::tof_kernel_options lockstep_exact = lockstep, aggregate_exact = aggregate;
  lockstep_exact.fast_erfc = false;
  aggregate_exact.fast_erfc = false;
  gpu::tof_kernel_options loads = defaults, lockstep_loads = lockstep;
  loads.vector_loads = true;
  lockstep_loads.vector_loads = true;
  gpu::tof_kernel_options weight_first_loads = loads;
  weight_first_loads.sample_first = false;
  gpu::launch_options rows;
  rows.rows = 1296; // dmi-subset is [1296 planes][8 views][415 radial]
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/forward", bm_subset_forward,
                                  automatic, defaults));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/forward/rows", bm_subset_forward,
                                  rows, defaults));
  rb::configure(
      RegisterBenchmark("gpu/dmi-tof-subset/back", bm_subset_back, automatic, defaults));
  rb::configure(
      RegisterBenchmark("gpu/dmi-tof-subset/back/rows", bm_subset_back, rows, defaults));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/back/rows/vec-atomics",
                                  bm_subset_back, rows, sino_vec));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/back/vec-atomics", bm_subset_back,
                                  automatic, sino_vec));
  for (int width : {2, 4}) {
    const std::string w = width == 4 ? "-w4" : "";
    rb::configure(RegisterBenchmark(("gpu/dmi-tof-subset/back/stencil" + w).c_str(),
                                    bm_subset_back_stencil, automatic, defaults, width));
    rb::configure(RegisterBenchmark(("gpu/dmi-tof-subset/back/rows/stencil" + w).c_str(),
                                    bm_subset_back_stencil, rows, defaults, width));
  }
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/forward/exact-erfc",
                                  bm_subset_forward, automatic, exact));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/forward/rows/exact-erfc",
                                  bm_subset_forward, rows, exact));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/back/exact-erfc", bm_subset_back,
                                  automatic, exact));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-subset/back/rows/exact-erfc",
                                  bm_subset_back, rows, exact));
  for (int g : {1, 4}) {
    gpu::launch_options opt;
    opt.threads_per_lor = g;
    const std::string tpl = "/tpl:" + std::to_string(g);
    rb::configure(RegisterBenchmark(("gpu/dmi-tof-subset/forward" + tpl).c_str(),
                                    bm_subset_forward, opt, defaults));
    rb::configure(RegisterBenchmark(("gpu/dmi-tof-subset/back" + tpl).c_str(),
                                    bm_subset_back, opt, defaults));
  }
  // List-mode: per event order, the default kernels, the plain ones (every
  // lever off), lock-step, and lock-step with warp-aggregated atomics.
  const struct {
    lm_order order;
    const char *name;
  } orders[] = {{lm_order::random, "gpu/dmi-tof-lm"},
                {lm_order::lor_key, "gpu/dmi-tof-lm-sorted"},
                {lm_order::tof_key, "gpu/dmi-tof-lm-tofsorted"}};
  rb::configure(
      RegisterBenchmark("gpu/dmi-tof-lm/reorder", bm_reorder, false, lm_order::lor_key));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-lm/reorder/order-only", bm_reorder, true,
                                  lm_order::lor_key));
  rb::configure(RegisterBenchmark("gpu/dmi-tof-lm/reorder/tof-key", bm_reorder, false,
                                  lm_order::tof_key));
  for (const auto &o : orders) {
    const std::string n = o.name;
    rb::configure(RegisterBenchmark((n + "/forward").c_str(), bm_lm_forward, o.order,
                                    automatic, defaults));
    rb::configure(RegisterBenchmark((n + "/back").c_str(), bm_lm_back, o.order, automatic,
                                    defaults));
    rb::configure(RegisterBenchmark((n + "/forward/plain").c_str(), bm_lm_forward,
                                    o.order, automatic, plain));
    rb::configure(RegisterBenchmark((n + "/back/plain").c_str(), bm_lm_back, o.order,
                                    automatic, plain));
    rb::configure(RegisterBenchmark((n + "/forward/lockstep").c_str(), bm_lm_forward,
                                    o.order, automatic, lockstep));
    rb::configure(RegisterBenchmark((n + "/back/lockstep").c_str(), bm_lm_back, o.order,
                                    automatic, lockstep));
    rb::configure(RegisterBenchmark((n + "/back/lockstep+warp-aggregate").c_str(),
                                    bm_lm_back, o.order, automatic, aggregate));
    rb::configure(RegisterBenchmark((n + "/forward/exact-erfc").c_str(), bm_lm_forward,
                                    o.order, automatic, exact));
    rb::configure(RegisterBenchmark((n + "/back/exact-erfc").c_str(), bm_lm_back, o.order,
                                    automatic, exact));
    rb::configure(RegisterBenchmark((n + "/forward/vec-loads").c_str(), bm_lm_forward,
                                    o.order, automatic, loads));
    rb::configure(RegisterBenchmark((n + "/forward/weight-first+vec-loads").c_str(),
                                    bm_lm_forward, o.order, automatic,
                                    weight_first_loads));
    for (const auto &sv : {std::pair<const char *, gpu::tof_kernel_options>{"", defaults},
                           {"+lockstep", lockstep},
                           {"+lockstep+exact-erfc", lockstep_exact}}) {
      if (o.order == lm_order::random && sv.second.lockstep)
        continue;
      for (int width : {2, 4})
        rb::configure(RegisterBenchmark(
            (n + "/back/stencil" + (width == 4 ? "-w4" : "") + sv.first).c_str(),
            bm_lm_back_stencil, o.order, automatic, sv.second, width));
    }
    if (o.order == lm_order::random)
      continue; // lock-step is for sorted events
    rb::configure(RegisterBenchmark((n + "/forward/lockstep+exact-erfc").c_str(),
                                    bm_lm_forward, o.order, automatic, lockstep_exact));
    rb::configure(RegisterBenchmark((n + "/back/lockstep+exact-erfc").c_str(), bm_lm_back,
                                    o.order, automatic, lockstep_exact));
    rb::configure(RegisterBenchmark((n + "/forward/lockstep+vec-loads").c_str(),
                                    bm_lm_forward, o.order, automatic, lockstep_loads));
    rb::configure(
        RegisterBenchmark((n + "/back/lockstep+warp-aggregate+exact-erfc").c_str(),
                          bm_lm_back, o.order, automatic, aggregate_exact));
  }
  for (int g : {1, 4}) {
    gpu::launch_options opt;
    opt.threads_per_lor = g;
    const std::string tpl = "/tpl:" + std::to_string(g);
    for (const auto &o : orders) {
      const std::string n = o.name;
      rb::configure(RegisterBenchmark((n + "/forward" + tpl).c_str(), bm_lm_forward,
                                      o.order, opt, defaults));
      rb::configure(RegisterBenchmark((n + "/back" + tpl).c_str(), bm_lm_back, o.order,
                                      opt, defaults));
    }
  }
  // TOF key layouts (coarser / finer direction cells), default kernels.
  const struct {
    lm_order order;
    const char *name;
  } layouts[] = {{lm_order::tof_key_coarse, "gpu/dmi-tof-lm-tofsorted-coarse"},
                 {lm_order::tof_key_fine, "gpu/dmi-tof-lm-tofsorted-fine"}};
  for (const auto &o : layouts) {
    const std::string n = o.name;
    rb::configure(RegisterBenchmark((n + "/forward").c_str(), bm_lm_forward, o.order,
                                    automatic, defaults));
    rb::configure(RegisterBenchmark((n + "/back").c_str(), bm_lm_back, o.order, automatic,
                                    defaults));
  }
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_gpu_tof", register_all, release_problems);
}
