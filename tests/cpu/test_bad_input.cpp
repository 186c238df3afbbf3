// Rejected input of the CPU projectors: null pointers, outputs and values
// too small, bad operations. Each throws resproj::invalid_argument naming the
// argument ("image.data", "lors.starts", "lors.ends", "out", "values",
// "bins", "tof.*") before anything is written (buffers bitwise untouched),
// and the projector works normally afterwards. The operation's checks are
// the shared contract check (detail::check_projection). A call with zero
// LORs and null pointers is fine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/cpu/projector.hpp"

namespace rt = resproj_test;
namespace cpu = resproj::cpu;
namespace op = resproj::op;

namespace {

template <class T> class BadInput : public ::testing::Test {
protected:
  rt::grid g = rt::grid::centred({8, 7, 6}, {2.0, 1.0, 3.0});
  rt::lor_set<T> lors = rt::outside_lors<T>(g, 300, 9);
  std::vector<T> image = rt::random_values<T>(std::size_t(g.num_voxels()), 10, 0.5, 1.5);
  std::vector<T> values = rt::random_values<T>(lors.size(), 11);
  static constexpr T sentinel() { return T(-7.25); }

  /// The forward projection a valid call gives.
  std::vector<T> good_forward() const {
    std::vector<T> out(lors.size());
    cpu::forward(op::non_tof{}, rt::cimage_of(image, g), rt::view_of(lors),
                 rt::span_of(out));
    return out;
  }
  std::vector<T> good_back() const {
    std::vector<T> img(image.size(), T(0));
    cpu::back(op::non_tof{}, rt::image_of(img, g), rt::view_of(lors),
              rt::cspan_of(values));
    return img;
  }
};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BadInput, value_types);

using resproj_test::bitwise_equal;
using resproj_test::throws_naming;

TYPED_TEST(BadInput, ForwardRejectsBadArgumentsBeforeWriting) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto &lors = this->lors;
  const std::size_t n = lors.size();
  const std::vector<T> untouched(n + 8, this->sentinel());
  std::vector<T> out = untouched;
  const auto image = rt::cimage_of(this->image, g);
  const auto view = rt::view_of(lors);
  const resproj::span<T> full(out.data(), n);

  EXPECT_TRUE(throws_naming(
      [&] {
        cpu::forward(op::non_tof{},
                     resproj::image_view<const T>(nullptr, rt::geometry_of(g)), view,
                     full);
      },
      "image.data"));
  EXPECT_TRUE(throws_naming(
      [&] {
        cpu::forward(op::non_tof{}, image,
                     resproj::lor_view<const T>(nullptr, lors.ends.data(), n), full);
      },
      "lors.starts"));
  EXPECT_TRUE(throws_naming(
      [&] {
        cpu::forward(op::non_tof{}, image,
                     resproj::lor_view<const T>(lors.starts.data(), nullptr, n), full);
      },
      "lors.ends"));
  EXPECT_TRUE(throws_naming(
      [&] {
        cpu::forward(op::non_tof{}, image, view, resproj::span<T>(out.data(), n - 1));
      },
      "out"));
  EXPECT_TRUE(throws_naming(
      [&] { cpu::forward(op::non_tof{}, image, view, resproj::span<T>()); }, "out"));
  EXPECT_TRUE(throws_naming(
      [&] { cpu::forward(op::non_tof{}, image, view, resproj::span<T>(nullptr, n)); },
      "out"));
  EXPECT_TRUE(bitwise_equal(out, untouched)) << "a rejected call wrote to the output";

  // A valid call afterwards works, and writes exactly n values.
  cpu::forward(op::non_tof{}, image, view, full);
  const auto expected = this->good_forward();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin()));
  for (std::size_t i = n; i < out.size(); ++i)
    EXPECT_EQ(out[i], this->sentinel()) << "wrote past the LOR count at " << i;
}

