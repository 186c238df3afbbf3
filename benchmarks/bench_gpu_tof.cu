// GPU TOF projector benchmarks on the reference problems
// (docs/benchmark-problems.md), float images, box phantom, DMI TOF
// parameters (29 bins of 25.37 mm, sigma 24.51 mm, 3 sigma, offset 0).
//
// Plain rows first: gpu::forward / gpu::back(op, image, lors, out, stream),
// no tuning, on the LORs as a user has them (op::tof_sinogram{tof} or
// op::tof_listmode{tof, bins}):
//
//   gpu/dmi-tof-subset/{forward,back}/plain   TOF sinogram over the dmi-subset
//                                             end points (4,302,720 LORs x 29
//                                             bins), resident, declared
//                                             sinogram-ordered (8 views x 415
//                                             radial per plane)
//   gpu/dmi-tof-subset/{forward,back}/sinogram-source/plain
//                                             the same LORs derived on the
//                                             device from the
//                                             scanner::sinogram_source
//   gpu/dmi-tof-lm/{forward,back}/plain       10,000,000 events: uniformly
//                                             random LORs of the full dmi
//                                             sinogram (seeded), TOF bin
//                                             uniform in 8..20, random order
//                                             (plain lor_view, no layout)
//   gpu/dmi-tof-lm-sorted/{forward,back}/plain
//                                             the same events after the
//                                             one-time gpu::listmode_order
//                                             (LOR-only key), declared
//                                             lor_layout::sorted_events()
//   gpu/dmi-tof-lm-tofsorted/{forward,back}/plain
//                                             the same events ordered by the
//                                             TOF-aware key (direction, then
//                                             Z-order of the TOF-bin centre),
//                                             declared sorted_events()
//   gpu/dmi-tof-lm-tofsorted-{coarse,fine}/{forward,back}/plain
//                                             TOF key with 11.25 / 2.8 degree
//                                             direction cells (default 5.6)
//   gpu/dmi-tof-lm-tofsorted-slabs/{forward,back}/plain
//                                             TOF key with 2 axial slab bits
//                                             (for_image takes none for dmi)
//   gpu/dmi-tof-lm{,-sorted,-tofsorted}/forward/positive-image/plain
//                                             the same forward calls from the
//                                             box image plus 0.25 everywhere
//                                             (no zero sample to skip)
//   gpu/dmi-tof-subset/back/reproducible/plain
//   gpu/dmi-tof-lm{,-sorted,-tofsorted}/back/reproducible/plain
//                                             the reproducible back projection:
//                                             the same plain call into a
//                                             gpu::fixed_point_image<float>
//                                             (exponent 32; scalar integer
//                                             atomics), compare with
//                                             .../back/plain
//
// The one-time reorder of the events (after the plain rows):
//   gpu/dmi-tof-lm/reorder                    key + radix sort + gather of
//                                             LORs and bins (LOR-only key)
//   gpu/dmi-tof-lm/reorder/order-only         key + radix sort only
//   gpu/dmi-tof-lm/reorder/tof-key            the reorder with the TOF key
//
// Variant rows, after the plain ones: forced kernels (a gpu::kernel_choice
// run through gpu::detail::run_forward / run_back), same results to float
// rounding.
//   TOF sinogram (dmi-tof-subset): fast erfc, scalar atomics, LORs in
//   memory order with the table's lane count (4 threads per LOR) unless a
//   suffix says otherwise:
//     /memory-order  just that
//     /rows          lanes along sinogram planes (1 thread per LOR)
//     /vec-atomics   back: float2/float4 atomics for the two bilinear
//                    neighbours adjacent in memory
//     /stencil[-w4]  back: a gpu::stencil_workspace of width 2 (-w4: 4):
//                    vector atomics into the image's stencil layout; the
//                    reduction into the image is timed too
//     /exact-erfc    bin edges from CUDA's erfcf and an IEEE division for
//                    the window total instead of math::fast_erfc (relative
//                    error ~1e-6)
//     /tpl:G         G threads per LOR
//   TOF list-mode (dmi-tof-lm, -sorted, -tofsorted), relative to
//     /base          2 threads per event (the table's count), fast erfc,
//                    forward: sample first (image sample read first, TOF
//                    weight only where it is non-zero), back: paired vector
//                    atomics; no lock-step
//   the suffixes change:
//     /levers-off    every lever off (weight first, exact erfc, scalar
//                    atomics): the original kernels
//     /weight-first  forward: the TOF weight evaluated first, the image
//                    sample only where it is non-zero
//     /lockstep      one thread per event, a warp's lanes walking the union
//                    of their plane ranges in lock-step (sorted orders)
//     /exact-erfc    as above; combines (/lockstep+exact-erfc, ...)
//     /stencil[-w4][+...]  back: stencil workspace, as above
//     /tpl:G         G threads per event
//
// Timing: CUDA events around the work on its stream, UseManualTime, one
// warm-up call before each timed loop, 5 repetitions, aggregates only: read
// the `_median` rows. items_per_second is LORs (events) per second;
// "bins_per_second" is LORs x TOF bins per second (sinogram);
// "threads_per_lor" and "rows" say which kernel ran (rows: sinogram planes
// taken by neighbouring lanes, 0: memory order; lock-step counts 1 thread).
// Back projections use values all 1 and the image (or the fixed-point
// image) is zeroed outside the timed region.
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
#include "common/dmi_device_sources.cuh"
#include "common/dmi_problems.hpp"
#include "common/gpu_main.cuh"
#include "common/gpu_variants.cuh"
#include "common/phantom.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/fixed_point_image.cuh"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/scanner/dmi.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;
namespace rs = resproj::scanner;

