/// @file
/// @brief Builds resproj views over host std::vectors and test LOR sets.
/// Plain C++ (core headers only, no CUDA).
#pragma once

#include <cstddef>
#include <vector>

#include "common/grid.hpp"
#include "common/lors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"

namespace resproj_test {

inline resproj::image_geometry geometry_of(const grid &g) {
  return resproj::image_geometry(g.shape, g.voxel_size, g.origin);
}

template <class T> resproj::lor_view<const T> view_of(const lor_set<T> &s) {
  return resproj::lor_view<const T>(s.starts.data(), s.ends.data(), s.size());
}

template <class T> resproj::span<T> span_of(std::vector<T> &v) {
  return resproj::span<T>(v.data(), v.size());
}

template <class T> resproj::span<const T> cspan_of(const std::vector<T> &v) {
  return resproj::span<const T>(v.data(), v.size());
}

template <class T>
resproj::image_view<const T> cimage_of(const std::vector<T> &v, const grid &g) {
  return resproj::image_view<const T>(v.data(), geometry_of(g));
}

template <class T> resproj::image_view<T> image_of(std::vector<T> &v, const grid &g) {
  return resproj::image_view<T>(v.data(), geometry_of(g));
}

} // namespace resproj_test
