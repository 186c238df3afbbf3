// The examples' PNG encoder (examples/common/png.hpp): the CRC-32 against
// its published check values, and encoded pictures decoded here chunk by
// chunk (CRCs, header, zlib stream of stored blocks, Adler-32) back to
// their pixels, for a picture of one deflate block and one of several.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "png.hpp"

namespace ex = resproj_examples;

namespace {

std::uint32_t be32(const std::vector<unsigned char> &b, std::size_t at) {
  return (std::uint32_t(b[at]) << 24) | (std::uint32_t(b[at + 1]) << 16) |
         (std::uint32_t(b[at + 2]) << 8) | std::uint32_t(b[at + 3]);
}

/// Bit by bit, without the encoder's table.
std::uint32_t crc_bitwise(const unsigned char *p, std::size_t n) {
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

struct decoded {
  std::uint32_t width = 0, height = 0;
  std::vector<unsigned char> pixels;
};

/// Decodes a grey 8-bit PNG whose image data are stored deflate blocks;
/// fails the test on any malformed part.
decoded decode(const std::vector<unsigned char> &png) {
  decoded d;
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_TRUE(png.size() > 8 && std::equal(signature, signature + 8, png.begin()));
  std::vector<unsigned char> z;
  std::vector<std::string> types;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::uint32_t n = be32(png, at);
    const std::string type(png.begin() + std::ptrdiff_t(at + 4),
                           png.begin() + std::ptrdiff_t(at + 8));
    EXPECT_EQ(crc_bitwise(png.data() + at + 4, n + 4), be32(png, at + 8 + n)) << type;
    types.push_back(type);
    if (type == "IHDR") {
      d.width = be32(png, at + 8);
      d.height = be32(png, at + 12);
      EXPECT_EQ(png[at + 16], 8); // bit depth
      EXPECT_EQ(png[at + 17], 0); // grey
      EXPECT_EQ(png[at + 20], 0); // not interlaced
    } else if (type == "IDAT") {
      z.insert(z.end(), png.begin() + std::ptrdiff_t(at + 8),
               png.begin() + std::ptrdiff_t(at + 8 + n));
    }
    at += 12 + n;
  }
  EXPECT_EQ(types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
  // zlib: CMF 0x78 (deflate, 32 KiB window), header check a multiple of 31.
  EXPECT_EQ(z.at(0), 0x78);
  EXPECT_EQ((z[0] * 256 + z[1]) % 31, 0);
  std::vector<unsigned char> raw;
  std::size_t at = 2;
  for (bool last = false; !last;) {
    last = (z.at(at) & 1) != 0;
    EXPECT_EQ(z[at] >> 1, 0); // stored
    const std::size_t n = z.at(at + 1) | (std::size_t(z.at(at + 2)) << 8);
    const std::size_t nn = z.at(at + 3) | (std::size_t(z.at(at + 4)) << 8);
    EXPECT_EQ(n ^ 0xffffu, nn);
    raw.insert(raw.end(), z.begin() + std::ptrdiff_t(at + 5),
               z.begin() + std::ptrdiff_t(at + 5 + n));
    at += 5 + n;
  }
  std::uint64_t a = 1, b = 0;
  for (const unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  EXPECT_EQ(be32(z, at), std::uint32_t((b << 16) | a));
  EXPECT_EQ(at + 4, z.size());
  EXPECT_EQ(raw.size(), std::size_t(d.height) * (d.width + 1));
  for (std::uint32_t r = 0; r < d.height && raw.size() >= (r + 1) * (d.width + 1); ++r) {
    EXPECT_EQ(raw[r * (d.width + 1)], 0); // filter: none
    d.pixels.insert(d.pixels.end(), raw.begin() + std::ptrdiff_t(r * (d.width + 1) + 1),
                    raw.begin() + std::ptrdiff_t((r + 1) * (d.width + 1)));
  }
  return d;
}

} // namespace

TEST(ExamplePng, CrcMatchesItsCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(ex::detail::png_crc(reinterpret_cast<const unsigned char *>(check.data()),
                                check.size()),
            0xcbf43926u);
  const unsigned char iend[4] = {'I', 'E', 'N', 'D'};
  EXPECT_EQ(ex::detail::png_crc(iend, 4), 0xae426082u);
}

TEST(ExamplePng, DecodesToItsPixels) {
  for (const auto &[w, h] : {std::pair<int, int>{7, 3}, {700, 300}}) {
    std::vector<unsigned char> px(std::size_t(w) * std::size_t(h));
    for (std::size_t i = 0; i < px.size(); ++i)
      px[i] = static_cast<unsigned char>((i * 37 + i / 7) & 0xffu);
    const decoded d = decode(ex::encode_grey_png(px, w, h));
    EXPECT_EQ(d.width, std::uint32_t(w));
    EXPECT_EQ(d.height, std::uint32_t(h));
    EXPECT_EQ(d.pixels, px);
  }
}