constexpr std::size_t lm_events = rb::dmi_tof_lm_events;

/// Shared state: image, a strictly positive image, back image, stream.
struct base_problem {
  rp::image_geometry geometry = rb::reference_image_geometry();
  gpu::stream s;
  gpu::device_image<float> image, positive_image, back_image;
  /// Stencil workspaces of width 2 and 4, made on first use.
  std::unique_ptr<gpu::stencil_workspace<float>> stencil_ws, stencil_ws4;
  /// Reproducible back projection output, made on first use.
  std::unique_ptr<gpu::fixed_point_image<float>> fixed_image;
  base_problem()
      : image(geometry, s), positive_image(geometry, s), back_image(geometry, s) {
    const auto host = rb::box_phantom<float>(geometry);
    image.upload(rp::span<const float>(host.data(), host.size()), s);
    // The box on a background of 0.25: no sample is zero, so kernels that
    // skip zero samples gain nothing.
    std::vector<float> positive(host);
    for (float &v : positive)
      v += 0.25f;
    positive_image.upload(rp::span<const float>(positive.data(), positive.size()), s);
    back_image.zero(s);
    s.synchronize();
  }
  /// The image's stencil workspace of `width` (gpu::tuning::stencil); none
  /// for width 0.
  gpu::stencil_workspace_ref stencil(int width) {
    if (width == 0)
      return {};
    auto &w = width == 4 ? stencil_ws4 : stencil_ws;
    if (!w)
      w = std::make_unique<gpu::stencil_workspace<float>>(geometry, s, width);
    return w->ref();
  }
  gpu::fixed_point_image<float> &fixed() {
    if (!fixed_image)
      fixed_image = std::make_unique<gpu::fixed_point_image<float>>(geometry, s);
    return *fixed_image;
  }
};

