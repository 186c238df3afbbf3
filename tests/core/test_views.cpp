// span, image_view and lor_view: sizes, const conversions, sub-views, and
// the trivially copyable property the GPU backend relies on.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/version.hpp"
#include "resproj/core/views.hpp"

namespace {

static_assert(std::is_trivially_copyable<resproj::span<float>>::value, "");
static_assert(std::is_trivially_copyable<resproj::span<const double>>::value, "");
static_assert(std::is_trivially_copyable<resproj::image_view<const float>>::value, "");
static_assert(std::is_trivially_copyable<resproj::lor_view<const double>>::value, "");
// const-adding conversions exist, const-removing ones do not.
static_assert(
    std::is_convertible<resproj::span<float>, resproj::span<const float>>::value, "");
static_assert(
    !std::is_convertible<resproj::span<const float>, resproj::span<float>>::value, "");
static_assert(std::is_convertible<resproj::image_view<float>,
                                  resproj::image_view<const float>>::value,
              "");
static_assert(!std::is_convertible<resproj::image_view<const float>,
                                   resproj::image_view<float>>::value,
              "");
static_assert(
    std::is_convertible<resproj::lor_view<float>, resproj::lor_view<const float>>::value,
    "");
static_assert(
    !std::is_convertible<resproj::lor_view<const float>, resproj::lor_view<float>>::value,
    "");
static_assert(
    !std::is_convertible<resproj::span<float>, resproj::span<const double>>::value, "");

TEST(Span, SizeDataAndSubspan) {
  std::vector<float> v(10);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  const resproj::span<float> s(v.data(), v.size());
  EXPECT_EQ(s.size(), 10u);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.data(), v.data());
  EXPECT_EQ(s.end() - s.begin(), 10);
  const auto sub = s.subspan(3, 4);
  EXPECT_EQ(sub.data(), v.data() + 3);
  EXPECT_EQ(sub.size(), 4u);
  EXPECT_EQ(sub[0], 3.0f);
  const resproj::span<const float> c = s;
  EXPECT_EQ(c.data(), v.data());
  EXPECT_EQ(c.size(), 10u);
  EXPECT_TRUE(resproj::span<double>().empty());
  EXPECT_EQ(resproj::span<double>().data(), nullptr);
}

TEST(Views, ImageViewCoversAllVoxels) {
  const resproj::image_geometry g({3, 4, 5}, {1, 1, 1}, {0, 0, 0});
  std::vector<double> img(60);
  resproj::image_view<double> view(img.data(), g);
  EXPECT_EQ(view.values().size(), 60u);
  EXPECT_EQ(view.values().data(), img.data());
  const resproj::image_view<const double> cview = view;
  EXPECT_EQ(cview.data, img.data());
  EXPECT_TRUE(cview.geometry == g);
}

TEST(Views, LorViewSubview) {
  std::vector<float> starts(30), ends(30);
  const resproj::lor_view<float> all(starts.data(), ends.data(), 10);
  const auto sub = all.subview(4, 3);
  EXPECT_EQ(sub.starts, starts.data() + 12);
  EXPECT_EQ(sub.ends, ends.data() + 12);
  EXPECT_EQ(sub.count, 3u);
  const resproj::lor_view<const float> c = sub;
  EXPECT_EQ(c.starts, sub.starts);
  EXPECT_EQ(resproj::lor_view<float>().count, 0u);
}

TEST(Version, MatchesMacros) {
  EXPECT_EQ(resproj::version, RESPROJ_VERSION_MAJOR * 10000 +
                                  RESPROJ_VERSION_MINOR * 100 + RESPROJ_VERSION_PATCH);
  EXPECT_EQ(std::string(resproj::version_string),
            std::to_string(RESPROJ_VERSION_MAJOR) + "." +
                std::to_string(RESPROJ_VERSION_MINOR) + "." +
                std::to_string(RESPROJ_VERSION_PATCH));
}

} // namespace
