// io::read_nifti / write_nifti: single-file NIfTI-1 round trips (axis mapping
// NIfTI dim[1] = resproj axis 2), hand-built headers in either byte order,
// scaling, flipped axes, strict rejection of truncated, corrupt, lying or
// oblique headers, of values out of the destination's range, of null
// destinations and of FIFOs, with the destination left untouched; writes
// that fail leave the old file as it was.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "common/files.hpp"
#include "io/special_files.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/io/nifti.hpp"

namespace {

namespace io = resproj::io;
using resproj::image_geometry;
using resproj::span;

using TempDir = resproj_test::temp_dir;

/// Builds a NIfTI-1 file byte by byte, in little- or big-endian order.
struct nii_builder {
  bool big = false;
  std::vector<unsigned char> b = std::vector<unsigned char>(352, 0);

  template <class U> void put(std::size_t off, U v) {
    unsigned char t[sizeof(U)];
    std::memcpy(t, &v, sizeof(U));
    if (big != (io::host_byte_order() == io::byte_order::big))
      io::byteswap_elements(t, 1, sizeof(U));
    if (b.size() < off + sizeof(U))
      b.resize(off + sizeof(U), 0);
    std::memcpy(b.data() + off, t, sizeof(U));
  }
  void i16(std::size_t off, int v) { put(off, std::int16_t(v)); }
  void f32(std::size_t off, double v) { put(off, float(v)); }

  /// A valid header for dims (x, y, z) = (nx, ny, nz), datatype code/bitpix,
  /// sform diag(sx, sy, sz) + (tx, ty, tz).
  nii_builder(bool big_endian, int nx, int ny, int nz, int code, int bitpix)
      : big(big_endian) {
    put(0, std::int32_t(348));
    i16(40, 3);
    i16(42, nx);
    i16(44, ny);
    i16(46, nz);
    for (int d = 4; d <= 7; ++d)
      i16(40 + 2 * d, 1);
    i16(70, code);
    i16(72, bitpix);
    f32(76, 1);
    f32(80, 1);
    f32(84, 1);
    f32(88, 1);
    f32(108, 352);
    b[123] = 2;
    std::memcpy(b.data() + 344, "n+1\0", 4);
  }
  void sform(std::array<double, 3> s, std::array<double, 3> t) {
    i16(254, 1);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        f32(280 + 16 * r + 4 * c, c == r ? s[r] : c == 3 ? t[r] : 0.0);
  }
  template <class S> void data(const std::vector<S> &v) {
    b.resize(352);
    for (std::size_t i = 0; i < v.size(); ++i)
      put(352 + i * sizeof(S), v[i]);
  }
};

template <class T> std::vector<T> ramp(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = T(0.25 * double(i) - 3.0);
  return v;
}

/// Expects io_error whose message names `path` and contains `part`.
template <class F>
void expect_io_error(F &&f, const std::string &path, const std::string &part) {
  try {
    f();
    ADD_FAILURE() << "no io_error (expected \"" << part << "\")";
  } catch (const resproj::io_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos)
        << "\"" << what << "\" lacks \"" << part << "\"";
  } catch (const std::exception &e) {
    ADD_FAILURE() << "other exception: " << e.what();
  }
}