/// dmi-tof-subset: dmi-subset LORs resident (end points, and the sinogram
/// source over the resident dmi tables), N-wide output and ones.
struct subset_problem {
  std::size_t count = 0;
  gpu::device_buffer<float> starts, ends, out, ones;
  /// [plane][view][radial]: 8 views x 415 radial bins per plane.
  rp::lor_layout layout = rb::dmi_subset_layout();
  rb::dmi_device_tables tables;
  explicit subset_problem(base_problem &b) : tables(b.s) {
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
  /// The resident end points, declared sinogram-ordered.
  rp::lor_view<const float> lors() const {
    return rp::lor_view<const float>(starts.data(), ends.data(), count, layout);
  }
};

/// Event order of a list-mode benchmark: as generated, the LOR-only key,
/// the TOF-aware key (default layout, a coarser and a finer direction,
/// axial slabs).
enum class lm_order {
  random,
  lor_key,
  tof_key,
  tof_key_coarse,
  tof_key_fine,
  tof_key_slabs
};

/// TOF key layout of an order.
gpu::listmode_tof_key key_layout(lm_order order) {
  gpu::listmode_tof_key k;
  if (order == lm_order::tof_key_coarse) {
    k.angle_bits = 4; // 11.25 degrees
    k.tilt_bits = 2;
    k.tilt_cell_degrees = 15;
  } else if (order == lm_order::tof_key_slabs) {
    k.slab_bits = 2; // 4 slabs of 17.75 planes
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
    /// The reordered events, declared so (lor_layout::sorted_events()).
    rp::lor_view<const float> lors(std::size_t n) const {
      return rp::lor_view<const float>(starts.data(), ends.data(), n,
                                       rp::lor_layout::sorted_events());
    }
  };
  sorted_copy by_lor, by_tof; ///< LOR-only key, TOF-aware key (default layout)
  sorted_copy by_tof_coarse, by_tof_fine; ///< TOF key, coarser / finer direction
  sorted_copy by_tof_slabs;               ///< TOF key with axial slabs
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
    for (sorted_copy *c :
         {&by_lor, &by_tof, &by_tof_coarse, &by_tof_fine, &by_tof_slabs}) {
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

  /// The events in acquisition (random) order: no layout to declare.
  rp::lor_view<const float> lors() const { return {starts.data(), ends.data(), count}; }

  sorted_copy &copy_of(lm_order order) {
    switch (order) {
    case lm_order::tof_key:
      return by_tof;
    case lm_order::tof_key_coarse:
      return by_tof_coarse;
    case lm_order::tof_key_fine:
      return by_tof_fine;
    case lm_order::tof_key_slabs:
      return by_tof_slabs;
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

// ---------------------------------------------------------- benchmarks --

void set_counters(benchmark::State &state, std::size_t items, int bins_per_item = 0) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
  if (bins_per_item > 0)
    state.counters["bins_per_second"] = benchmark::Counter(
        double(state.iterations()) * double(items) * double(bins_per_item),
        benchmark::Counter::kIsRate);
}

/// Forward (`back` false) or back projection of `op` over `lors` into /
/// from the base problem's images: the plain call when `plain`, else kernel
/// `c` (the call checked once first, with `t` for its stencil).
/// `positive`: forward from the strictly positive image.
template <class Op, class Lors>
void time_projection(benchmark::State &state, const Op &op, const Lors &lors,
                     rp::span<float> out, rp::span<const float> ones, bool back,
                     bool plain, const gpu::kernel_choice &c, const gpu::tuning &t,
                     bool positive = false) {
  base_problem &b = base();
  if (back) {
    const auto image = b.back_image.view();
    if (!plain)
      rb::check_back(op, image, lors, ones, b.s, t);
    rb::time_on_stream(
        state, b.s, [&] { b.back_image.zero(b.s); },
        [&] {
          if (plain)
            gpu::back(op, image, lors, ones, b.s);
          else
            rb::back_as(c, op, image, lors, ones, b.s);
        });
  } else {
    const auto image = positive ? b.positive_image.cview() : b.image.cview();
    if (!plain)
      rb::check_forward(op, image, lors, out, b.s, t);
    rb::time_on_stream(state, b.s, [&] {
      if (plain)
        gpu::forward(op, image, lors, out, b.s);
      else
        rb::forward_as(c, op, image, lors, out, b.s);
    });
  }
  rb::choice_counters(state, c);
}

/// The reproducible back projection of `op` over `lors`: the plain call
/// into the base problem's fixed-point image (cleared outside the timed
/// region).
template <class Op, class Lors>
void time_reproducible_back(benchmark::State &state, const Op &op, const Lors &lors,
                            rp::span<const float> ones) {
  base_problem &b = base();
  gpu::fixed_point_image<float> &acc = b.fixed();
  rb::time_on_stream(
      state, b.s, [&] { acc.clear(b.s); }, [&] { gpu::back(op, acc, lors, ones, b.s); });
  rb::choice_counters(state,
                      rb::plain_choice(op, gpu::direction::back, lors, acc.device()));
}

gpu::direction direction_of(bool back) {
  return back ? gpu::direction::back : gpu::direction::forward;
}

// ---------------------------------------------------- TOF sinogram rows --

/// A forced TOF sinogram kernel: memory order (the table's lane count) or
/// lanes along sinogram planes (`rows`, 1 thread per LOR for a full GPU),
/// `threads_per_lor` (0: that count), paired vector atomics (back), exact
/// erfc, a stencil workspace of `stencil_width` (back; 0: none).
struct sino_variant {
  bool rows = false;
  int threads_per_lor = 0;
  bool vector_atomics = false;
  bool exact_erfc = false;
  int stencil_width = 0;
};

void bm_subset_plain(benchmark::State &state, bool sinogram_source, bool back) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    subset_problem &p = subset();
    const rp::op::tof_sinogram op(rb::dmi_tof<float>());
    const auto run = [&](const auto &lors) {
      time_projection(state, op, lors, p.out.span(), p.ones.cspan(), back, true,
                      rb::plain_choice(op, direction_of(back), lors, b.image.device()),
                      {});
    };
    if (sinogram_source)
      run(p.tables.subset);
    else
      run(p.lors());
    set_counters(state, p.count, op.tof.num_bins);
  });
}

void bm_subset_reproducible(benchmark::State &state) {
  rb::guarded(state, [&] {
    subset_problem &p = subset();
    const rp::op::tof_sinogram op(rb::dmi_tof<float>());
    time_reproducible_back(state, op, p.lors(), p.ones.cspan());
    set_counters(state, p.count, op.tof.num_bins);
  });
}

void bm_subset_variant(benchmark::State &state, bool back, sino_variant v) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    subset_problem &p = subset();
    const rp::op::tof_sinogram op(rb::dmi_tof<float>());
    const int device = b.image.device();
    gpu::tuning t;
    t.threads_per_lor = v.threads_per_lor;
    t.exact_erfc = v.exact_erfc;
    t.stencil = b.stencil(v.stencil_width);
    gpu::kernel_choice c =
        rb::choice_as(op, direction_of(back), rp::lor_layout{}, p.count, device, t);
    if (v.rows) {
      c.rows = p.layout.planes_in(p.count);
      if (v.threads_per_lor == 0)
        c.threads_per_lor = rb::filling_lanes(1, p.count, device);
    }
    c.vector_atomics = v.vector_atomics;
    time_projection(state, op, p.lors(), p.out.span(), p.ones.cspan(), back, false, c, t);
    set_counters(state, p.count, op.tof.num_bins);
  });
}

