// CPU reproducible back projection (cpu::back into a cpu::fixed_point_image)
// for the three operations, float and double: the same bits for repeated
// runs, every thread count and accumulation strategy, and any split of the
// LORs into calls in any order; the documented error bound against an
// exact sum of the same contributions; the contract tolerance against the
// plain cpu::back; add_to / to_image / clear; argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/compare.hpp"
#include "common/expect.hpp"
#include "common/host_views.hpp"
#include "common/reproducible_case.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/fixed_point.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/cpu/fixed_point_image.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/math/image_grid.hpp"

namespace rt = resproj_test;
namespace cpu = resproj::cpu;
namespace op = resproj::op;

namespace {

template <class T> class CpuReproducible : public ::testing::Test {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CpuReproducible, value_types);

using rt::chunk_list;
using rt::chunks_of;
using rt::contract_exponent;

/// Reproducible back projection of `values` in the pieces `chunks`, one
/// call each, into a new accumulator; its raw integers.
template <class T, class Op>
std::vector<std::int64_t>
back_fixed(const rt::reproducible_case<T> &c, const Op &o, resproj::span<const T> values,
           const chunk_list &chunks, const cpu::options &opt,
           int exponent = resproj::fixed_point_default_exponent) {
  cpu::fixed_point_image<T> acc(c.geometry, exponent);
  const std::size_t stride = o.values_per_lor();
  for (const auto &piece : chunks)
    cpu::back(resproj::detail::operation_part(o, piece.first, piece.second), acc,
              c.lor_view().subview(piece.first, piece.second),
              values.subspan(piece.first * stride, piece.second * stride), opt);
  const auto raw = acc.values();
  return std::vector<std::int64_t>(raw.begin(), raw.end());
}

template <class T>
std::vector<T> image_of(const rt::reproducible_case<T> &c,
                        const std::vector<std::int64_t> &raw, int exponent) {
  cpu::fixed_point_image<T> acc(c.geometry, exponent);
  std::copy(raw.begin(), raw.end(), acc.data());
  std::vector<T> out(raw.size(), T(-7));
  acc.to_image(resproj::image_view<T>(out.data(), c.geometry));
  return out;
}

cpu::options with(int threads, cpu::back_accumulation a) {
  cpu::options o;
  o.num_threads = threads;
  o.accumulation = a;
  return o;
}

TYPED_TEST(CpuReproducible, SameBitsForThreadsStrategiesAndRepeats) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  const chunk_list whole = chunks_of(c.count(), c.count());
  c.for_each([&](rt::operation_id id, const auto &o, resproj::span<const T> values) {
    const auto reference = back_fixed(c, o, values, whole, with(1, {}));
    std::size_t nonzero = 0;
    for (std::int64_t q : reference)
      nonzero += q != 0;
    EXPECT_GT(nonzero, reference.size() / 2) << rt::name_of(id);
    for (const int threads : {1, 2, 4})
      for (const auto strategy :
           {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images,
            cpu::back_accumulation::automatic})
        for (int repeat = 0; repeat < 2; ++repeat)
          EXPECT_TRUE(rt::bitwise_equal(
              back_fixed(c, o, values, whole, with(threads, strategy)), reference))
              << rt::name_of(id) << ", " << threads << " threads, strategy "
              << int(strategy) << ", repeat " << repeat;
  });
}

TYPED_TEST(CpuReproducible, SameBitsForAnyChunking) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  const std::size_t n = c.count();
  c.for_each([&](rt::operation_id id, const auto &o, resproj::span<const T> values) {
    const auto reference = back_fixed(c, o, values, chunks_of(n, n), with(2, {}));
    const auto image = image_of(c, reference, resproj::fixed_point_default_exponent);
    const struct {
      std::size_t size;
      std::uint32_t shuffle;
    } splits[] = {{1, 0}, {7, 0}, {100, 11}, {1023, 0}, {1500, 12}, {2500, 13}};
    for (const auto &split : splits)
      for (const int threads : {1, 4}) {
        const auto raw = back_fixed(c, o, values, chunks_of(n, split.size, split.shuffle),
                                    with(threads, cpu::back_accumulation::automatic));
        EXPECT_TRUE(rt::bitwise_equal(raw, reference))
            << rt::name_of(id) << ", chunks of " << split.size << ", shuffled "
            << split.shuffle << ", " << threads << " threads";
        EXPECT_TRUE(rt::bitwise_equal(
            image_of(c, raw, resproj::fixed_point_default_exponent), image));
      }
  });
}