template <class T> void round_trip(const image_geometry &g) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  const auto data = ramp<T>(std::size_t(g.num_voxels()));
  io::write_nifti<T>(path, span<const T>(data.data(), data.size()), g);

  const auto info = io::read_nifti_header(path);
  EXPECT_EQ(info.shape, g.shape());
  EXPECT_EQ(info.type, io::dtype_of_v<T>);
  EXPECT_EQ(info.vox_offset, 352u);
  EXPECT_EQ(info.sform_code, 1);
  EXPECT_EQ(info.qform_code, 1);
  EXPECT_FALSE(info.scaled);

  std::vector<T> back(data.size(), T(-99));
  image_geometry gback({1, 1, 1}, {1, 1, 1}, {0, 0, 0});
  io::read_nifti<T>(path, span<T>(back.data(), back.size()), &gback);
  EXPECT_EQ(back, data);
  EXPECT_EQ(gback, g);
  EXPECT_EQ(io::read_nifti_geometry<T>(path), g);

  // The file layout: NIfTI dim[1] = n2 (fastest), pixdim[1] = s2; the
  // affine takes data axis i (resproj axis 2, the scanner axis) to world z
  // (superior) and k (resproj axis 0) to world x, with translation
  // (origin[0], origin[1], origin[2]); data bytes are the C-ordered array
  // as is.
  const auto bytes = resproj_test::read_byte_vector(path);
  ASSERT_EQ(bytes.size(), 352 + data.size() * sizeof(T));
  std::int16_t dim1, dim3;
  float pixdim1, pixdim3, tx, tz, zi, xk, xi, zk;
  std::memcpy(&dim1, &bytes[42], 2);
  std::memcpy(&dim3, &bytes[46], 2);
  std::memcpy(&pixdim1, &bytes[80], 4);
  std::memcpy(&pixdim3, &bytes[88], 4);
  std::memcpy(&tx, &bytes[280 + 12], 4);
  std::memcpy(&tz, &bytes[312 + 12], 4);
  std::memcpy(&zi, &bytes[312], 4);     // srow_z[0]
  std::memcpy(&xk, &bytes[280 + 8], 4); // srow_x[2]
  std::memcpy(&xi, &bytes[280], 4);     // srow_x[0]
  std::memcpy(&zk, &bytes[312 + 8], 4); // srow_z[2]
  EXPECT_EQ(dim1, g.shape()[2]);
  EXPECT_EQ(dim3, g.shape()[0]);
  EXPECT_EQ(pixdim1, float(g.voxel_size()[2]));
  EXPECT_EQ(pixdim3, float(g.voxel_size()[0]));
  EXPECT_EQ(tx, float(g.origin()[0]));
  EXPECT_EQ(tz, float(g.origin()[2]));
  EXPECT_EQ(zi, float(g.voxel_size()[2]));
  EXPECT_EQ(xk, float(g.voxel_size()[0]));
  EXPECT_EQ(xi, 0.0f);
  EXPECT_EQ(zk, 0.0f);
  // The qform says the same: with the sform switched off the geometry reads
  // back alike (to float rounding of the rotation).
  auto qonly = bytes;
  const std::int16_t zero = 0;
  std::memcpy(&qonly[254], &zero, 2);
  resproj_test::write_bytes(path + ".q.nii", std::string(qonly.begin(), qonly.end()));
  const auto gq = io::read_nifti_geometry<T>(path + ".q.nii");
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(gq.voxel_size()[k], g.voxel_size()[k], 1e-6 * g.voxel_size()[k]);
    EXPECT_NEAR(gq.origin()[k], g.origin()[k], 1e-6 * (1 + std::fabs(g.origin()[k])));
  }
  EXPECT_EQ(0, std::memcmp(&bytes[352], data.data(), data.size() * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(&bytes[344], "n+1\0", 4));
}

TEST(Nifti, RoundTripFloatAnisotropicNoncentredNoncubic) {
  round_trip<float>(image_geometry({3, 5, 7}, {2.0, 1.5, 0.75}, {-3.25, 10.5, 100.0}));
}

TEST(Nifti, RoundTripDouble) {
  round_trip<double>(image_geometry({4, 1, 6}, {0.5, 3.0, 1.25}, {7.0, -2.5, 0.125}));
  round_trip<double>(image_geometry::centred({9, 8, 2}, {4.0, 2.0, 2.0}));
}

TEST(Nifti, FloatFileReadAsDouble) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  const image_geometry g({2, 3, 4}, {1.0, 2.0, 3.0}, {0.5, 0.5, 0.5});
  const auto data = ramp<float>(24);
  io::write_nifti<float>(path, span<const float>(data.data(), data.size()), g);
  std::vector<double> back(24);
  io::read_nifti<double>(path, span<double>(back.data(), back.size()), nullptr);
  for (std::size_t i = 0; i < 24; ++i)
    EXPECT_EQ(back[i], double(data[i]));
}

