// image_geometry: accessors, box edges, the centred origin, and validation
// (docs/projection.md "Image"): every rejected component is named in the
// exception, as "shape[k]", "voxel_size[k]" or "origin[k]".
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"

namespace {

using shape_t = std::array<std::int64_t, 3>;
using vec_t = std::array<double, 3>;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// Runs `make` and checks that it throws resproj::invalid_argument naming
/// `argument` (in argument() and in what(), as "resproj: <argument>: ...").
template <class F>
::testing::AssertionResult rejects(F &&make, const std::string &argument) {
  try {
    make();
  } catch (const resproj::invalid_argument &e) {
    const std::string what = e.what();
    if (e.argument() != argument)
      return ::testing::AssertionFailure() << "argument() is \"" << e.argument()
                                           << "\", expected \"" << argument << "\"";
    if (what.find("resproj: " + argument + ": ") != 0)
      return ::testing::AssertionFailure()
             << "what() is \"" << what
             << "\", expected it to start with \"resproj: " << argument << ": \"";
    return ::testing::AssertionSuccess() << what;
  } catch (const std::exception &e) {
    return ::testing::AssertionFailure() << "threw another exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw (expected " << argument << ")";
}

TEST(ImageGeometry, Accessors) {
  const resproj::image_geometry g({4, 5, 6}, {2.0, 1.0, 0.5}, {-3.0, 1.5, 10.0});
  EXPECT_EQ(g.shape(), (shape_t{4, 5, 6}));
  EXPECT_EQ(g.voxel_size(), (vec_t{2.0, 1.0, 0.5}));
  EXPECT_EQ(g.origin(), (vec_t{-3.0, 1.5, 10.0}));
  EXPECT_EQ(g.num_voxels(), 120);
  // Box along k: [o_k - s_k / 2, o_k - s_k / 2 + n_k s_k].
  EXPECT_DOUBLE_EQ(g.box_min(0), -4.0);
  EXPECT_DOUBLE_EQ(g.box_max(0), 4.0);
  EXPECT_DOUBLE_EQ(g.box_min(1), 1.0);
  EXPECT_DOUBLE_EQ(g.box_max(1), 6.0);
  EXPECT_DOUBLE_EQ(g.box_min(2), 9.75);
  EXPECT_DOUBLE_EQ(g.box_max(2), 12.75);
  static_assert(std::is_trivially_copyable<resproj::image_geometry>::value, "");
}

TEST(ImageGeometry, CentredBoxIsSymmetricAboutZero) {
  const auto g = resproj::image_geometry::centred({215, 215, 71}, {2.78, 2.78, 2.78});
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(g.origin()[std::size_t(k)],
                     -(double(g.shape()[std::size_t(k)]) - 1) * 2.78 / 2);
    EXPECT_NEAR(g.box_min(k), -g.box_max(k), 1e-12);
  }
  EXPECT_NEAR(g.origin()[0], -297.46, 1e-12);
  const auto h = resproj::image_geometry::centred({4, 1, 3}, {2.0, 3.0, 1.0});
  EXPECT_EQ(h.origin(), (vec_t{-3.0, 0.0, -1.0}));
}

TEST(ImageGeometry, Equality) {
  const resproj::image_geometry a({4, 5, 6}, {2.0, 1.0, 0.5}, {0, 0, 0});
  const resproj::image_geometry b({4, 5, 6}, {2.0, 1.0, 0.5}, {0, 0, 0});
  const resproj::image_geometry c({4, 5, 6}, {2.0, 1.0, 0.5}, {0, 0, 1e-9});
  const resproj::image_geometry d({4, 5, 7}, {2.0, 1.0, 0.5}, {0, 0, 0});
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  EXPECT_TRUE(a != c);
  EXPECT_TRUE(a != d);
}

TEST(ImageGeometry, MoreThan2To31VoxelsIsLegal) {
  const resproj::image_geometry g({2048, 2048, 1025}, {1, 1, 1}, {0, 0, 0});
  EXPECT_EQ(g.num_voxels(), std::int64_t(2048) * 2048 * 1025);
  EXPECT_GT(g.num_voxels(), std::int64_t(1) << 32);
}

TEST(ImageGeometry, RejectsNonPositiveShape) {
  for (int k = 0; k < 3; ++k) {
    for (std::int64_t n : {std::int64_t(0), std::int64_t(-1), std::int64_t(-1000)}) {
      shape_t shape{3, 4, 5};
      shape[std::size_t(k)] = n;
      const std::string name = "shape[" + std::to_string(k) + "]";
      EXPECT_TRUE(rejects(
          [&] {
            resproj::image_geometry(shape, {1, 1, 1}, {0, 0, 0});
          },
          name));
      EXPECT_TRUE(rejects(
          [&] {
            resproj::image_geometry::centred(shape, {1, 1, 1});
          },
          name));
    }
  }
}

TEST(ImageGeometry, RejectsBadVoxelSize) {
  for (int k = 0; k < 3; ++k) {
    for (double s : {0.0, -0.0, -1.0, kNaN, kInf, -kInf, -1e-300}) {
      vec_t size{1, 2, 3};
      size[std::size_t(k)] = s;
      const std::string name = "voxel_size[" + std::to_string(k) + "]";
      EXPECT_TRUE(rejects(
          [&] {
            resproj::image_geometry({3, 4, 5}, size, {0, 0, 0});
          },
          name))
          << "voxel size " << s;
      EXPECT_TRUE(rejects(
          [&] {
            resproj::image_geometry::centred({3, 4, 5}, size);
          },
          name))
          << "voxel size " << s;
    }
  }
  // Tiny but positive and finite is legal.
  EXPECT_NO_THROW(resproj::image_geometry({3, 4, 5}, {1e-30, 1, 1}, {0, 0, 0}));
}

TEST(ImageGeometry, RejectsNonFiniteOrigin) {
  for (int k = 0; k < 3; ++k) {
    for (double o : {kNaN, kInf, -kInf}) {
      vec_t origin{0, 1, 2};
      origin[std::size_t(k)] = o;
      const std::string name = "origin[" + std::to_string(k) + "]";
      EXPECT_TRUE(rejects(
          [&] {
            resproj::image_geometry({3, 4, 5}, {1, 1, 1}, origin);
          },
          name))
          << "origin " << o;
    }
  }
  // Negative, zero and large finite origins are legal.
  EXPECT_NO_THROW(resproj::image_geometry({3, 4, 5}, {1, 1, 1}, {-1e6, 0.0, 1e6}));
}

TEST(ImageGeometry, RejectsTooManyVoxels) {
  const std::int64_t big = std::int64_t(1) << 22;
  EXPECT_TRUE(rejects(
      [&] {
        resproj::image_geometry({big, big, big}, {1, 1, 1}, {0, 0, 0});
      },
      "shape"));
}

// A projection in T takes the geometry in T: `check_geometry_in<T>` (run by
// the shared contract check) accepts exactly the geometries whose voxel
// sizes are normal numbers of T and whose origin and box edges are finite
// in T, and names the first component that is not.
TEST(ImageGeometry, RepresentableInTheValueType) {
  using resproj::detail::check_geometry_in;
  const double fmin = double(std::numeric_limits<float>::min());
  const double fmax = double(std::numeric_limits<float>::max());
  const double dmin = std::numeric_limits<double>::min();
  const double dmax = std::numeric_limits<double>::max();
  struct {
    vec_t size, origin;
    std::string float_name, double_name; // "" if accepted
  } cases[] = {
      {{2, 1, 3}, {-7, -3, -7.5}, "", ""},
      {{fmin, 1, 1}, {0, 0, 0}, "", ""},
      {{1, std::nextafter(fmin, 0.0) * 0.5, 1}, {0, 0, 0}, "g.voxel_size[1]", ""},
      {{1, 1, 1e-45}, {0, 0, 0}, "g.voxel_size[2]", ""},
      {{1, 1, 1e-50}, {0, 0, 0}, "g.voxel_size[2]", ""},
      {{1, dmin / 4, 1}, {0, 0, 0}, "g.voxel_size[1]", "g.voxel_size[1]"},
      {{3.5e38, 1, 1}, {0, 0, 0}, "g.voxel_size[0]", ""},
      {{1, 1, 1e32}, {0, 0, fmax}, "g.box_max[2]", ""},
      {{1e32, 1, 1}, {-fmax, 0, 0}, "g.box_min[0]", ""},
      {{1, 1, 1}, {0, 4e38, 0}, "g.origin[1]", ""},
      {{1e308, 1, 1}, {1e308, 0, 0}, "g.voxel_size[0]", "g.box_max[0]"},
      {{1e300, 1, 1}, {-dmax, 0, 0}, "g.voxel_size[0]", "g.box_min[0]"},
  };
  for (const auto &c : cases) {
    const resproj::image_geometry g({4, 3, 2}, c.size, c.origin);
    if (c.float_name.empty())
      EXPECT_NO_THROW(check_geometry_in<float>(g, "g"));
    else
      EXPECT_TRUE(rejects([&] { check_geometry_in<float>(g, "g"); }, c.float_name));
    if (c.double_name.empty())
      EXPECT_NO_THROW(check_geometry_in<double>(g, "g"));
    else
      EXPECT_TRUE(rejects([&] { check_geometry_in<double>(g, "g"); }, c.double_name));
  }
}

TEST(ImageGeometry, ErrorsAreResprojErrors) {
  try {
    resproj::image_geometry({0, 1, 1}, {1, 1, 1}, {0, 0, 0});
    FAIL() << "did not throw";
  } catch (const resproj::error &e) {
    EXPECT_NE(std::string(e.what()).find("shape[0]"), std::string::npos);
  }
  static_assert(std::is_base_of<resproj::error, resproj::invalid_argument>::value, "");
  static_assert(std::is_base_of<std::runtime_error, resproj::error>::value, "");
}

} // namespace
