/// @file
/// @brief Non-owning, trivially copyable views of images and LOR arrays.
/// The same views describe host memory (CPU backend) and device memory
/// (GPU backend); the backend that receives them checks where they point.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/span.hpp"

RESPROJ_NAMESPACE_BEGIN

/// An image: `geometry.num_voxels()` values of type T (C order) at `data`.
/// `image_view<const T>` is constructible from `image_view<T>`.
template <class T> struct image_view {
  T *data = nullptr;
  image_geometry geometry;

  image_view(T *data_, const image_geometry &geometry_) noexcept
      : data(data_), geometry(geometry_) {}
  template <class U,
            class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  image_view(const image_view<U> &other) noexcept
      : data(other.data), geometry(other.geometry) {}

  /// All voxels as a span.
  span<T> values() const noexcept {
    return span<T>(data, std::size_t(geometry.num_voxels()));
  }
};

/// `count` lines of response: starts `[x0 y0 z0 x1 y1 z1 ...]` and ends in
/// the same layout (3 * count values each). Coordinates are in the image's
/// length unit; axis k of a point is image axis k. `layout` says how the
/// LORs are ordered (default: nothing known); declare it once with
/// `with_layout` and every projector uses it to pick its fastest kernel.
/// `lor_view<const T>` is constructible from `lor_view<T>`.
template <class T> struct lor_view {
  using value_type = std::remove_const_t<T>;
  T *starts = nullptr;
  T *ends = nullptr;
  std::size_t count = 0;
  lor_layout layout{};

  constexpr lor_view() noexcept = default;
  RESPROJ_HD constexpr lor_view(T *starts_, T *ends_, std::size_t count_,
                                lor_layout layout_ = {}) noexcept
      : starts(starts_), ends(ends_), count(count_), layout(layout_) {}
  template <class U,
            class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  RESPROJ_HD constexpr lor_view(const lor_view<U> &other) noexcept
      : starts(other.starts), ends(other.ends), count(other.count), layout(other.layout) {
  }

  /// This view with its memory order declared (see lor_layout).
  constexpr lor_view with_layout(lor_layout l) const noexcept {
    lor_view r = *this;
    r.layout = l;
    return r;
  }

  /// End points of LOR i.
  RESPROJ_HD void load(std::size_t i, std::remove_const_t<T> a[3],
                       std::remove_const_t<T> b[3]) const noexcept {
    for (std::size_t k = 0; k < 3; ++k) {
      a[k] = starts[3 * i + k];
      b[k] = ends[3 * i + k];
    }
  }

  /// LORs `[first, first + n)` of this view (unchecked).
  RESPROJ_HD constexpr lor_view subview(std::size_t first, std::size_t n) const noexcept {
    return lor_view(starts + 3 * first, ends + 3 * first, n, layout);
  }

  // The LOR-source interface shared with detector_pairs and sinogram
  // sources (host only): the form the kernels take, the host-side checks,
  // and the memory regions the source reads.
  lor_view<const value_type> normalized() const noexcept {
    return lor_view<const value_type>(starts, ends, count, layout);
  }
  /// @throws invalid_argument for null pointers with a non-zero count.
  void check(const char *name) const;
  template <class F> void for_each_region(F &&f) const {
    f(static_cast<const void *>(starts), "lors.starts");
    f(static_cast<const void *>(ends), "lors.ends");
  }
};

static_assert(std::is_trivially_copyable_v<image_view<float>>);
static_assert(std::is_trivially_copyable_v<lor_view<const float>>);

namespace detail {

/// Checks a LOR view: both pointers non-null unless count is 0.
/// @throws invalid_argument naming `name`.starts / `name`.ends.
template <class T> void check_lors(const lor_view<T> &lors, const char *name) {
  if (lors.count == 0)
    return;
  if (lors.starts == nullptr)
    throw_invalid(std::string(name) + ".starts",
                  "null pointer with count " + std::to_string(lors.count));
  if (lors.ends == nullptr)
    throw_invalid(std::string(name) + ".ends",
                  "null pointer with count " + std::to_string(lors.count));
}

/// Checks an image view: non-null data.
template <class T> void check_image(const image_view<T> &image, const char *name) {
  if (image.data == nullptr)
    throw_invalid(std::string(name) + ".data", "null pointer");
}

/// Checks that `s` holds at least `needed` elements and is non-null if so.
template <class T>
void check_span(const span<T> &s, std::size_t needed, const char *name) {
  if (s.size() < needed)
    throw_invalid(name, "too small: holds " + std::to_string(s.size()) +
                            " elements, needs " + std::to_string(needed));
  if (needed > 0 && s.data() == nullptr)
    throw_invalid(name, "null pointer with size " + std::to_string(s.size()));
}

} // namespace detail

template <class T> void lor_view<T>::check(const char *name) const {
  detail::check_lors(*this, name);
}

RESPROJ_NAMESPACE_END