TYPED_TEST(BadInput, BackRejectsBadArgumentsBeforeWriting) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto &lors = this->lors;
  const std::size_t n = lors.size();
  const std::vector<T> untouched(this->image.size(), this->sentinel());
  std::vector<T> img = untouched;
  const auto image = rt::image_of(img, g);
  const auto view = rt::view_of(lors);
  const auto vals = rt::cspan_of(this->values);

  for (auto acc :
       {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images}) {
    const cpu::options opt{acc, 2};
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, resproj::image_view<T>(nullptr, rt::geometry_of(g)),
                    view, vals, opt);
        },
        "image.data"));
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, image,
                    resproj::lor_view<const T>(nullptr, lors.ends.data(), n), vals, opt);
        },
        "lors.starts"));
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, image,
                    resproj::lor_view<const T>(lors.starts.data(), nullptr, n), vals,
                    opt);
        },
        "lors.ends"));
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, image, view,
                    resproj::span<const T>(vals.data(), n - 1), opt);
        },
        "values"));
    EXPECT_TRUE(throws_naming(
        [&] { cpu::back(op::non_tof{}, image, view, resproj::span<const T>(), opt); },
        "values"));
    EXPECT_TRUE(throws_naming(
        [&] {
          cpu::back(op::non_tof{}, image, view, resproj::span<const T>(nullptr, n), opt);
        },
        "values"));
    EXPECT_TRUE(bitwise_equal(img, untouched)) << "a rejected call wrote to the image";
  }

  // A valid call afterwards works.
  std::fill(img.begin(), img.end(), T(0));
  cpu::back(op::non_tof{}, image, view, vals);
  const auto expected = this->good_back();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < img.size(); ++i) {
    num +=
        (double(img[i]) - double(expected[i])) * (double(img[i]) - double(expected[i]));
    den += double(expected[i]) * double(expected[i]);
  }
  EXPECT_GT(den, 0.0);
  EXPECT_LT(std::sqrt(num / den), 1e-5);
}

TYPED_TEST(BadInput, ZeroLorsWithNullPointersIsANoOp) {
  using T = TypeParam;
  const auto &g = this->g;
  const resproj::lor_view<const T> none(nullptr, nullptr, 0);
  // Null output of size 0.
  EXPECT_NO_THROW(cpu::forward(op::non_tof{}, rt::cimage_of(this->image, g), none,
                               resproj::span<T>()));
  // A real output buffer is left alone.
  std::vector<T> out(5, this->sentinel());
  const auto out_before = out;
  EXPECT_NO_THROW(
      cpu::forward(op::non_tof{}, rt::cimage_of(this->image, g), none, rt::span_of(out)));
  EXPECT_TRUE(bitwise_equal(out, out_before));
  // Back projection of nothing leaves the image bitwise unchanged.
  for (auto acc :
       {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images}) {
    std::vector<T> img = this->image;
    EXPECT_NO_THROW(cpu::back(op::non_tof{}, rt::image_of(img, g), none,
                              resproj::span<const T>(), cpu::options{acc, 2}));
    EXPECT_TRUE(bitwise_equal(img, this->image));
  }
  // Zero LORs from a non-null view, too.
  const auto empty = rt::view_of(this->lors).subview(3, 0);
  EXPECT_NO_THROW(cpu::forward(op::non_tof{}, rt::cimage_of(this->image, g), empty,
                               resproj::span<T>()));
}

// More values or a larger output than needed is fine: only the first
// `count` are used or written.
TYPED_TEST(BadInput, LargerBuffersAreFine) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto view = rt::view_of(this->lors).subview(0, 100);
  std::vector<T> out(300, this->sentinel());
  cpu::forward(op::non_tof{}, rt::cimage_of(this->image, g), view, rt::span_of(out));
  const auto expected = this->good_forward();
  for (std::size_t i = 0; i < 100; ++i)
    EXPECT_EQ(out[i], expected[i]);
  for (std::size_t i = 100; i < out.size(); ++i)
    EXPECT_EQ(out[i], this->sentinel());
  std::vector<T> img(this->image.size(), T(0));
  EXPECT_NO_THROW(
      cpu::back(op::non_tof{}, rt::image_of(img, g), view, rt::cspan_of(this->values)));
}

/// The argument a call's invalid_argument names ("" if it does not throw).
template <class F> std::string argument_of(F &&call) {
  try {
    call();
  } catch (const resproj::invalid_argument &e) {
    return e.argument();
  }
  return "";
}

