// Total-body scale on the GPU: the problem `tb-lm` (docs/benchmark-problems.md).
//
// Rows (plain calls only: the library's automatic kernel choice):
//   gpu/tb-lm/{forward,back}/plain           100,000,000 events of the tb
//                                            scanner (uniform crystal pairs
//                                            whose LOR crosses the image, TOF
//                                            bins 14..26), acquisition order
//   gpu/tb-lm-tofsorted/{forward,back}/plain the same events after the
//                                            library's one-time TOF-key reorder
//                                            (declared sorted_events)
//   gpu/tb-lm/reorder                        that reorder (key, sort, gather)
//   gpu/tb-lm/{forward,back}/tpl:N           acquisition order in one pass with N
//                                            threads per event
//                                            (gpu::tuning::threads_per_lor)
//   gpu/tb-lm/{forward,back}/slabs:N[-tpl:G] acquisition order in N passes over
//                                            slabs of the image
//                                            (gpu::tuning::slabs; the plain rows
//                                            take the library's count), with G
//                                            threads per event
//   gpu/tb-lm-tofsorted/{forward,back}/key:sS-aA-tT-xyX-zZ[-ax]
//                                            the same after a reorder whose key
//                                            has S axial slab bits, A angle, T
//                                            tilt, X xy and Z z bits, and with
//                                            "-ax" the principal-axis bit (a sweep of
//                                            listmode_tof_key layouts; the plain
//                                            rows use for_image's choice)
//
// The image is tb's 240 x 240 x 682 grid (39.3 M voxels, 157 MB: three times
// an H200's L2) with the box phantom; events are end points resident on the
// device (2.4 GB). Timing as in bench_gpu_tof: CUDA events on one stream,
// one warm-up call, 5 repetitions, `_median` rows; items_per_second is
// events per second; back projections use values all 1 into an image zeroed
// outside the timed region.
//
// Without a CUDA device the program prints "no CUDA device" and exits with
// 0. Exit code 2 if any benchmark reported an error.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bench_support.hpp"
#include "common/cuda_timer.cuh"
#include "common/gpu_main.cuh"
#include "common/phantom.hpp"
#include "common/tb_problems.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/listmode_gather.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tuning.hpp"
#include "resproj/scanner/tb.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rb = resproj_bench;

/// A key layout's name in benchmark rows: sS-aA-tT-xyX-zZ.
std::string key_name(const gpu::listmode_tof_key &k) {
  return "s" + std::to_string(k.slab_bits) + "-a" + std::to_string(k.angle_bits) + "-t" +
         std::to_string(k.tilt_bits) + "-xy" + std::to_string(k.xy_bits) + "-z" +
         std::to_string(k.z_bits) + (k.axis_bits ? "-ax" : "");
}

/// The tb-lm events resident on the device, in acquisition order and (made
/// on first use) reordered by the library's TOF key.
struct tb_problem {
  rp::image_geometry geometry = rp::scanner::tb_image_geometry();
  rp::tof_params<float> tof = rp::scanner::tb_tof<float>();
  gpu::stream s;
  gpu::device_image<float> image, back_image;
  std::size_t count = rb::tb_lm_events;
  gpu::device_buffer<float> starts, ends, out, ones;
  gpu::device_buffer<std::int16_t> bins;
  gpu::device_buffer<float> sorted_starts, sorted_ends;
  gpu::device_buffer<std::int16_t> sorted_bins;
  bool sorted_ready = false;
  std::string sorted_key; ///< name of the sorted copies' key; empty: the library's choice