/// Exact sum (long double) and count of the contributions `cpu::back` makes
/// to every voxel: the same per-LOR body, another adder.
template <class T> struct exact_add {
  const T *base;
  long double *sum;
  std::int64_t *count;
  void operator()(T *voxel, T amount) const {
    const auto k = voxel - base;
    sum[k] += static_cast<long double>(amount);
    ++count[k];
  }
};

TYPED_TEST(CpuReproducible, ErrorWithinDocumentedBound) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  const std::size_t nv = std::size_t(c.geometry.num_voxels());
  const double unit =
      std::is_same<T, float>::value ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  c.for_each([&](rt::operation_id id, const auto &o, resproj::span<const T> values) {
    using Op = std::decay_t<decltype(o)>;
    std::vector<long double> exact(nv, 0.0L);
    std::vector<std::int64_t> count(nv, 0);
    std::vector<T> dummy(nv);
    const auto lors = c.lor_view().normalized();
    const cpu::detail::back_lor_body<T, Op, decltype(lors)> body{
        o, resproj::math::image_grid<T>::from(c.geometry), lors, values.data()};
    const exact_add<T> add{dummy.data(), exact.data(), count.data()};
    for (std::size_t i = 0; i < lors.count; ++i)
      body(std::int64_t(i), dummy.data(), add);
    for (const int e : {16, 20, 32, std::is_same<T, float>::value ? 40 : 48}) {
      const auto image = image_of(
          c, back_fixed(c, o, values, chunks_of(c.count(), 999), with(2, {}), e), e);
      std::size_t bad = 0;
      double worst = 0;
      for (std::size_t v = 0; v < nv; ++v) {
        const double ref = double(exact[v]);
        const double rounding = double(count[v]) * std::ldexp(1.0, -(e + 1));
        const double bound = rounding + (std::fabs(ref) + rounding) * unit +
                             1e-15 * (std::fabs(ref) + 1.0);
        const double err = std::fabs(double(image[v]) - ref);
        worst = std::max(worst, err / (bound > 0 ? bound : 1.0));
        bad += !(err <= bound);
      }
      EXPECT_EQ(bad, 0u) << rt::name_of(id) << ", e = " << e << ": worst error " << worst
                         << " x the bound";
      rt::note(rt::name_of(id) + ", e = " + std::to_string(e) + ": worst error " +
               std::to_string(worst) + " x the bound");
    }
  });
}

TYPED_TEST(CpuReproducible, WithinContractOfPlainBack) {
  using T = TypeParam;
  const rt::reproducible_case<T> c;
  const std::size_t nv = std::size_t(c.geometry.num_voxels());
  c.for_each([&](rt::operation_id id, const auto &o, resproj::span<const T> values) {
    std::vector<T> plain(nv, T(0));
    cpu::back(o, resproj::image_view<T>(plain.data(), c.geometry), c.lor_view(), values);
    const int e = contract_exponent<T>();
    const auto fixed = image_of(
        c, back_fixed(c, o, values, chunks_of(c.count(), 1000), with(2, {}), e), e);
    const double diff = rt::rel_norm_diff(fixed, plain);
    EXPECT_LT(diff, rt::bounds<T>::same_image) << rt::name_of(id);
    char text[96];
    std::snprintf(text, sizeof text, ": relative difference to the plain back %.3g",
                  diff);
    rt::note(rt::name_of(id) + text);
  });
}

