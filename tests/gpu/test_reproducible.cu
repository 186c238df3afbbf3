// GPU reproducible back projection (gpu::back into a gpu::fixed_point_image)
// for the three operations, float and double: the same bits for repeated
// runs, every split of the LORs into calls (in any order), two streams
// adding into one accumulator, every lane count and block size, declared
// layouts, forced kernel variants (lock-step, vector atomics requested),
// sorted list-mode events and graph replay; agreement with the CPU backend
// and with the plain gpu::back within the contract tolerance; conversions
// that equal the CPU's bit for bit; argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/compare.hpp"
#include "common/expect.hpp"
#include "common/host_views.hpp"
#include "common/reproducible_case.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/core/fixed_point.hpp"
#include "resproj/cpu/fixed_point_image.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/gpu/detail/run_projection.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/fixed_point_image.cuh"
#include "resproj/gpu/projector.cuh"

namespace rp = resproj;
namespace rt = resproj_test;
namespace gpu = resproj::gpu;
namespace cpu = resproj::cpu;

namespace {

template <class T> class GpuReproducible : public GpuTest {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuReproducible, value_types);

template <class T>
gpu::device_buffer<T> upload(const std::vector<T> &v, gpu::stream_ref s) {
  return gpu::make_device_buffer(rp::span<const T>(v.data(), v.size()), s);
}

/// Device copies of a reproducible_case.
template <class T> struct device_case {
  gpu::device_buffer<T> starts, ends, values, sino_values, sigmas, offsets;
  gpu::device_buffer<std::int16_t> bins;
  rp::tof_params<T> tof;
  std::size_t n;

  device_case(const rt::reproducible_case<T> &c, gpu::stream_ref s)
      : starts(upload(c.lors.starts, s)), ends(upload(c.lors.ends, s)),
        values(upload(c.values, s)), sino_values(upload(c.sino_values, s)),
        sigmas(upload(c.sigmas, s)), offsets(upload(c.offsets, s)),
        bins(upload(c.bins, s)), tof(c.tof), n(c.count()) {
    tof.sigmas = sigmas.cspan();
    tof.center_offsets = offsets.cspan();
    s.synchronize();
  }
  rp::lor_view<const T> lors(rp::lor_layout layout = {}) const {
    return rp::lor_view<const T>(starts.data(), ends.data(), n, layout);
  }
  /// `f(id, operation, values)` with the device arrays.
  template <class F> void for_each(F &&f) const {
    f(rt::operation_id::non_tof, rp::op::non_tof{}, values.cspan());
    f(rt::operation_id::tof_sinogram, rp::op::tof_sinogram<T>(tof), sino_values.cspan());
    f(rt::operation_id::tof_listmode, rp::op::tof_listmode<T>(tof, bins.cspan()),
      values.cspan());
  }
};

using rt::chunk_list;
using rt::chunks_of;
using rt::contract_exponent;

/// One plain reproducible call per piece of `chunks`, on `s`.
template <class T, class Op>
void back_pieces(const Op &o, gpu::fixed_point_image<T> &acc, rp::lor_view<const T> lors,
                 rp::span<const T> values, const chunk_list &chunks, gpu::stream_ref s,
                 const gpu::tuning &t = {}) {
  const std::size_t stride = o.values_per_lor();
  for (const auto &piece : chunks)
    gpu::back(rp::detail::operation_part(o, piece.first, piece.second), acc,
              lors.subview(piece.first, piece.second),
              values.subspan(piece.first * stride, piece.second * stride), s, t);
}

template <class T>
std::vector<std::int64_t> raw_of(const gpu::fixed_point_image<T> &acc,
                                 gpu::stream_ref s) {
  std::vector<std::int64_t> raw(acc.size());
  acc.download(rp::span<std::int64_t>(raw.data(), raw.size()), s);
  s.synchronize();
  return raw;
}

/// A new accumulator after `pieces` of the call, its raw integers.
template <class T, class Op>
std::vector<std::int64_t>
gpu_fixed(const rp::image_geometry &g, const Op &o, rp::lor_view<const T> lors,
          rp::span<const T> values, const chunk_list &chunks, gpu::stream_ref s,
          const gpu::tuning &t = {}, int e = rp::fixed_point_default_exponent) {
  gpu::fixed_point_image<T> acc(g, s, e);
  back_pieces(o, acc, lors, values, chunks, s, t);
  return raw_of(acc, s);
}

template <class T>
std::vector<T> cpu_image_of(const rp::image_geometry &g,
                            const std::vector<std::int64_t> &raw, int e) {
  cpu::fixed_point_image<T> acc(g, e);
  std::copy(raw.begin(), raw.end(), acc.data());
  std::vector<T> out(raw.size());
  acc.to_image(rp::image_view<T>(out.data(), g));
  return out;
}

TYPED_TEST(GpuReproducible, SameBitsForRepeatsChunksAndTunings) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  gpu::stream s;
  const device_case<T> d(c, s);
  const std::size_t n = d.n;
  d.for_each([&](rt::operation_id id, const auto &o, rp::span<const T> values) {
    const std::string name = rt::name_of(id);
    const auto whole = chunks_of(n, n);
    const auto reference = gpu_fixed(c.geometry, o, d.lors(), values, whole, s);
    std::size_t nonzero = 0;
    for (std::int64_t q : reference)
      nonzero += q != 0;
    EXPECT_GT(nonzero, reference.size() / 2) << name;
    for (int repeat = 0; repeat < 3; ++repeat)
      EXPECT_TRUE(rt::bitwise_equal(gpu_fixed(c.geometry, o, d.lors(), values, whole, s),
                                    reference))
          << name << ", repeat " << repeat;
    const struct {
      std::size_t size;
      std::uint32_t shuffle;
    } splits[] = {{1, 0}, {7, 21}, {100, 22}, {1023, 0}, {2500, 23}};
    for (const auto &split : splits)
      EXPECT_TRUE(rt::bitwise_equal(gpu_fixed(c.geometry, o, d.lors(), values,
                                              chunks_of(n, split.size, split.shuffle), s),
                                    reference))
          << name << ", chunks of " << split.size << ", shuffled " << split.shuffle;
    for (const int lanes : {1, 2, 4, 8, 16, 32})
      for (const int block : {32, 96, 256}) {
        gpu::tuning t;
        t.threads_per_lor = lanes;
        t.block_size = block;
        EXPECT_TRUE(rt::bitwise_equal(
            gpu_fixed(c.geometry, o, d.lors(), values, whole, s, t), reference))
            << name << ", " << lanes << " lanes, blocks of " << block;
      }
    // Slab passes (list-mode) add the same integers in another order.
    for (const int slabs : {2, 5}) {
      gpu::tuning t;
      t.slabs = slabs;
      EXPECT_TRUE(rt::bitwise_equal(
          gpu_fixed(c.geometry, o, d.lors(), values, whole, s, t), reference))
          << name << ", " << slabs << " slab passes";
    }
    // Declared layouts change the thread mapping (lanes along planes,
    // lock-step candidates), never the bits.
    for (const rp::lor_layout layout :
         {rp::lor_layout::sinogram(10, 40), rp::lor_layout::sorted_events()})
      EXPECT_TRUE(rt::bitwise_equal(
          gpu_fixed(c.geometry, o, d.lors(layout), values, whole, s), reference))
          << name << ", declared layout " << int(layout.kind);
    // Forced kernel variants: lock-step warps, 64-bit offsets, vector
    // atomics requested (not used by the reproducible path).
    const int device = gpu::current_device();
    for (int variant = 0; variant < 3; ++variant) {
      gpu::kernel_choice k = gpu::detail::choice_for<T, std::decay_t<decltype(o)>>(
          gpu::direction::back, d.lors(), device, {});
      k.lockstep = variant == 0 && id == rt::operation_id::tof_listmode;
      if (k.lockstep)
        k.threads_per_lor = 1;
      k.wide_index = variant == 1;
      k.vector_atomics = variant == 2;
      gpu::fixed_point_image<T> acc(c.geometry, s);
      gpu::detail::run_back(o, acc, d.lors(), values, k, s);
      EXPECT_TRUE(rt::bitwise_equal(raw_of(acc, s), reference))
          << name << ", forced variant " << variant;
    }
  });
}