TEST(Nifti, HandBuiltHeaderInBothByteOrders) {
  for (bool big : {false, true}) {
    TempDir dir;
    const std::string path = dir.file("hand.nii");
    // (x, y, z) = (4, 3, 2): resproj shape (2, 3, 4).
    nii_builder h(big, 4, 3, 2, 16, 32);
    h.sform({1.5, 2.0, 4.0}, {-10.0, 20.0, 5.0});
    std::vector<float> vals(24);
    for (int i = 0; i < 24; ++i)
      vals[i] = float(i) + 0.5f;
    h.data(vals);
    resproj_test::write_bytes(path, h.b);

    const auto info = io::read_nifti_header(path);
    EXPECT_EQ(info.order, big ? io::byte_order::big : io::byte_order::little);
    EXPECT_EQ(info.geometry_source, "sform");
    std::vector<float> out(24, -1.0f);
    image_geometry g({1, 1, 1}, {1, 1, 1}, {0, 0, 0});
    io::read_nifti<float>(path, span<float>(out.data(), out.size()), &g);
    EXPECT_EQ(out, vals);
    EXPECT_EQ(g.shape(), (std::array<std::int64_t, 3>{2, 3, 4}));
    EXPECT_EQ(g.voxel_size(), (std::array<double, 3>{4.0, 2.0, 1.5}));
    EXPECT_EQ(g.origin(), (std::array<double, 3>{5.0, 20.0, -10.0}));
  }
}

TEST(Nifti, Int16WithScalingBigEndianAnd4dSingleton) {
  TempDir dir;
  const std::string path = dir.file("i16.nii");
  nii_builder h(true, 3, 2, 2, 4, 16);
  h.i16(40, 4); // dim[0] = 4 with dim[4] = 1
  h.sform({1, 1, 1}, {0, 0, 0});
  h.f32(112, 0.5);  // scl_slope
  h.f32(116, 10.0); // scl_inter
  std::vector<std::int16_t> vals(12);
  for (int i = 0; i < 12; ++i)
    vals[i] = std::int16_t(i * 100 - 500);
  h.data(vals);
  resproj_test::write_bytes(path, h.b);
  std::vector<double> out(12);
  io::read_nifti<double>(path, span<double>(out.data(), out.size()), nullptr);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(out[i], 0.5 * vals[i] + 10.0);

  // slope 0 = no scaling (inter ignored).
  h.f32(112, 0.0);
  resproj_test::write_bytes(path, h.b);
  io::read_nifti<double>(path, span<double>(out.data(), out.size()), nullptr);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(out[i], double(vals[i]));
}

TEST(Nifti, QformAndNegativeAxesAreFlipped) {
  TempDir dir;
  const std::string path = dir.file("q.nii");
  // qform: 180 degrees about x (b = 1): R = diag(1, -1, -1); qfac = -1 flips z
  // back: affine diag(2, -3, +4), offset (1, 2, 3).
  nii_builder h(false, 2, 3, 2, 64, 64);
  h.i16(252, 1);
  h.f32(76, -1); // qfac
  h.f32(80, 2);
  h.f32(84, 3);
  h.f32(88, 4);
  h.f32(256, 1.0);
  h.f32(268, 1);
  h.f32(272, 2);
  h.f32(276, 3);
  std::vector<double> vals(12);
  for (int i = 0; i < 12; ++i)
    vals[i] = i;
  h.data(vals);
  resproj_test::write_bytes(path, h.b);
  const auto info = io::read_nifti_header(path);
  EXPECT_EQ(info.geometry_source, "qform");
  EXPECT_EQ(info.flipped, (std::array<bool, 3>{false, true, false}));
  std::vector<double> out(12);
  image_geometry g({1, 1, 1}, {1, 1, 1}, {0, 0, 0});
  io::read_nifti<double>(path, span<double>(out.data(), out.size()), &g);
  EXPECT_EQ(g.voxel_size(), (std::array<double, 3>{4.0, 3.0, 2.0}));
  // y axis (resproj 1) reversed: origin = 2 - 3 * (3 - 1) = -4.
  EXPECT_EQ(g.origin(), (std::array<double, 3>{3.0, -4.0, 1.0}));
  for (int i0 = 0; i0 < 2; ++i0)
    for (int i1 = 0; i1 < 3; ++i1)
      for (int i2 = 0; i2 < 2; ++i2)
        EXPECT_EQ(out[(i0 * 3 + i1) * 2 + i2], vals[(i0 * 3 + (2 - i1)) * 2 + i2]);
  // The same voxel is at the same world position either way: file voxel
  // (i=1, j=0, k=1) is at y = 2 + (-3) * 0 = 2; in resproj it is [1][2][1],
  // y = origin[1] + 2 * 3 = 2.
  EXPECT_EQ(g.origin()[1] + 2 * g.voxel_size()[1], 2.0);
}

