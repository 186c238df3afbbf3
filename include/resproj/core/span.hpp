/// @file
/// @brief `span<T>`: a sized, non-owning, trivially copyable view of
/// contiguous elements, usable in host and device code.
#pragma once

#include <cstddef>
#include <type_traits>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Pointer plus element count. Outputs are always passed as spans, so that
/// "output too small" is detected before anything is written.
/// `span<const T>` is constructible from `span<T>`.
template <class T> class span {
public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  constexpr span() noexcept = default;
  RESPROJ_HD constexpr span(T *data, std::size_t size) noexcept
      : data_(data), size_(size) {}
  template <class U,
            class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  RESPROJ_HD constexpr span(span<U> other) noexcept
      : data_(other.data()), size_(other.size()) {}

  RESPROJ_HD constexpr T *data() const noexcept { return data_; }
  RESPROJ_HD constexpr std::size_t size() const noexcept { return size_; }
  RESPROJ_HD constexpr bool empty() const noexcept { return size_ == 0; }
  RESPROJ_HD constexpr T &operator[](std::size_t i) const noexcept { return data_[i]; }
  RESPROJ_HD constexpr T *begin() const noexcept { return data_; }
  RESPROJ_HD constexpr T *end() const noexcept { return data_ + size_; }
  /// Elements `[offset, offset + count)`. Unchecked, like std::span.
  RESPROJ_HD constexpr span subspan(std::size_t offset,
                                    std::size_t count) const noexcept {
    return span(data_ + offset, count);
  }

private:
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

static_assert(std::is_trivially_copyable_v<span<float>>);

RESPROJ_NAMESPACE_END