// Whole sinograms go by transaxial bins in the reproducible back projection
// too: the same integers as the per-LOR kernels, summed exactly, so the same
// bits for the plain call, the per-LOR kernel, repeats and calls of fewer
// planes (which run per LOR).
TYPED_TEST(GpuReproducible, TransaxialBinsGiveTheSameBits) {
  using T = TypeParam;
  const auto g = rp::image_geometry::centred({40, 36, 12}, {2.0, 2.0, 3.0});
  std::vector<T> starts, ends;
  resproj_test_gpu::cylinder_lors<T>(g, starts, ends, 16); // 256 ring pairs
  const std::size_t n = starts.size() / 3, planes = 256, per_plane = n / planes;
  auto values = resproj_test_gpu::random_values<T>(n, 31);
  for (std::size_t i = 0; i < n; i += 5)
    values[i] = T(0);
  gpu::stream s;
  const auto d_starts = upload(starts, s), d_ends = upload(ends, s),
             d_values = upload(values, s);
  const auto lors = rp::lor_view<const T>(d_starts.data(), d_ends.data(), n)
                        .with_layout(rp::lor_layout::sinogram(int(per_plane), 1));
  const rp::op::non_tof o;
  gpu::kernel_choice k = gpu::detail::choice_for<T, rp::op::non_tof>(
      gpu::direction::back, lors, gpu::current_device(), {});
  ASSERT_TRUE(k.transaxial_bins);
  k.transaxial_bins = false; // the per-LOR kernel
  gpu::fixed_point_image<T> acc(g, s);
  gpu::detail::run_back(o, acc, lors.normalized(), d_values.cspan(), k, s);
  const auto reference = raw_of(acc, s);
  std::size_t nonzero = 0;
  for (std::int64_t q : reference)
    nonzero += q != 0;
  EXPECT_GT(nonzero, reference.size() / 2);
  for (int repeat = 0; repeat < 2; ++repeat)
    EXPECT_TRUE(rt::bitwise_equal(
        gpu_fixed(g, o, lors, d_values.cspan(), chunks_of(n, n), s), reference))
        << "by transaxial bins, repeat " << repeat;
  EXPECT_TRUE(rt::bitwise_equal(
      gpu_fixed(g, o, lors, d_values.cspan(), chunks_of(n, 128 * per_plane), s),
      reference))
      << "two calls of 128 planes";
}