TEST(Nifti, PixdimOnlyAndUnitConversion) {
  TempDir dir;
  const std::string path = dir.file("p.nii");
  nii_builder h(false, 2, 2, 2, 16, 32);
  h.f32(80, 0.001); // metres
  h.f32(84, 0.002);
  h.f32(88, 0.004);
  h.b[123] = 1; // NIFTI_UNITS_METER
  h.data(std::vector<float>(8, 1.0f));
  resproj_test::write_bytes(path, h.b);
  const auto g = io::read_nifti_geometry<float>(path);
  EXPECT_NEAR(g.voxel_size()[0], 4.0, 1e-6);
  EXPECT_NEAR(g.voxel_size()[2], 1.0, 1e-6);
  EXPECT_EQ(g.origin(), (std::array<double, 3>{0, 0, 0}));
}

/// A valid little-endian float file with 2x3x4 voxels, for corruption.
nii_builder valid_header() {
  nii_builder h(false, 4, 3, 2, 16, 32);
  h.sform({1, 1, 1}, {0, 0, 0});
  h.data(std::vector<float>(24, 1.0f));
  return h;
}

/// Writes `bytes`, checks that reading throws io_error naming the file and
/// `part`, and that dst and geometry are untouched.
void expect_rejected(const std::vector<unsigned char> &bytes, const std::string &part) {
  TempDir dir;
  const std::string path = dir.file("bad.nii");
  resproj_test::write_bytes(path, bytes);
  std::vector<float> dst(24, 42.0f);
  const image_geometry g0({7, 7, 7}, {1, 1, 1}, {0, 0, 0});
  image_geometry g = g0;
  expect_io_error([&] { io::read_nifti<float>(path, span<float>(dst.data(), 24), &g); },
                  path, part);
  expect_io_error([&] { io::read_nifti_header(path); }, path, part);
  for (float v : dst)
    ASSERT_EQ(v, 42.0f) << "destination modified";
  EXPECT_EQ(g, g0);
}

