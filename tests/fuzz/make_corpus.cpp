// Writes the seed corpus of the fuzzers: small valid files of each format
// (through resproj's writers where there is one, by hand for variants the
// writers do not produce: big-endian, version 2.0, Fortran order, scaled
// integer NIfTI, qform, flipped axes) and a few truncated or corrupt ones.
//
//   make_corpus DIR     writes DIR/{npy,nifti,listmode,raw}/<name>
//
// Every file is well under 4 KiB (the fuzzers run with -max_len=4096). The
// output is deterministic; the files are committed under tests/fuzz/corpus.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"

namespace fs = std::filesystem;
namespace io = resproj::io;
using resproj::image_geometry;
using resproj::span;
using bytes = std::vector<unsigned char>;

namespace {

std::string g_dir;

std::string out_path(const std::string &sub, const std::string &name) {
  fs::create_directories(fs::path(g_dir) / sub);
  return (fs::path(g_dir) / sub / name).string();
}

void put(const std::string &sub, const std::string &name, const bytes &b) {
  std::ofstream f(out_path(sub, name), std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
  if (!f)
    throw std::runtime_error("cannot write " + name);
}

bytes slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bytes truncated(bytes b, std::size_t drop) {
  b.resize(b.size() > drop ? b.size() - drop : 0);
  return b;
}

// ------------------------------------------------------------------ npy --

/// A .npy file with a hand-written dict (version 1.0, or 2.0 / 3.0) and
/// `data` after it; the header is padded to a multiple of 64 bytes.
bytes npy_manual(const std::string &dict, const bytes &data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  const std::size_t header_len = total - prefix;
  bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  b.push_back(header_len & 0xff);
  b.push_back((header_len >> 8) & 0xff);
  if (major != 1) {
    b.push_back(0);
    b.push_back(0);
  }
  b.insert(b.end(), dict.begin(), dict.end());
  b.insert(b.end(), header_len - dict.size() - 1, ' ');
  b.push_back('\n');
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

template <class T>
bytes npy_written(const std::vector<T> &v, const std::vector<std::size_t> &shape) {
  const std::string tmp = out_path("npy", ".tmp.npy");
  io::write_npy(tmp, span<const T>(v.data(), v.size()), shape);
  bytes b = slurp(tmp);
  fs::remove(tmp);
  return b;
}

void make_npy() {
  put("npy", "f4_2x3.npy", npy_written<float>({1.5f, -2, 3, 0, 1e-3f, 7}, {2, 3}));
  put("npy", "f8_4.npy", npy_written<double>({1, 2.25, -3, 1e300}, {4}));
  put("npy", "i4_2x2x2.npy",
      npy_written<std::int32_t>({1, -2, 3, -4, 5, -6, 7, -8}, {2, 2, 2}));
  put("npy", "i2_3.npy", npy_written<std::int16_t>({-1, 0, 32767}, {3}));
  put("npy", "u1_5.npy", npy_written<std::uint8_t>({0, 1, 2, 254, 255}, {5}));
  put("npy", "f4_0d.npy", npy_written<float>({42}, {}));
  put("npy", "f4_0x3.npy", npy_written<float>({}, {0, 3}));
  // Big-endian float64 (1.0, -2.0, 0.5).
  put("npy", "f8_be_3.npy",
      npy_manual("{'descr': '>f8', 'fortran_order': False, 'shape': (3,), }",
                 {0x3f, 0xf0, 0, 0, 0,    0,    0, 0, 0xc0, 0, 0, 0,
                  0,    0,    0, 0, 0x3f, 0xe0, 0, 0, 0,    0, 0, 0}));
  // Version 2.0, double quotes, no trailing comma.
  put("npy", "i4_v2_2.npy",
      npy_manual("{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}",
                 {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 2));
  // Fortran order: rejected for 2x3, accepted for 1x3.
  put("npy", "f4_fortran_2x3.npy",
      npy_manual("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                 bytes(24, 0)));
  put("npy", "f4_fortran_1x3.npy",
      npy_manual("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }",
                 {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40}));
  // Corrupt: truncated data, bad magic, header length past the end,
  // unsupported descr, Python 2 long dimension.
  put("npy", "bad_truncated.npy", truncated(npy_written<float>({1, 2, 3, 4}, {4}), 3));
  bytes magic = npy_written<float>({1}, {1});
  magic[1] = 'n';
  put("npy", "bad_magic.npy", magic);
  bytes len = npy_written<float>({1}, {1});
  len[8] = 0xff;
  len[9] = 0x7f;
  put("npy", "bad_header_len.npy", len);
  put("npy", "bad_descr_c8.npy",
      npy_manual("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                 bytes(8, 0)));
  put("npy", "f4_long_dim.npy",
      npy_manual("{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }",
                 bytes(8, 0)));
}

// ---------------------------------------------------------------- NIfTI --

/// A NIfTI-1 header built field by field, in either byte order.
struct nifti_builder {
  bytes b = bytes(352, 0);
  bool big = false;

  void raw(std::size_t off, const void *p, std::size_t n) {
    const auto *s = static_cast<const unsigned char *>(p);
    for (std::size_t i = 0; i < n; ++i)
      b[off + i] = s[big ? n - 1 - i : i]; // host is little-endian
  }
  void i16(std::size_t off, std::int16_t v) { raw(off, &v, 2); }
  void i32(std::size_t off, std::int32_t v) { raw(off, &v, 4); }
  void f32(std::size_t off, float v) { raw(off, &v, 4); }

  /// dims (NIfTI i, j, k), datatype, bitpix, pixdim, units mm, vox_offset
  /// 352, magic; no transform codes (pixdim geometry).
  nifti_builder(bool big_endian, std::array<int, 3> dim, int datatype, int bitpix)
      : big(big_endian) {
    i32(0, 348);
    i16(40, 3);
    for (int d = 0; d < 3; ++d)
      i16(42 + 2 * std::size_t(d), std::int16_t(dim[std::size_t(d)]));
    for (int d = 3; d < 7; ++d)
      i16(42 + 2 * std::size_t(d), 1);
    i16(70, std::int16_t(datatype));
    i16(72, std::int16_t(bitpix));
    f32(76, 1);
    f32(80, 2);
    f32(84, 2.5f);
    f32(88, 3);
    f32(108, 352);
    b[123] = 2; // mm
    std::memcpy(&b[344], "n+1\0", 4);
  }
  void sform(const std::array<std::array<float, 4>, 3> &rows) {
    i16(254, 1);
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t c = 0; c < 4; ++c)
        f32(280 + 16 * r + 4 * c, rows[r][c]);
  }
  template <class T> bytes with(const std::vector<T> &data) const {
    bytes out = b;
    for (const T &v : data) {
      unsigned char e[sizeof(T)];
      std::memcpy(e, &v, sizeof(T));
      for (std::size_t i = 0; i < sizeof(T); ++i)
        out.push_back(e[big ? sizeof(T) - 1 - i : i]);
    }
    return out;
  }
};

template <class T> bytes nifti_written(const std::vector<T> &v, const image_geometry &g) {
  const std::string tmp = out_path("nifti", ".tmp.nii");
  io::write_nifti(tmp, span<const T>(v.data(), v.size()), g);
  bytes b = slurp(tmp);
  fs::remove(tmp);
  return b;
}

void make_nifti() {
  std::vector<float> f24(24);
  for (std::size_t i = 0; i < f24.size(); ++i)
    f24[i] = float(i) * 0.5f - 3;
  put("nifti", "f4_2x3x4.nii",
      nifti_written(f24, image_geometry({2, 3, 4}, {2, 1.5, 1}, {-1, -1.5, -1.5})));
  put("nifti", "f8_2x2x2.nii",
      nifti_written(std::vector<double>{1, -1, 2, -2, 1e30, 0, 0.25, 8},
                    image_geometry({2, 2, 2}, {1, 1, 1}, {0, 0, 0})));

  // int16, scaled (slope 2, intercept 1), pixdim geometry.
  nifti_builder s16(false, {2, 2, 2}, 4, 16);
  s16.f32(112, 2);
  s16.f32(116, 1);
  put("nifti", "i2_scaled_2x2x2.nii",
      s16.with<std::int16_t>({-3, -2, -1, 0, 1, 2, 3, 32767}));

  // uint8, qform (identity rotation, qfac -1), units metre.
  nifti_builder q(false, {3, 2, 1}, 2, 8);
  q.i16(252, 1);
  q.f32(76, -1);
  q.f32(268, 10);
  q.f32(272, -5);
  q.f32(276, 0.5f);
  q.b[123] = 1;
  put("nifti", "u1_qform_3x2x1.nii", q.with<std::uint8_t>({0, 1, 2, 128, 254, 255}));

  // Big-endian float32 with a flipped, permuted sform.
  nifti_builder be(true, {2, 3, 1}, 16, 32);
  be.sform({{{0, 0, 3, 1}, {0, -2, 0, 4}, {1.5f, 0, 0, -2}}});
  put("nifti", "f4_be_sform_2x3x1.nii", be.with<float>({1, 2, 3, 4, 5, 6}));

  // float64 out of float range (a range error read as float), int32, 4-d.
  nifti_builder big(false, {2, 1, 1}, 64, 64);
  put("nifti", "f8_huge_2x1x1.nii", big.with<double>({1e300, -1}));
  nifti_builder i32(false, {1, 2, 2}, 8, 32);
  i32.i16(40, 4);
  put("nifti", "i4_4d_1x2x2.nii", i32.with<std::int32_t>({-7, 0, 7, 2147483647}));

  // Corrupt: truncated data, "ni1" magic, 4-d with 2 volumes, oblique
  // sform, bitpix mismatch.
  put("nifti", "bad_truncated.nii",
      truncated(nifti_written(f24, image_geometry({2, 3, 4}, {1, 1, 1}, {0, 0, 0})), 5));
  nifti_builder ni1(false, {2, 1, 1}, 16, 32);
  std::memcpy(&ni1.b[344], "ni1\0", 4);
  put("nifti", "bad_magic_ni1.nii", ni1.with<float>({1, 2}));
  nifti_builder vol(false, {2, 1, 1}, 16, 32);
  vol.i16(40, 4);
  vol.i16(48, 2);
  put("nifti", "bad_two_volumes.nii", vol.with<float>({1, 2, 3, 4}));
  nifti_builder obl(false, {2, 2, 1}, 16, 32);
  obl.sform({{{1, 0.5f, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}});
  put("nifti", "bad_oblique.nii", obl.with<float>({1, 2, 3, 4}));
  nifti_builder bp(false, {2, 1, 1}, 16, 16);
  put("nifti", "bad_bitpix.nii", bp.with<float>({1, 2}));
}

// ------------------------------------------------------------- list-mode --

bytes listmode_written(const std::vector<resproj::listmode_event> &ev) {
  const std::string tmp = out_path("listmode", ".tmp.lm");
  io::write_listmode_file(tmp, span<const resproj::listmode_event>(ev.data(), ev.size()));
  bytes b = slurp(tmp);
  fs::remove(tmp);
  return b;
}

void make_listmode() {
  using resproj::listmode_event;
  put("listmode", "three_events.lm",
      listmode_written({listmode_event::make(0, 5, 2), listmode_event::make(15, 3, 0),
                        listmode_event::make(7, 8, 4)}));
  put("listmode", "one_event.lm", listmode_written({listmode_event::make(1, 2, 1)}));
  // Out of range for 16 detectors / 5 bins: detector 16, bin -1, detector
  // 2^32 - 1, detector 2^31.
  put("listmode", "invalid_events.lm",
      listmode_written({listmode_event::make(16, 0, 0), listmode_event::make(1, 2, -1),
                        listmode_event::make(0xffffffffu, 1, 1),
                        listmode_event::make(3, 0x80000000u, 4)}));
  put("listmode", "bad_truncated.lm",
      truncated(
          listmode_written({listmode_event::make(0, 1, 0), listmode_event::make(2, 3, 1),
                            listmode_event::make(4, 5, 2)}),
          5));
}

// ------------------------------------------------------------------- raw --

/// Prefix of fuzz_raw.cpp: type index, flags, count, offset.
bytes raw_input(unsigned type, unsigned flags, unsigned count, unsigned offset,
                const bytes &file) {
  bytes b = {
      static_cast<unsigned char>(type),          static_cast<unsigned char>(flags),
      static_cast<unsigned char>(count & 0xff),  static_cast<unsigned char>(count >> 8),
      static_cast<unsigned char>(offset & 0xff), static_cast<unsigned char>(offset >> 8)};
  b.insert(b.end(), file.begin(), file.end());
  return b;
}

void make_raw() {
  bytes file(64);
  for (std::size_t i = 0; i < file.size(); ++i)
    file[i] = static_cast<unsigned char>(i * 37 + 11);
  put("raw", "f4_6_at0.bin",
      raw_input(8, 0, 6, 0, bytes(file.begin(), file.begin() + 24)));
  put("raw", "i2_3_at4.bin",
      raw_input(3, 0, 3, 4, bytes(file.begin(), file.begin() + 16)));
  put("raw", "f8_2_at8_longer.bin", raw_input(9, 0, 2, 8, file));
  put("raw", "u1_64.bin", raw_input(0, 0, 64, 0, file));
  put("raw", "u8_0.bin", raw_input(6, 0, 0, 0, bytes(file.begin(), file.begin() + 8)));
  put("raw", "bad_short.bin",
      raw_input(5, 0, 5, 0, bytes(file.begin(), file.begin() + 19)));
  put("raw", "bad_offset.bin", raw_input(4, 0, 1, 100, file));
  put("raw", "bad_huge_count.bin", raw_input(7, 1, 1, 0, file));  // count 2^63 - 1
  put("raw", "bad_huge_offset.bin", raw_input(1, 2, 1, 1, file)); // offset 2^63 - 1
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: make_corpus DIR (writes DIR/{npy,nifti,listmode,raw}/...)\n";
    return 2;
  }
  g_dir = argv[1];
  try {
    make_npy();
    make_nifti();
    make_listmode();
    make_raw();
  } catch (const std::exception &e) {
    std::cerr << "make_corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