TYPED_TEST(CpuReproducible, AddToToImageAndClear) {
  using T = TypeParam;
  const rt::reproducible_case<T> c(600, 200);
  const std::size_t nv = std::size_t(c.geometry.num_voxels());
  cpu::fixed_point_image<T> acc(c.geometry);
  EXPECT_EQ(acc.exponent(), 32);
  EXPECT_EQ(acc.size(), nv);
  EXPECT_TRUE(acc.geometry() == c.geometry);
  cpu::back(op::non_tof{}, acc, c.lor_view(), rt::cspan_of(c.values));
  std::vector<T> converted(nv, T(-3));
  acc.to_image(resproj::image_view<T>(converted.data(), c.geometry));
  const auto start = rt::random_values<T>(nv, 91, 1.0, 2.0);
  std::vector<T> sum = start;
  acc.add_to(resproj::image_view<T>(sum.data(), c.geometry));
  const T inverse = T(std::ldexp(1.0, -32));
  for (std::size_t v = 0; v < nv; ++v) {
    ASSERT_EQ(converted[v], T(acc.data()[v]) * inverse) << v;
    ASSERT_EQ(sum[v], start[v] + converted[v]) << v;
  }
  acc.clear();
  for (std::int64_t q : acc.values())
    ASSERT_EQ(q, 0);
  // A call over no LORs changes nothing, null pointers included.
  cpu::back(op::non_tof{}, acc, resproj::lor_view<const T>(nullptr, nullptr, 0),
            resproj::span<const T>());
  for (std::int64_t q : acc.values())
    ASSERT_EQ(q, 0);
  EXPECT_DOUBLE_EQ(resproj::fixed_point_resolution(32), std::ldexp(1.0, -32));
  EXPECT_DOUBLE_EQ(resproj::fixed_point_range(32), std::ldexp(1.0, 31));
}

TYPED_TEST(CpuReproducible, ChecksArguments) {
  using T = TypeParam;
  const rt::reproducible_case<T> c(100, 0);
  for (const int e : {15, 49, -1, 64})
    EXPECT_TRUE(rt::throws_naming([&] { cpu::fixed_point_image<T> acc(c.geometry, e); },
                                  "exponent"));
  EXPECT_NO_THROW(cpu::fixed_point_image<T>(c.geometry, 16));
  EXPECT_NO_THROW(cpu::fixed_point_image<T>(c.geometry, 48));

  cpu::fixed_point_image<T> acc(c.geometry);
  const auto other = resproj::image_geometry::centred({24, 20, 13}, {2.0, 2.5, 4.0});
  const auto shifted = resproj::image_geometry(
      c.geometry.shape(), c.geometry.voxel_size(),
      {c.geometry.origin()[0] + 0.5, c.geometry.origin()[1], c.geometry.origin()[2]});
  for (const auto &g : {other, shifted}) {
    std::vector<T> img(std::size_t(g.num_voxels()));
    EXPECT_TRUE(rt::throws_naming(
        [&] { acc.add_to(resproj::image_view<T>(img.data(), g)); }, "image.geometry"));
    EXPECT_TRUE(rt::throws_naming(
        [&] { acc.to_image(resproj::image_view<T>(img.data(), g)); }, "out.geometry"));
  }
  EXPECT_TRUE(rt::throws_naming(
      [&] { acc.add_to(resproj::image_view<T>(nullptr, c.geometry)); }, "image.data"));
  EXPECT_TRUE(rt::throws_naming(
      [&] { acc.to_image(resproj::image_view<T>(nullptr, c.geometry)); }, "out.data"));

  // The projection contract, as for the plain call.
  const std::vector<T> short_values(c.count() - 1, T(1));
  EXPECT_TRUE(rt::throws_naming(
      [&] { cpu::back(op::non_tof{}, acc, c.lor_view(), rt::cspan_of(short_values)); },
      "values"));
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        cpu::back(op::non_tof{}, acc,
                  resproj::lor_view<const T>(nullptr, c.lors.ends.data(), c.count()),
                  rt::cspan_of(c.values));
      },
      "lors.starts"));
  auto bad_tof = c.tof;
  bad_tof.bin_width = T(-1);
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        cpu::back(op::tof_listmode<T>(bad_tof, rt::cspan_of(c.bins)), acc, c.lor_view(),
                  rt::cspan_of(c.values));
      },
      "tof.bin_width"));
  std::vector<T> bad_sigmas = c.sigmas;
  bad_sigmas[5] = T(0);
  auto bad_per_lor = c.tof;
  bad_per_lor.sigmas = rt::cspan_of(bad_sigmas);
  EXPECT_TRUE(rt::throws_naming(
      [&] {
        cpu::back(op::tof_sinogram<T>(bad_per_lor), acc, c.lor_view(),
                  rt::cspan_of(c.sino_values));
      },
      "tof.sigmas"));
  for (std::int64_t q : acc.values())
    ASSERT_EQ(q, 0) << "a rejected call wrote";
}

} // namespace