// The operation's checks (TOF parameters, list-mode bins, values per LOR)
// are the shared contract check: a bad operation throws the name
// detail::check_projection gives for the same call, in the same order
// (LORs, then the operation, then the output), before anything is written.
TYPED_TEST(BadInput, OperationChecksAreTheSharedOnes) {
  using T = TypeParam;
  const auto &g = this->g;
  const auto &lors = this->lors;
  const std::size_t n = lors.size();
  const auto view = rt::view_of(lors);
  resproj::tof_params<T> tof;
  tof.bin_width = T(5);
  tof.num_bins = 7;
  tof.sigma = T(10);
  tof.num_sigmas = T(3);
  const std::size_t N = 7;
  const std::vector<std::int16_t> bins(n, 3), short_bins(n - 1, 3);
  auto bad_sigma = tof;
  bad_sigma.sigma = T(-1);
  auto huge = tof;
  huge.num_bins = 40000; // list-mode bins are 16-bit

  const std::vector<T> untouched_out(n * N + 8, this->sentinel());
  const std::vector<T> untouched_img(this->image.size(), this->sentinel());
  const std::vector<T> values(n * N, T(1));
  std::vector<T> out = untouched_out, img = untouched_img;
  const auto image = rt::cimage_of(this->image, g);
  const auto target = rt::image_of(img, g);

  // Runs forward (output of `out_size`) and back (`values_size` values) with
  // `o` over `l` and checks both name `name`, as the shared check does, with
  // nothing written.
  auto expect = [&](const auto &o, const resproj::lor_view<const T> &l,
                    std::size_t out_size, std::size_t values_size,
                    const std::string &name) {
    SCOPED_TRACE("expected " + name);
    const resproj::span<T> o_out(out.data(), out_size);
    const resproj::span<const T> o_values(values.data(), values_size);
    EXPECT_EQ(argument_of([&] {
                resproj::detail::check_projection(o, rt::geometry_of(g), l, o_out.size(),
                                                  o_out.data(), "out");
              }),
              name);
    EXPECT_TRUE(throws_naming([&] { cpu::forward(o, image, l, o_out); }, name));
    const std::string back_name = name == "out" ? "values" : name;
    EXPECT_EQ(argument_of([&] {
                resproj::detail::check_projection(
                    o, rt::geometry_of(g), l, o_values.size(), o_values.data(), "values");
              }),
              back_name);
    for (auto acc :
         {cpu::back_accumulation::atomic, cpu::back_accumulation::thread_images})
      EXPECT_TRUE(throws_naming(
          [&] {
            cpu::back(o, target, l, o_values, cpu::options{acc, 2});
          },
          back_name));
    EXPECT_TRUE(bitwise_equal(out, untouched_out)) << "a rejected call wrote to out";
    EXPECT_TRUE(bitwise_equal(img, untouched_img))
        << "a rejected call wrote to the image";
  };

  // List-mode: one bin per LOR, checked before the output.
  expect(op::tof_listmode{tof, rt::cspan_of(short_bins)}, view, n, n, "bins");
  expect(op::tof_listmode{tof}, view, n, n, "bins"); // host arrays carry no bins
  expect(op::tof_listmode{tof, resproj::span<const std::int16_t>(nullptr, n)}, view, n, n,
         "bins");
  expect(op::tof_listmode{tof, rt::cspan_of(short_bins)}, view, n - 1, n - 1, "bins");
  expect(op::tof_listmode{huge, rt::cspan_of(bins)}, view, n, n, "tof.num_bins");
  expect(op::tof_listmode{bad_sigma, rt::cspan_of(short_bins)}, view, n, n, "tof.sigma");
  expect(op::tof_listmode{tof, rt::cspan_of(bins)}, view, n - 1, n - 1, "out");
  // The LORs are checked before the operation.
  expect(op::tof_listmode{tof, rt::cspan_of(short_bins)},
         resproj::lor_view<const T>(nullptr, lors.ends.data(), n), n, n, "lors.starts");

  // Sinogram: count * num_bins values.
  expect(op::tof_sinogram{tof}, view, n * N - 1, n * N - 1, "out");
  expect(op::tof_sinogram{tof}, view, n, n, "out"); // the non-TOF size
  expect(op::tof_sinogram{bad_sigma}, view, n * N - 1, n * N - 1, "tof.sigma");

  // Non-TOF: one value per LOR.
  expect(op::non_tof{}, view, n - 1, n - 1, "out");

  // The same calls with valid arguments work and write exactly their values.
  cpu::forward(op::tof_sinogram{tof}, image, view, resproj::span<T>(out.data(), n * N));
  for (std::size_t i = n * N; i < out.size(); ++i)
    EXPECT_EQ(out[i], this->sentinel()) << "wrote past count * num_bins at " << i;
  std::vector<T> lm(n + 1, this->sentinel());
  cpu::forward(op::tof_listmode{tof, rt::cspan_of(bins)}, image, view,
               resproj::span<T>(lm.data(), n));
  EXPECT_EQ(lm[n], this->sentinel());
  const double tol = sizeof(T) == 4 ? 2e-6 : 1e-14; // list-mode == sinogram
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_NEAR(double(lm[i]), double(out[i * N + 3]),
                tol * std::fabs(double(out[i * N + 3])))
        << "event " << i;
}

} // namespace