  tb_problem() : image(geometry, s), back_image(geometry, s) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto host = rb::box_phantom<float>(geometry);
    image.upload(rp::span<const float>(host.data(), host.size()), s);
    back_image.zero(s);
    const rb::tb_lm_generator gen;
    std::vector<std::int32_t> pairs(2 * count);
    std::vector<std::int16_t> hb(count);
    gen.generate(0, rp::span<std::int32_t>(pairs.data(), pairs.size()),
                 rp::span<std::int16_t>(hb.data(), hb.size()));
    std::vector<float> hs(3 * count), he(3 * count);
    gen.end_points(rp::span<const std::int32_t>(pairs.data(), pairs.size()),
                   rp::span<float>(hs.data(), hs.size()),
                   rp::span<float>(he.data(), he.size()));
    starts = gpu::make_device_buffer(rp::span<const float>(hs.data(), hs.size()), s);
    ends = gpu::make_device_buffer(rp::span<const float>(he.data(), he.size()), s);
    bins = gpu::make_device_buffer(rp::span<const std::int16_t>(hb.data(), hb.size()), s);
    out = gpu::device_buffer<float>(count, s);
    ones = gpu::device_buffer<float>(count, s);
    ones.fill(1.0f, s);
    s.synchronize();
    std::fprintf(
        stderr, "tb-lm: %zu events generated and uploaded in %.2f s\n", count,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  rp::lor_view<const float> lors() const { return {starts.data(), ends.data(), count}; }

  /// The library's one-time reorder of the events (TOF key; the layout
  /// for the image, or `key` when given): permutation, then the gathered
  /// copies, which the returned view declares sorted.
  void reorder(const gpu::listmode_tof_key *key = nullptr) {
    if (!sorted_starts.size()) {
      sorted_starts = gpu::device_buffer<float>(3 * count, s);
      sorted_ends = gpu::device_buffer<float>(3 * count, s);
      sorted_bins = gpu::device_buffer<std::int16_t>(count, s);
    }
    const std::size_t bytes = gpu::listmode_order_workspace_bytes(count);
    gpu::device_buffer<unsigned char> workspace(bytes, s);
    gpu::device_buffer<std::uint32_t> perm(count, s);
    if (key)
      gpu::listmode_order<float>(geometry, lors(), bins.cspan(), tof, perm.span(),
                                 workspace.data(), bytes, s, *key);
    else
      gpu::listmode_order<float>(geometry, lors(), bins.cspan(), tof, perm.span(),
                                 workspace.data(), bytes, s);
    gpu::gather_lors<float>(lors(), perm.cspan(), sorted_starts.span(),
                            sorted_ends.span(), s);
    gpu::gather<std::int16_t>(bins.cspan(), perm.cspan(), sorted_bins.span(), s);
    s.synchronize();
    sorted_ready = true;
    sorted_key = key ? key_name(*key) : std::string();
  }
  rp::lor_view<const float> sorted_lors(const gpu::listmode_tof_key *key = nullptr) {
    if (!sorted_ready || sorted_key != (key ? key_name(*key) : std::string()))
      reorder(key);
    return rp::lor_view<const float>(sorted_starts.data(), sorted_ends.data(), count,
                                     rp::lor_layout::sorted_events());
  }
};

std::unique_ptr<tb_problem> g_tb;
tb_problem &tb() {
  if (!g_tb)
    g_tb = std::make_unique<tb_problem>();
  return *g_tb;
}

void release_problems() noexcept {
  try {
    if (g_tb)
      g_tb->s.synchronize();
  } catch (...) {
  }
  g_tb.reset();
}

void set_counters(benchmark::State &state, std::size_t items) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items));
}

/// `key` (sorted rows only): the key layout of the reorder; none for the
/// library's choice. `lanes`: threads per event, `slabs`: passes over
/// slabs of the image (0: the library's choice).
void bm_plain(benchmark::State &state, bool sorted, bool back,
              std::optional<gpu::listmode_tof_key> key, int lanes, int slabs) {
  rb::guarded(state, [&] {
    tb_problem &p = tb();
    const rp::lor_view<const float> lors =
        sorted ? p.sorted_lors(key ? &*key : nullptr) : p.lors();
    const rp::span<const std::int16_t> bins =
        sorted ? p.sorted_bins.cspan() : p.bins.cspan();
    const rp::op::tof_listmode op(p.tof, bins);
    gpu::tuning opt;
    opt.threads_per_lor = lanes;
    opt.slabs = slabs;
    if (back) {
      const auto image = p.back_image.view();
      rb::time_on_stream(
          state, p.s, [&] { p.back_image.zero(p.s); },
          [&] { gpu::back(op, image, lors, p.ones.cspan(), p.s, opt); });
    } else {
      const auto image = p.image.cview();
      rb::time_on_stream(state, p.s,
                         [&] { gpu::forward(op, image, lors, p.out.span(), p.s, opt); });
    }
    set_counters(state, p.count);
  });
}