// ---------------------------------------------------- TOF list-mode rows --

/// A forced TOF list-mode kernel, relative to the base (the defaults
/// below): threads per event (0: the table's count), sample first
/// (forward), paired vector atomics (back),
/// lock-step warps, exact erfc, a stencil workspace of `stencil_width`
/// (back; 0: none).
struct lm_variant {
  int threads_per_lor = 0;
  bool sample_first = true;
  bool vector_atomics = true;
  bool lockstep = false;
  bool exact_erfc = false;
  int stencil_width = 0;
};

/// The events of `order` (sorting them once on first use; sorted events
/// are declared lor_layout::sorted_events()).
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

/// `positive`: forward from the strictly positive image.
void bm_lm_plain(benchmark::State &state, lm_order order, bool back, bool positive) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const rp::op::tof_listmode op(rb::dmi_tof<float>(), bins);
    time_projection(state, op, lors, p.out.span(), p.ones.cspan(), back, true,
                    rb::plain_choice(op, direction_of(back), lors, b.image.device()), {},
                    positive);
    set_counters(state, p.count);
  });
}

void bm_lm_reproducible(benchmark::State &state, lm_order order) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const rp::op::tof_listmode op(rb::dmi_tof<float>(), bins);
    time_reproducible_back(state, op, lors, p.ones.cspan());
    set_counters(state, p.count);
  });
}

void bm_lm_variant(benchmark::State &state, lm_order order, bool back, lm_variant v) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const rp::op::tof_listmode op(rb::dmi_tof<float>(), bins);
    gpu::tuning t;
    t.threads_per_lor = v.threads_per_lor;
    t.exact_erfc = v.exact_erfc;
    t.stencil = b.stencil(v.stencil_width);
    gpu::kernel_choice c = rb::choice_as(op, direction_of(back), rp::lor_layout{},
                                         p.count, b.image.device(), t);
    c.sample_first = v.sample_first;
    c.vector_atomics = v.vector_atomics;
    c.lockstep = v.lockstep;
    if (v.lockstep)
      c.threads_per_lor = 1;
    time_projection(state, op, lors, p.out.span(), p.ones.cspan(), back, false, c, t);
    set_counters(state, p.count);
  });
}