TYPED_TEST(GpuReproducible, TwoStreamsAddIntoOneAccumulator) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  gpu::stream s1, s2;
  const device_case<T> d(c, s1);
  d.for_each([&](rt::operation_id id, const auto &o, rp::span<const T> values) {
    const auto reference =
        gpu_fixed(c.geometry, o, d.lors(), values, chunks_of(d.n, d.n), s1);
    gpu::fixed_point_image<T> acc(c.geometry, s1);
    gpu::event ready, done;
    ready.record(s1); // zeroed
    ready.make_wait(s2);
    const auto pieces = chunks_of(d.n, 300, 31);
    for (std::size_t k = 0; k < pieces.size(); ++k)
      back_pieces(o, acc, d.lors(), values, {pieces[k]}, k % 2 ? s2 : s1);
    done.record(s2);
    done.make_wait(s1);
    EXPECT_TRUE(rt::bitwise_equal(raw_of(acc, s1), reference)) << rt::name_of(id);
  });
}

TYPED_TEST(GpuReproducible, GraphReplayAddsExactly) {
  using T = TypeParam;
  const rt::reproducible_case<T> c(1500, 500);
  gpu::stream s;
  const device_case<T> d(c, s);
  d.for_each([&](rt::operation_id id, const auto &o, rp::span<const T> values) {
    const auto once = gpu_fixed(c.geometry, o, d.lors(), values, chunks_of(d.n, d.n), s);
    gpu::fixed_point_image<T> acc(c.geometry, s);
    s.synchronize();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal),
              cudaSuccess);
    back_pieces(o, acc, d.lors(), values, chunks_of(d.n, 700), s);
    ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 3; ++replay)
      ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
    const auto raw = raw_of(acc, s);
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    for (std::size_t v = 0; v < raw.size(); ++v)
      ASSERT_EQ(raw[v], 3 * once[v]) << rt::name_of(id) << ", voxel " << v;
  });
}