void bm_reorder(benchmark::State &state) {
  rb::guarded(state, [&] {
    tb_problem &p = tb();
    rb::time_on_host(
        state, [&] { p.s.synchronize(); }, [&] { p.reorder(); });
    set_counters(state, p.count);
  });
}

void register_all() {
  using benchmark::RegisterBenchmark;
  for (const bool sorted : {false, true})
    for (const bool back : {false, true}) {
      const std::string name = std::string(sorted ? "gpu/tb-lm-tofsorted" : "gpu/tb-lm") +
                               (back ? "/back" : "/forward") + "/plain";
      rb::configure(
          RegisterBenchmark(name.c_str(), bm_plain, sorted, back, std::nullopt, 0, 0));
    }
  rb::configure(RegisterBenchmark("gpu/tb-lm/reorder", bm_reorder));
  // Lanes per event in acquisition order, one pass (the plain rows take the
  // library's choice).
  for (const bool back : {false, true})
    for (const int lanes : {1, 2, 4, 8})
      rb::configure(
          RegisterBenchmark((std::string("gpu/tb-lm") + (back ? "/back" : "/forward") +
                             "/tpl:" + std::to_string(lanes))
                                .c_str(),
                            bm_plain, false, back, std::nullopt, lanes, 1));
  // Passes over slabs of the image in acquisition order.
  for (const bool back : {false, true})
    for (const int slabs : {1, 2, 3, 4})
      for (const int lanes : {0, 4, 8}) {
        if (slabs == 1 && lanes != 0)
          continue; // the tpl rows
        rb::configure(RegisterBenchmark(
            (std::string("gpu/tb-lm") + (back ? "/back" : "/forward") + "/slabs:" +
             std::to_string(slabs) + (lanes ? "-tpl:" + std::to_string(lanes) : ""))
                .c_str(),
            bm_plain, false, back, std::nullopt, lanes, slabs));
      }
  // Key layouts: {slab, angle, tilt, xy, z, axis} bits.
  const int layouts[][6] = {{0, 5, 3, 9, 6, 0}, {4, 5, 3, 9, 6, 0}, {5, 5, 3, 9, 6, 0},
                            {6, 5, 3, 9, 6, 0}, {5, 5, 3, 8, 8, 0}, {6, 5, 3, 8, 8, 0},
                            {7, 5, 3, 8, 8, 0}, {8, 5, 3, 8, 8, 0}, {6, 4, 2, 9, 8, 0},
                            {7, 4, 2, 9, 8, 0}, {6, 6, 3, 8, 7, 0}, {6, 4, 1, 9, 8, 1},
                            {6, 3, 2, 9, 8, 1}, {6, 4, 2, 9, 7, 1}, {6, 4, 2, 8, 8, 1},
                            {5, 4, 1, 9, 8, 1}, {7, 4, 1, 9, 8, 1}};
  for (const auto &l : layouts)
    for (const bool back : {false, true}) {
      gpu::listmode_tof_key key;
      key.slab_bits = l[0];
      key.angle_bits = l[1];
      key.tilt_bits = l[2];
      key.xy_bits = l[3];
      key.z_bits = l[4];
      key.axis_bits = l[5];
      const std::string name = std::string("gpu/tb-lm-tofsorted") +
                               (back ? "/back" : "/forward") + "/key:" + key_name(key);
      rb::configure(RegisterBenchmark(name.c_str(), bm_plain, true, back, key, 0, 0));
    }
}

} // namespace

int main(int argc, char **argv) {
  return rb::gpu_main(argc, argv, "bench_tb", register_all, release_problems);
}