TEST(Nifti, RejectsTruncatedCorruptAndLyingHeaders) {
  const auto good = valid_header().b;
  {
    TempDir dir;
    const std::string path = dir.file("good.nii");
    resproj_test::write_bytes(path, good);
    EXPECT_NO_THROW(io::read_nifti_header(path));
  }
  expect_rejected({}, "truncated header");
  expect_rejected(std::vector<unsigned char>(good.begin(), good.begin() + 200),
                  "truncated header");
  // Data shorter than the header claims (one byte missing).
  expect_rejected(std::vector<unsigned char>(good.begin(), good.end() - 1),
                  "96 data bytes");
  {
    auto h = valid_header();
    h.put(0, std::int32_t(540));
    expect_rejected(h.b, "sizeof_hdr");
    h.put(0, std::int32_t(1234));
    expect_rejected(h.b, "sizeof_hdr");
  }
  {
    auto h = valid_header();
    std::memcpy(h.b.data() + 344, "ni1\0", 4);
    expect_rejected(h.b, ".hdr/.img");
    std::memcpy(h.b.data() + 344, "abc\0", 4);
    expect_rejected(h.b, "magic");
  }
  {
    auto h = valid_header();
    h.i16(40, 2);
    expect_rejected(h.b, "dim[0]");
    h.i16(40, 8);
    expect_rejected(h.b, "dim[0]");
    h.i16(40, 4);
    h.i16(48, 5); // dim[4] = 5 volumes
    expect_rejected(h.b, "dim[4]");
  }
  {
    auto h = valid_header();
    h.i16(44, 0);
    expect_rejected(h.b, "dim[2]");
    h.i16(44, -3);
    expect_rejected(h.b, "dim[2]");
  }
  {
    auto h = valid_header();
    h.i16(46, 30000); // lying: claims far more data than the file has
    expect_rejected(h.b, "but the file has");
  }
  {
    auto h = valid_header();
    h.i16(70, 32); // complex64: unsupported
    expect_rejected(h.b, "datatype");
    h.i16(70, 16);
    h.i16(72, 64);
    expect_rejected(h.b, "bitpix");
  }
  {
    auto h = valid_header();
    h.f32(108, 348);
    expect_rejected(h.b, "vox_offset");
    h.f32(108, 352.5);
    expect_rejected(h.b, "vox_offset");
    h.f32(108, 356); // 4 bytes more than the file holds
    expect_rejected(h.b, "vox_offset");
  }
  {
    auto h = valid_header();
    h.f32(112, INFINITY);
    expect_rejected(h.b, "scl_slope");
  }
  {
    auto h = valid_header();
    h.i16(254, 0); // no sform, qform 0: pixdim used; make one invalid
    h.f32(84, 0);
    expect_rejected(h.b, "pixdim[2]");
  }
}

// An affine that permutes the axes: each data axis keeps the voxel size and
// translation of the world axis it runs along.
TEST(Nifti, PermutedAffinesAreReadByDataAxis) {
  TempDir dir;
  const std::string path = dir.file("p.nii");
  auto h = valid_header(); // 4 x 3 x 2 (i, j, k)
  h.sform({0, 0, 4}, {10, 20, 30});
  h.f32(280 + 4, 3.0);  // srow_x: j -> x, size 3
  h.f32(296 + 0, -2.0); // srow_y: i -> y, size 2, reversed
  resproj_test::write_bytes(path, h.b);
  const auto info = io::read_nifti_header(path);
  EXPECT_EQ(info.flipped, (std::array<bool, 3>{false, false, true}));
  const auto g = io::read_nifti_geometry<float>(path);
  EXPECT_EQ(g.shape(), (std::array<std::int64_t, 3>{2, 3, 4}));
  EXPECT_EQ(g.voxel_size(), (std::array<double, 3>{4.0, 3.0, 2.0}));
  // i reversed: origin = 20 - 2 * (4 - 1) = 14.
  EXPECT_EQ(g.origin(), (std::array<double, 3>{30.0, 10.0, 14.0}));
}

TEST(Nifti, RejectsObliqueAndDegenerateAffines) {
  {
    auto h = valid_header();
    h.f32(280 + 4, 0.3); // srow_x[1]: shear / rotation
    expect_rejected(h.b, "oblique");
  }
  {
    // Data axes i and j both along world x.
    auto h = valid_header();
    h.sform({1, 0, 1}, {0, 0, 0});
    h.f32(280 + 4, 2.0);
    expect_rejected(h.b, "not axis-aligned");
  }
  {
    // A zero column.
    auto h = valid_header();
    h.sform({1, 0, 1}, {0, 0, 0});
    expect_rejected(h.b, "not axis-aligned");
  }
  {
    // qform with a 30-degree rotation about z.
    auto h = valid_header();
    h.i16(254, 0);
    h.i16(252, 1);
    h.f32(264, std::sin(M_PI / 12)); // quatern_d
    expect_rejected(h.b, "oblique");
  }
}