TYPED_TEST(GpuReproducible, MatchesCpuAndPlainBack) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  gpu::stream s;
  const device_case<T> d(c, s);
  const int e = contract_exponent<T>();
  const std::size_t nv = std::size_t(c.geometry.num_voxels());
  std::vector<std::vector<T>> cpu_images;
  c.for_each([&](rt::operation_id, const auto &o, rp::span<const T> values) {
    cpu::fixed_point_image<T> acc(c.geometry, e);
    cpu::back(o, acc, c.lor_view(), values);
    cpu_images.emplace_back(nv);
    acc.to_image(rp::image_view<T>(cpu_images.back().data(), c.geometry));
  });
  d.for_each([&](rt::operation_id id, const auto &o, rp::span<const T> values) {
    const std::string name = rt::name_of(id);
    gpu::tuning t;
    t.exact_erfc = true; // the CPU's erfc (the fast one is within 3e-6 too)
    const auto raw =
        gpu_fixed(c.geometry, o, d.lors(), values, chunks_of(d.n, 900), s, t, e);
    const auto fixed = cpu_image_of<T>(c.geometry, raw, e);
    const double vs_cpu = rt::rel_norm_diff(fixed, cpu_images[std::size_t(id)]);
    EXPECT_LT(vs_cpu, rt::bounds<T>::same_image) << name << " vs CPU";

    gpu::device_image<T> plain(c.geometry, s);
    plain.zero(s);
    gpu::back(o, plain.view(), d.lors(), values, s, t);
    const auto plain_host = download(plain, s);
    const double vs_plain = rt::rel_norm_diff(fixed, plain_host);
    EXPECT_LT(vs_plain, rt::bounds<T>::same_image) << name << " vs plain gpu::back";
    char text[128];
    std::snprintf(text, sizeof text,
                  ": relative difference %.3g to the CPU, %.3g to plain", vs_cpu,
                  vs_plain);
    rt::note(name + text);
  });
}