/// Non-TOF forward projection of the events' LORs (the per-event
/// attenuation of list-mode OSEM) with `threads_per_lor` lanes (0: the
/// plain call).
void bm_lm_non_tof_forward(benchmark::State &state, lm_order order, int threads_per_lor) {
  rb::guarded(state, [&] {
    base_problem &b = base();
    lm_problem &p = lm();
    rp::lor_view<const float> lors;
    rp::span<const std::int16_t> bins;
    select_events(b, p, order, lors, bins);
    const rp::op::non_tof op;
    gpu::tuning t;
    t.threads_per_lor = threads_per_lor;
    const gpu::kernel_choice c =
        threads_per_lor == 0
            ? rb::plain_choice(op, gpu::direction::forward, lors, b.image.device())
            : rb::choice_as(op, gpu::direction::forward, lors.layout, p.count,
                            b.image.device(), t);
    time_projection(state, op, lors, p.out.span(), p.ones.cspan(), false,
                    threads_per_lor == 0, c, t);
    set_counters(state, p.count);
  });
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
  const auto reg = [](const std::string &name, auto fn, auto... args) {
    rb::configure(RegisterBenchmark(name.c_str(), fn, args...));
  };
  const struct {
    lm_order order;
    const char *name;
  } orders[] = {{lm_order::random, "gpu/dmi-tof-lm"},
                {lm_order::lor_key, "gpu/dmi-tof-lm-sorted"},
                {lm_order::tof_key, "gpu/dmi-tof-lm-tofsorted"},
                {lm_order::tof_key_coarse, "gpu/dmi-tof-lm-tofsorted-coarse"},
                {lm_order::tof_key_fine, "gpu/dmi-tof-lm-tofsorted-fine"},
                {lm_order::tof_key_slabs, "gpu/dmi-tof-lm-tofsorted-slabs"}};
  const std::size_t num_variant_orders = 3; // the variants run on the first three

  // Plain calls first.
  for (const bool back : {false, true}) {
    const std::string dir = back ? "/back" : "/forward";
    reg("gpu/dmi-tof-subset" + dir + "/plain", bm_subset_plain, false, back);
    reg("gpu/dmi-tof-subset" + dir + "/sinogram-source/plain", bm_subset_plain, true,
        back);
  }
  for (const auto &o : orders)
    for (const bool back : {false, true})
      reg(std::string(o.name) + (back ? "/back" : "/forward") + "/plain", bm_lm_plain,
          o.order, back, false);
  for (std::size_t i = 0; i < 3; ++i)
    reg(std::string(orders[i].name) + "/forward/positive-image/plain", bm_lm_plain,
        orders[i].order, false, true);
  // The reproducible back projection (plain call, fixed-point image).
  reg("gpu/dmi-tof-subset/back/reproducible/plain", bm_subset_reproducible);
  for (std::size_t i = 0; i < 3; ++i)
    reg(std::string(orders[i].name) + "/back/reproducible/plain", bm_lm_reproducible,
        orders[i].order);
  for (std::size_t i : {std::size_t(0), std::size_t(2)})
    for (int g : {0, 1, 2, 4})
      reg(std::string(orders[i].name) + "/non-tof-forward/" +
              (g == 0 ? std::string("plain") : "tpl:" + std::to_string(g)),
          bm_lm_non_tof_forward, orders[i].order, g);
  reg("gpu/dmi-tof-lm/reorder", bm_reorder, false, lm_order::lor_key);
  reg("gpu/dmi-tof-lm/reorder/order-only", bm_reorder, true, lm_order::lor_key);
  reg("gpu/dmi-tof-lm/reorder/tof-key", bm_reorder, false, lm_order::tof_key);

  // TOF sinogram variants (memory order unless /rows).
  sino_variant memory, rows;
  rows.rows = true;
  reg("gpu/dmi-tof-subset/forward/memory-order", bm_subset_variant, false, memory);
  reg("gpu/dmi-tof-subset/forward/rows", bm_subset_variant, false, rows);
  reg("gpu/dmi-tof-subset/back/memory-order", bm_subset_variant, true, memory);
  reg("gpu/dmi-tof-subset/back/rows", bm_subset_variant, true, rows);
  {
    sino_variant v = rows;
    v.vector_atomics = true;
    reg("gpu/dmi-tof-subset/back/rows/vec-atomics", bm_subset_variant, true, v);
    v = memory;
    v.vector_atomics = true;
    reg("gpu/dmi-tof-subset/back/vec-atomics", bm_subset_variant, true, v);
  }
  for (int width : {2, 4}) {
    const std::string w = width == 4 ? "-w4" : "";
    sino_variant v = memory;
    v.stencil_width = width;
    reg("gpu/dmi-tof-subset/back/stencil" + w, bm_subset_variant, true, v);
    v.rows = true;
    reg("gpu/dmi-tof-subset/back/rows/stencil" + w, bm_subset_variant, true, v);
  }
  for (const bool back : {false, true}) {
    const std::string dir = back ? "/back" : "/forward";
    sino_variant v = memory;
    v.exact_erfc = true;
    reg("gpu/dmi-tof-subset" + dir + "/exact-erfc", bm_subset_variant, back, v);
    v.rows = true;
    reg("gpu/dmi-tof-subset" + dir + "/rows/exact-erfc", bm_subset_variant, back, v);
  }
  for (int g : {1, 2, 4, 8}) {
    sino_variant v = memory;
    v.threads_per_lor = g;
    const std::string tpl = "/tpl:" + std::to_string(g);
    reg("gpu/dmi-tof-subset/forward" + tpl, bm_subset_variant, false, v);
    reg("gpu/dmi-tof-subset/back" + tpl, bm_subset_variant, true, v);
  }

  // List-mode variants, per event order.
  const lm_variant base_kernels{};
  lm_variant levers_off, lockstep, exact, lockstep_exact, weight_first;
  levers_off.sample_first = false;
  levers_off.vector_atomics = false;
  levers_off.exact_erfc = true;
  lockstep.lockstep = true;
  exact.exact_erfc = true;
  lockstep_exact = lockstep;
  lockstep_exact.exact_erfc = true;
  weight_first.sample_first = false;
  for (std::size_t i = 0; i < num_variant_orders; ++i) {
    const auto &o = orders[i];
    const std::string n = o.name;
    const bool sorted = o.order != lm_order::random;
    reg(n + "/forward/base", bm_lm_variant, o.order, false, base_kernels);
    reg(n + "/back/base", bm_lm_variant, o.order, true, base_kernels);
    reg(n + "/forward/levers-off", bm_lm_variant, o.order, false, levers_off);
    reg(n + "/back/levers-off", bm_lm_variant, o.order, true, levers_off);
    reg(n + "/forward/lockstep", bm_lm_variant, o.order, false, lockstep);
    reg(n + "/back/lockstep", bm_lm_variant, o.order, true, lockstep);
    reg(n + "/forward/exact-erfc", bm_lm_variant, o.order, false, exact);
    reg(n + "/back/exact-erfc", bm_lm_variant, o.order, true, exact);
    reg(n + "/forward/weight-first", bm_lm_variant, o.order, false, weight_first);
    for (const auto &sv : {std::pair<const char *, lm_variant>{"", base_kernels},
                           {"+lockstep", lockstep},
                           {"+lockstep+exact-erfc", lockstep_exact}}) {
      if (!sorted && sv.second.lockstep)
        continue; // lock-step is for sorted events
      for (int width : {2, 4}) {
        lm_variant v = sv.second;
        v.stencil_width = width;
        reg(n + "/back/stencil" + (width == 4 ? "-w4" : "") + sv.first, bm_lm_variant,
            o.order, true, v);
      }
    }
    if (sorted) {
      reg(n + "/forward/lockstep+exact-erfc", bm_lm_variant, o.order, false,
          lockstep_exact);
      reg(n + "/back/lockstep+exact-erfc", bm_lm_variant, o.order, true, lockstep_exact);
    }
  }
  for (int g : {1, 4}) {
    lm_variant v;
    v.threads_per_lor = g;
    const std::string tpl = "/tpl:" + std::to_string(g);
    for (std::size_t i = 0; i < num_variant_orders; ++i) {
      const std::string n = orders[i].name;
      reg(n + "/forward" + tpl, bm_lm_variant, orders[i].order, false, v);
      reg(n + "/back" + tpl, bm_lm_variant, orders[i].order, true, v);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_gpu_tof", register_all, release_problems);
}