TEST(Nifti, WrongDestinationSizeIsInvalidArgumentAndUntouched) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  resproj_test::write_bytes(path, valid_header().b);
  std::vector<float> dst(23, 5.0f);
  EXPECT_THROW(io::read_nifti<float>(path, span<float>(dst.data(), dst.size()), nullptr),
               resproj::invalid_argument);
  for (float v : dst)
    EXPECT_EQ(v, 5.0f);
}

TEST(Nifti, MissingFileAndDirectory) {
  TempDir dir;
  const std::string missing = dir.path() + "/none.nii";
  expect_io_error([&] { io::read_nifti_header(missing); }, missing, "cannot open");
  expect_io_error([&] { io::read_nifti_header(dir.path()); }, dir.path(), "directory");
}

TEST(Nifti, WriteRejectsBadArguments) {
  TempDir dir;
  const std::string path = dir.file("w.nii");
  const image_geometry g({2, 2, 2}, {1, 1, 1}, {0, 0, 0});
  std::vector<float> small(7);
  EXPECT_THROW(io::write_nifti<float>(path, span<const float>(small.data(), 7), g),
               resproj::invalid_argument);
  const image_geometry big({40000, 1, 1}, {1, 1, 1}, {0, 0, 0});
  std::vector<float> v(40000);
  EXPECT_THROW(io::write_nifti<float>(path, span<const float>(v.data(), v.size()), big),
               resproj::invalid_argument);
  const image_geometry huge({1, 1, 1}, {1e300, 1, 1}, {0, 0, 0});
  EXPECT_THROW(io::write_nifti<float>(path, span<const float>(v.data(), 1), huge),
               resproj::invalid_argument);
  EXPECT_THROW(io::write_nifti<float>(dir.path(), span<const float>(v.data(), 8), g),
               resproj::io_error);
}

// ------------------------------------------------ bad inputs and targets --

TEST(Nifti, NullDestinationIsInvalidArgument) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  resproj_test::write_bytes(path, valid_header().b);
  resproj_test::expect_invalid(
      [&] { io::read_nifti<float>(path, span<float>(nullptr, 24)); }, "dst");
  resproj_test::expect_invalid(
      [&] { io::read_nifti<double>(path, span<double>(nullptr, 24)); }, "dst");
}

