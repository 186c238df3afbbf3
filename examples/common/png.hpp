/// @file
/// @brief PNG of central slices for the examples, written with
/// stb_image_write (Debian's libstb-dev) when the build found it
/// (RESPROJ_EXAMPLES_HAVE_STB), otherwise a no-op that says so.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "resproj/core/image_geometry.hpp"

#if defined(RESPROJ_EXAMPLES_HAVE_STB)
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#endif

namespace resproj_examples {

/// Writes a grey PNG of the slices through the voxel `k2` of axis 2 of
/// each image in `images`, side by side (left to right), grey levels
/// 0 .. `display_max` (values above saturate; <= 0: each image's own
/// maximum). Returns false (and writes nothing) without stb.
inline bool write_slices_png(const std::string &path, const resproj::image_geometry &g,
                             const std::vector<const std::vector<float> *> &images,
                             std::int64_t k2, float display_max = 0) {
#if defined(RESPROJ_EXAMPLES_HAVE_STB)
  const auto &n = g.shape();
  const int w = int(n[0]), h = int(n[1]), W = w * int(images.size());
  std::vector<unsigned char> px(std::size_t(W) * std::size_t(h), 0);
  for (std::size_t k = 0; k < images.size(); ++k) {
    const std::vector<float> &img = *images[k];
    float mx = display_max;
    for (std::int64_t i0 = 0; i0 < n[0]; ++i0)
      for (std::int64_t i1 = 0; i1 < n[1] && display_max <= 0; ++i1)
        mx = std::max(mx, img[std::size_t((i0 * n[1] + i1) * n[2] + k2)]);
    for (int i0 = 0; i0 < w; ++i0)
      for (int i1 = 0; i1 < h; ++i1) {
        const float v = img[std::size_t((std::int64_t(i0) * n[1] + i1) * n[2] + k2)];
        const float t = mx > 0 ? std::min(1.f, std::max(0.f, v / mx)) : 0.f;
        // Row = axis 1 (top to bottom), column = axis 0.
        px[std::size_t(i1) * std::size_t(W) + std::size_t(k) * std::size_t(w) +
           std::size_t(i0)] = static_cast<unsigned char>(t * 255.f + 0.5f);
      }
  }
  return stbi_write_png(path.c_str(), W, h, 1, px.data(), W) != 0;
#else
  (void)path, (void)g, (void)images, (void)k2, (void)display_max;
  return false;
#endif
}

} // namespace resproj_examples
