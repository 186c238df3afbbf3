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

/// One grey picture: `width` x `height` values, row by row (top row
/// first), shown as grey levels 0 .. `display_max` (values above saturate).
struct png_panel {
  int width = 0, height = 0;
  std::vector<float> values;
  float display_max = 1;
};

/// The slice of `img` (geometry `g`) through voxel `index` of axis
/// `fixed_axis`: axis 2 fixed (transaxial): columns axis 0, rows axis 1;
/// axis 1 fixed (coronal) or axis 0 (sagittal): columns axis 2, rows the
/// other axis. `display_max` <= 0: the slice's own maximum.
inline png_panel image_slice(const resproj::image_geometry &g,
                             const std::vector<float> &img, int fixed_axis,
                             std::int64_t index, float display_max = 0) {
  const auto &n = g.shape();
  const int col_axis = fixed_axis == 2 ? 0 : 2;
  const int row_axis = fixed_axis == 2 ? 1 : (fixed_axis == 1 ? 0 : 1);
  png_panel p;
  p.width = int(n[std::size_t(col_axis)]);
  p.height = int(n[std::size_t(row_axis)]);
  p.values.resize(std::size_t(p.width) * std::size_t(p.height));
  float mx = 0;
  for (int r = 0; r < p.height; ++r)
    for (int c = 0; c < p.width; ++c) {
      std::int64_t i[3];
      i[fixed_axis] = index;
      i[col_axis] = c;
      i[row_axis] = r;
      const float v = img[std::size_t((i[0] * n[1] + i[1]) * n[2] + i[2])];
      p.values[std::size_t(r) * std::size_t(p.width) + std::size_t(c)] = v;
      mx = std::max(mx, v);
    }
  p.display_max = display_max > 0 ? display_max : mx;
  return p;
}

/// Writes the panels as one grey PNG: each row of `rows` left to right,
/// the rows top to bottom (unused area black). Returns false (and writes
/// nothing) without stb.
inline bool write_panels_png(const std::string &path,
                             const std::vector<std::vector<png_panel>> &rows) {
#if defined(RESPROJ_EXAMPLES_HAVE_STB)
  int W = 0, H = 0;
  for (const auto &row : rows) {
    int w = 0, h = 0;
    for (const png_panel &p : row) {
      w += p.width;
      h = std::max(h, p.height);
    }
    W = std::max(W, w);
    H += h;
  }
  std::vector<unsigned char> px(std::size_t(W) * std::size_t(H), 0);
  int y0 = 0;
  for (const auto &row : rows) {
    int x0 = 0, h = 0;
    for (const png_panel &p : row) {
      for (int r = 0; r < p.height; ++r)
        for (int c = 0; c < p.width; ++c) {
          const float v =
              p.values[std::size_t(r) * std::size_t(p.width) + std::size_t(c)];
          const float t =
              p.display_max > 0 ? std::min(1.f, std::max(0.f, v / p.display_max)) : 0.f;
          px[std::size_t(y0 + r) * std::size_t(W) + std::size_t(x0 + c)] =
              static_cast<unsigned char>(t * 255.f + 0.5f);
        }
      x0 += p.width;
      h = std::max(h, p.height);
    }
    y0 += h;
  }
  return W > 0 && H > 0 && stbi_write_png(path.c_str(), W, H, 1, px.data(), W) != 0;
#else
  (void)path, (void)rows;
  return false;
#endif
}

/// Writes a grey PNG of the transaxial slices through the voxel `k2` of
/// axis 2 of each image in `images`, side by side (left to right), grey
/// levels 0 .. `display_max` (<= 0: each image's own maximum). Returns
/// false (and writes nothing) without stb.
inline bool write_slices_png(const std::string &path, const resproj::image_geometry &g,
                             const std::vector<const std::vector<float> *> &images,
                             std::int64_t k2, float display_max = 0) {
  std::vector<png_panel> row;
  for (const std::vector<float> *img : images)
    row.push_back(image_slice(g, *img, 2, k2, display_max));
  return write_panels_png(path, {row});
}

} // namespace resproj_examples