TEST(Nifti, FifoIsRejectedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.nii");
  resproj_test::make_fifo(fifo);
  std::vector<float> dst(24, 42.0f);
  resproj_test::expect_prompt_io_error(fifo, [&] { (void)io::read_nifti_header(fifo); },
                                       {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::read_nifti<float>(fifo, span<float>(dst.data(), dst.size())); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(fifo, [&] { (void)io::read_nifti_geometry(fifo); },
                                       {fifo, "not a regular file"});
  EXPECT_EQ(dst, std::vector<float>(24, 42.0f));
  // Writing to a FIFO is refused as well, and the FIFO stays.
  const image_geometry g({2, 3, 4}, {1, 1, 1}, {0, 0, 0});
  resproj_test::expect_prompt_io_error(
      fifo,
      [&] { io::write_nifti<float>(fifo, span<const float>(dst.data(), dst.size()), g); },
      {fifo, "not a regular file"});
  EXPECT_TRUE(resproj_test::is_fifo(fifo));
}

TEST(Nifti, RejectedWriteLeavesTheExistingFileUntouched) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  const image_geometry g({2, 3, 4}, {1, 1, 1}, {0, 0, 0});
  const auto data = ramp<float>(24);
  io::write_nifti<float>(path, span<const float>(data.data(), data.size()), g);
  const auto before = resproj_test::read_byte_vector(path);
  ASSERT_EQ(before.size(), 352u + 24 * sizeof(float));
  resproj_test::expect_invalid(
      [&] { io::write_nifti<float>(path, span<const float>(nullptr, 24), g); }, "data");
  EXPECT_EQ(resproj_test::read_byte_vector(path), before);
  resproj_test::expect_invalid(
      [&] { io::write_nifti<float>(path, span<const float>(data.data(), 23), g); },
      "data");
  const image_geometry huge({2, 3, 4}, {1e300, 1, 1}, {0, 0, 0});
  resproj_test::expect_invalid(
      [&] { io::write_nifti<float>(path, span<const float>(data.data(), 24), huge); },
      "geometry.voxel_size[0]");
  EXPECT_EQ(resproj_test::read_byte_vector(path), before);
  // Nor is a missing file created.
  const std::string fresh = dir.file("fresh.nii");
  resproj_test::expect_invalid(
      [&] { io::write_nifti<double>(fresh, span<const double>(nullptr, 24), g); },
      "data");
  EXPECT_EQ(resproj_test::dir_entries(dir.path()), std::set<std::string>{"img.nii"});
}

TEST(Nifti, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("img.nii");
  const image_geometry g({2, 3, 4}, {1, 1, 1}, {0, 0, 0});
  const auto data = ramp<float>(24);
  io::write_nifti<float>(path, span<const float>(data.data(), data.size()), g);
  const auto before = resproj_test::read_byte_vector(path);
  const image_geometry big({32, 32, 32}, {1, 1, 1}, {0, 0, 0});
  const std::vector<float> v(32768, 1.5f);
  {
    resproj_test::file_size_limit limit(4096); // the write fails part-way
    expect_io_error(
        [&] { io::write_nifti<float>(path, span<const float>(v.data(), v.size()), big); },
        path, "failed");
  }
  EXPECT_EQ(resproj_test::read_byte_vector(path), before);
  EXPECT_EQ(resproj_test::dir_entries(dir.path()), std::set<std::string>{"img.nii"});
  // Without the limit the same write replaces the file.
  io::write_nifti<float>(path, span<const float>(v.data(), v.size()), big);
  EXPECT_EQ(io::read_nifti_geometry(path), big);
  EXPECT_EQ(resproj_test::dir_entries(dir.path()), std::set<std::string>{"img.nii"});
}

TEST(Nifti, ReplacingKeepsPermissionsAndFollowsSymbolicLinks) {
  TempDir dir;
  const std::string path = dir.file("img.nii"), link = dir.file("link.nii");
  const image_geometry g({2, 3, 4}, {1, 1, 1}, {0, 0, 0});
  const auto a = ramp<double>(24);
  io::write_nifti<double>(path, span<const double>(a.data(), a.size()), g);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_EQ(::symlink("img.nii", link.c_str()), 0);
  std::vector<double> b(a.rbegin(), a.rend());
  io::write_nifti<double>(link, span<const double>(b.data(), b.size()), g);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(resproj_test::file_mode(path), 0640u);
  std::vector<double> back(24);
  io::read_nifti<double>(path, span<double>(back.data(), back.size()));
  EXPECT_EQ(back, b);
}

/// Writes `bytes` (a 2x3x4 image) and expects reading it into `T` to throw
/// io_error naming the file and every one of `parts`, with the destination
/// and the geometry untouched.
template <class T>
void expect_out_of_range(const std::vector<unsigned char> &bytes,
                         std::initializer_list<std::string> parts) {
  TempDir dir;
  const std::string path = dir.file("range.nii");
  resproj_test::write_bytes(path, bytes);
  std::vector<T> dst(24, T(42));
  const image_geometry g0({7, 7, 7}, {1, 1, 1}, {0, 0, 0});
  image_geometry g = g0;
  for (const auto &part : parts)
    expect_io_error([&] { io::read_nifti<T>(path, span<T>(dst.data(), 24), &g); }, path,
                    part);
  for (T v : dst)
    ASSERT_EQ(v, T(42)) << "destination modified";
  EXPECT_EQ(g, g0);
}

/// Reads `bytes` (a 2x3x4 image) into `T`.
template <class T> std::vector<T> read_bytes_as(const std::vector<unsigned char> &bytes) {
  TempDir dir;
  const std::string path = dir.file("ok.nii");
  resproj_test::write_bytes(path, bytes);
  std::vector<T> out(24);
  io::read_nifti<T>(path, span<T>(out.data(), out.size()));
  return out;
}

TEST(Nifti, ValuesOutOfTheDestinationRangeAreIoError) {
  for (bool big : {false, true}) {
    // float64 data beyond float: fine as double, rejected as float.
    for (double huge : {1e300, -1e300, 1e39}) {
      nii_builder h(big, 4, 3, 2, 64, 64);
      h.sform({1, 1, 1}, {0, 0, 0});
      std::vector<double> vals(24, 0.5);
      vals[5] = huge;
      h.data(vals);
      EXPECT_EQ(read_bytes_as<double>(h.b)[5], huge);
      expect_out_of_range<float>(h.b, {"voxel data", "offset 392", "float32"});
    }
    // Scaling beyond float: float data 1e38 with scl_slope 1e10.
    {
      nii_builder h(big, 4, 3, 2, 16, 32);
      h.sform({1, 1, 1}, {0, 0, 0});
      h.f32(112, 1e10);
      std::vector<float> vals(24, 1.0f);
      vals[7] = 1e38f;
      h.data(vals);
      EXPECT_EQ(read_bytes_as<double>(h.b)[7], double(1e10f) * double(1e38f));
      expect_out_of_range<float>(h.b, {"scl_slope", "offset 380"});
    }
    // Scaling beyond double: float64 data 1e300 with scl_slope 1e10.
    {
      nii_builder h(big, 4, 3, 2, 64, 64);
      h.sform({1, 1, 1}, {0, 0, 0});
      h.f32(112, 1e10);
      std::vector<double> vals(24, 1.0);
      vals[23] = 1e300;
      h.data(vals);
      expect_out_of_range<double>(h.b, {"scl_slope", "offset 536", "float64"});
      expect_out_of_range<float>(h.b, {"scl_slope"});
    }
    // scl_inter alone pushing a value out of range.
    {
      nii_builder h(big, 4, 3, 2, 16, 32);
      h.sform({1, 1, 1}, {0, 0, 0});
      h.f32(112, 1.0);
      h.f32(116, 3e38);
      std::vector<float> vals(24, -3e38f);
      vals[0] = 3e38f;
      h.data(vals);
      EXPECT_EQ(read_bytes_as<double>(h.b)[0], double(3e38f) + double(3e38f));
      expect_out_of_range<float>(h.b, {"scl_inter", "offset 352"});
    }
    // Integers scaled beyond float.
    {
      nii_builder h(big, 4, 3, 2, 4, 16);
      h.sform({1, 1, 1}, {0, 0, 0});
      h.f32(112, 3e38);
      std::vector<std::int16_t> vals(24, 0);
      vals[1] = -2;
      h.data(vals);
      EXPECT_EQ(read_bytes_as<double>(h.b)[1], -2.0 * double(3e38f));
      expect_out_of_range<float>(h.b, {"scl_slope", "offset 354"});
    }
  }
}

TEST(Nifti, StoredInfinitiesAndNanAreReadAsTheyAre) {
  nii_builder h(false, 4, 3, 2, 64, 64);
  h.sform({1, 1, 1}, {0, 0, 0});
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> vals(24, 2.0);
  vals[0] = inf;
  vals[1] = -inf;
  vals[2] = std::numeric_limits<double>::quiet_NaN();
  vals[3] = double(std::numeric_limits<float>::max()); // the largest float fits
  vals[4] = -double(std::numeric_limits<float>::max());
  h.data(vals);
  const auto f = read_bytes_as<float>(h.b);
  EXPECT_EQ(f[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], std::numeric_limits<float>::max());
  EXPECT_EQ(f[4], std::numeric_limits<float>::lowest());
  EXPECT_EQ(f[23], 2.0f);
  // With scaling too.
  h.f32(112, 2.0);
  const auto d = read_bytes_as<double>(h.b);
  EXPECT_EQ(d[0], inf);
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(d[23], 4.0);
}

} // namespace
