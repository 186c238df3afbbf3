/// @file
/// @brief PNG of central slices for the examples: grey 8-bit pictures,
/// written by a small encoder of our own (stored, uncompressed deflate
/// blocks, which every PNG reader accepts), so that every build writes
/// them. Standard library only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "resproj/core/image_geometry.hpp"

namespace resproj_examples {

namespace detail {

/// CRC-32 (ISO 3309, as PNG's chunks use) of `n` bytes, continuing `crc`.
inline std::uint32_t png_crc(const unsigned char *p, std::size_t n,
                             std::uint32_t crc = 0) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1u) != 0 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i)
    crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

inline void put_be32(std::vector<unsigned char> &out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    out.push_back(static_cast<unsigned char>(v >> s));
}

/// Appends the PNG chunk `type` with `data`: length, type, data, CRC.
inline void png_chunk(std::vector<unsigned char> &out, const char (&type)[5],
                      const std::vector<unsigned char> &data) {
  put_be32(out, std::uint32_t(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_be32(out, png_crc(out.data() + start, out.size() - start));
}

} // namespace detail

/// The bytes of a PNG file of a grey 8-bit picture, `width` x `height`
/// values row by row (top row first): every row with filter 0, the image
/// data as a zlib stream of stored deflate blocks (RFC 1950, 1951).
inline std::vector<unsigned char> encode_grey_png(const std::vector<unsigned char> &px,
                                                  int width, int height) {
  std::vector<unsigned char> raw;
  raw.reserve(std::size_t(height) * (std::size_t(width) + 1));
  for (int r = 0; r < height; ++r) {
    raw.push_back(0); // filter: none
    const auto row = px.begin() + std::ptrdiff_t(r) * width;
    raw.insert(raw.end(), row, row + width);
  }
  std::vector<unsigned char> z = {0x78, 0x01}; // deflate, 32 KiB window
  std::uint32_t a = 1, b = 0;                  // Adler-32
  for (const unsigned char c : raw) {
    a = (a + c) % 65521u;
    b = (b + a) % 65521u;
  }
  std::size_t at = 0;
  do {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + n == raw.size();
    z.push_back(last ? 1 : 0); // BFINAL, BTYPE 00: stored
    z.push_back(static_cast<unsigned char>(n & 0xffu));
    z.push_back(static_cast<unsigned char>(n >> 8));
    z.push_back(static_cast<unsigned char>(~n & 0xffu));
    z.push_back(static_cast<unsigned char>((~n >> 8) & 0xffu));
    z.insert(z.end(), raw.begin() + std::ptrdiff_t(at),
             raw.begin() + std::ptrdiff_t(at + n));
    at += n;
  } while (at < raw.size());
  detail::put_be32(z, (b << 16) | a);
  std::vector<unsigned char> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<unsigned char> ihdr;
  detail::put_be32(ihdr, std::uint32_t(width));
  detail::put_be32(ihdr, std::uint32_t(height));
  ihdr.insert(ihdr.end(),
              {8, 0, 0, 0, 0}); // 8 bits, grey, deflate, filter 0, no interlace
  detail::png_chunk(out, "IHDR", ihdr);
  detail::png_chunk(out, "IDAT", z);
  detail::png_chunk(out, "IEND", {});
  return out;
}

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
/// the rows top to bottom (unused area black). Returns false if there is
/// nothing to draw or the file cannot be written.
inline bool write_panels_png(const std::string &path,
                             const std::vector<std::vector<png_panel>> &rows) {
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
  if (W == 0 || H == 0)
    return false;
  const std::vector<unsigned char> png = encode_grey_png(px, W, H);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(png.data()), std::streamsize(png.size()));
  return bool(f);
}

/// Writes a grey PNG of the transaxial slices through the voxel `k2` of
/// axis 2 of each image in `images`, side by side (left to right), grey
/// levels 0 .. `display_max` (<= 0: each image's own maximum). Returns
/// false if the file cannot be written.
inline bool write_slices_png(const std::string &path, const resproj::image_geometry &g,
                             const std::vector<const std::vector<float> *> &images,
                             std::int64_t k2, float display_max = 0) {
  std::vector<png_panel> row;
  for (const std::vector<float> *img : images)
    row.push_back(image_slice(g, *img, 2, k2, display_max));
  return write_panels_png(path, {row});
}

} // namespace resproj_examples