TYPED_TEST(GpuReproducible, SortedListModeEvents) {
  using T = TypeParam;
  // Enough events for the lock-step kernel of the plain call on any GPU.
  rt::reproducible_case<T> c(90000, 30000, 17);
  const double kPi = 3.14159265358979323846;
  const std::size_t n = c.count();
  // Sort by direction cell, then TOF bin, then midpoint: neighbouring
  // events walk neighbouring voxels.
  std::vector<std::tuple<int, int, int, double, std::size_t>> keys;
  for (std::size_t i = 0; i < n; ++i) {
    const auto a = c.lors.start(i), b = c.lors.end(i);
    const double dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    const double len = std::sqrt(dx * dx + dy * dy + dz * dz);
    const int angle = int(std::floor((std::atan2(dy, dx) + kPi) / (2 * kPi) * 32));
    const int tilt = int(std::floor((dz / (len > 0 ? len : 1) + 1) * 4));
    keys.emplace_back(angle, tilt, int(c.bins[i]), 0.5 * (a[0] + b[0]), i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k)
    order[k] = std::get<4>(keys[k]);
  c.reorder(order);

  gpu::stream s;
  const device_case<T> d(c, s);
  const rp::op::tof_listmode<T> o(d.tof, d.bins.cspan());
  const auto values = d.values.cspan();
  const auto sorted = d.lors(rp::lor_layout::sorted_events());
  const auto choice = gpu::detail::choice_for<T, rp::op::tof_listmode<T>>(
      gpu::direction::back, sorted, gpu::current_device(), {});
  EXPECT_TRUE(choice.lockstep) << "the plain call should run lock-step warps";
  const auto reference = gpu_fixed(c.geometry, o, sorted, values, chunks_of(n, n), s);
  EXPECT_TRUE(rt::bitwise_equal(
      gpu_fixed(c.geometry, o, d.lors(), values, chunks_of(n, n), s), reference))
      << "undeclared order";
  EXPECT_TRUE(rt::bitwise_equal(
      gpu_fixed(c.geometry, o, sorted, values, chunks_of(n, 10000, 41), s), reference))
      << "chunks";
  gpu::tuning t;
  t.threads_per_lor = 4;
  EXPECT_TRUE(rt::bitwise_equal(
      gpu_fixed(c.geometry, o, sorted, values, chunks_of(n, n), s, t), reference))
      << "4 lanes";

  const int e = contract_exponent<T>();
  gpu::tuning exact;
  exact.exact_erfc = true;
  const auto fixed = cpu_image_of<T>(
      c.geometry, gpu_fixed(c.geometry, o, sorted, values, chunks_of(n, n), s, exact, e),
      e);
  cpu::fixed_point_image<T> host_acc(c.geometry, e);
  cpu::back(rp::op::tof_listmode<T>(c.tof, rt::cspan_of(c.bins)), host_acc, c.lor_view(),
            rt::cspan_of(c.values));
  std::vector<T> host(fixed.size());
  host_acc.to_image(rp::image_view<T>(host.data(), c.geometry));
  EXPECT_LT(rt::rel_norm_diff(fixed, host), rt::bounds<T>::same_image);
}

TYPED_TEST(GpuReproducible, ConversionsMatchCpuBitForBit) {
  using T = TypeParam;
  const rt::reproducible_case<T> c(600, 200);
  gpu::stream s;
  const device_case<T> d(c, s);
  for (const int e : {16, 32, 48}) {
    gpu::fixed_point_image<T> acc(c.geometry, s, e);
    EXPECT_EQ(acc.exponent(), e);
    EXPECT_TRUE(acc.geometry() == c.geometry);
    EXPECT_EQ(acc.device(), gpu::current_device());
    gpu::back(rp::op::non_tof{}, acc, d.lors(), d.values.cspan(), s);
    const auto raw = raw_of(acc, s);
    const auto host = cpu_image_of<T>(c.geometry, raw, e);
    gpu::device_image<T> out(c.geometry, s), sum(c.geometry, s);
    out.fill(T(-5), s);
    acc.to_image(out.view(), s);
    const auto start = rt::random_values<T>(host.size(), 5, 1.0, 2.0);
    sum.upload(rp::span<const T>(start.data(), start.size()), s);
    acc.add_to(sum.view(), s);
    EXPECT_TRUE(rt::bitwise_equal(download(out, s), host)) << "e = " << e;
    std::vector<T> host_sum = start;
    cpu::fixed_point_image<T> h(c.geometry, e);
    std::copy(raw.begin(), raw.end(), h.data());
    h.add_to(rp::image_view<T>(host_sum.data(), c.geometry));
    EXPECT_TRUE(rt::bitwise_equal(download(sum, s), host_sum)) << "e = " << e;
    acc.clear(s);
    for (std::int64_t q : raw_of(acc, s))
      ASSERT_EQ(q, 0);
  }
}

TYPED_TEST(GpuReproducible, ChecksArguments) {
  using T = TypeParam;
  const rt::reproducible_case<T> c(200, 0);
  gpu::stream s;
  const device_case<T> d(c, s);
  for (const int e : {15, 49})
    EXPECT_TRUE(rt::throws_naming(
        [&] { gpu::fixed_point_image<T> acc(c.geometry, s, e); }, "exponent"));
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        gpu::fixed_point_image<T> acc(c.geometry, gpu::stream_ref(cudaStreamLegacy));
      },
      "stream"));
  gpu::fixed_point_image<T> acc(c.geometry, s);
  const auto other = rp::image_geometry::centred({24, 20, 13}, {2.0, 2.5, 4.0});
  gpu::device_image<T> wrong(other, s), right(c.geometry, s);
  EXPECT_TRUE(rt::throws_naming([&] { acc.add_to(wrong.view(), s); }, "image.geometry"));
  EXPECT_TRUE(rt::throws_naming([&] { acc.to_image(wrong.view(), s); }, "out.geometry"));
  std::vector<T> host_image(std::size_t(c.geometry.num_voxels()));
  const gpu::device_image_view<T> on_host(host_image.data(), c.geometry, acc.device());
  EXPECT_TRUE(rt::throws_naming([&] { acc.add_to(on_host, s); }, "image.data"));
  EXPECT_TRUE(rt::throws_naming(
      [&] { acc.to_image(right.view(), gpu::stream_ref(cudaStreamLegacy)); }, "stream"));

  // The plain call's contract and residency checks.
  const std::vector<T> host_values(c.values);
  EXPECT_TRUE(rt::throws_naming(
      [&] { gpu::back(rp::op::non_tof{}, acc, d.lors(), rt::cspan_of(host_values), s); },
      "values"));
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        gpu::back(rp::op::non_tof{}, acc, d.lors(), d.values.cspan().subspan(0, d.n - 1),
                  s);
      },
      "values"));
  EXPECT_TRUE(rt::throws_naming(
      [&] { gpu::back(rp::op::non_tof{}, acc, c.lor_view(), d.values.cspan(), s); },
      "lors.starts"));
  gpu::tuning bad;
  bad.block_size = 100;
  EXPECT_TRUE(rt::throws_naming(
      [&] { gpu::back(rp::op::non_tof{}, acc, d.lors(), d.values.cspan(), s, bad); },
      "tuning.block_size"));
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        gpu::back(rp::op::non_tof{}, acc, d.lors(), d.values.cspan(),
                  gpu::stream_ref(cudaStreamLegacy));
      },
      "stream"));
  for (std::int64_t q : raw_of(acc, s))
    ASSERT_EQ(q, 0) << "a rejected call wrote";
}

} // namespace
