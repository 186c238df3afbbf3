// Tests of io/npy.hpp: round trips for every supported dtype, the exact
// bytes NumPy writes, headers NumPy (and older NumPy) writes, big-endian
// data, and strict rejection of corrupt, lying or unsupported headers with
// the destination left untouched.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "io/special_files.hpp"
#include "resproj/io/npy.hpp"

namespace io = resproj::io;
namespace fs = std::filesystem;
using resproj::span;
using shape_t = std::vector<std::size_t>;

namespace {

using resproj_test::expect_invalid;
using resproj_test::expect_io_error;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

/// A .npy file image: magic, version, header length (or `lie_length` when
/// >= 0), `dict` padded NumPy-style to a multiple of 64 with a final
/// newline (unless `raw_header`, which is used verbatim), then `data`.
std::string make_npy(const std::string &dict, const std::string &data, int major = 1,
                     long long lie_length = -1, bool raw_header = false) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  if (!raw_header) {
    std::size_t total = prefix + dict.size() + 1;
    total = (total + 63) / 64 * 64;
    header = dict + std::string(total - prefix - dict.size() - 1, ' ') + "\n";
  }
  const unsigned long long len =
      lie_length >= 0 ? static_cast<unsigned long long>(lie_length) : header.size();
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + header + data;
}

std::string dict_of(const std::string &descr, const std::string &shape,
                    const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran +
         ", 'shape': " + shape + ", }";
}

/// Little-endian bytes of float values.
std::string f32_bytes(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) {
    unsigned char b[4];
    io::store_little_endian(v, b);
    s.append(reinterpret_cast<const char *>(b), 4);
  }
  return s;
}

/// Writes `file` to a path and expects read_npy<float> into a sentinel-
/// filled destination of `n` elements to throw io_error mentioning
/// `parts`, with the destination untouched.
void expect_rejected(const temp_dir &tmp, const std::string &file, std::size_t n,
                     std::initializer_list<std::string> parts) {
  const std::string path = tmp.file("bad.npy");
  write_bytes(path, file);
  std::vector<float> dst(n, 42.0f);
  expect_io_error([&] { io::read_npy(path, span<float>(dst.data(), dst.size())); },
                  parts);
  EXPECT_EQ(dst, std::vector<float>(n, 42.0f));
}

} // namespace

// ------------------------------------------------------------- round trip --

template <class T> class IoNpyTyped : public ::testing::Test {};
using npy_types = ::testing::Types<float, double, std::int8_t, std::uint8_t, std::int16_t,
                                   std::uint16_t, std::int32_t, std::uint32_t,
                                   std::int64_t, std::uint64_t>;
/// Names typed tests after the dtype ("float32", ...).
struct dtype_test_names {
  template <class T> static std::string GetName(int) {
    return io::dtype_name(io::dtype_of_v<T>);
  }
};
TYPED_TEST_SUITE(IoNpyTyped, npy_types, dtype_test_names);

TYPED_TEST(IoNpyTyped, RoundTrip) {
  using T = TypeParam;
  temp_dir tmp;
  const std::string path = tmp.file("a.npy");
  for (const shape_t &shape : {shape_t{2, 3, 4}, shape_t{5}, shape_t{}, shape_t{0},
                               shape_t{3, 0, 2}, shape_t{1}, shape_t{1, 1, 7}}) {
    std::size_t n = 1;
    for (auto d : shape)
      n *= d;
    std::vector<T> src(n);
    for (std::size_t i = 0; i < n; ++i)
      src[i] = static_cast<T>(i % 100 + 1);
    if (n > 0)
      src[0] = std::numeric_limits<T>::max();
    io::write_npy(path, span<const T>(src.data(), n), shape);
    const io::npy_header h = io::read_npy_header(path);
    EXPECT_EQ(h.type, io::dtype_of_v<T>);
    EXPECT_EQ(h.order, io::byte_order::little);
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.shape, shape);
    EXPECT_EQ(h.descr, io::npy_descr(io::dtype_of_v<T>));
    EXPECT_EQ(h.data_offset % 64, 0u);
    EXPECT_EQ(h.num_elements(), n);
    EXPECT_EQ(io::file_size(path), h.data_offset + n * sizeof(T));
    std::vector<T> dst(n, T(42));
    io::read_npy(path, span<T>(dst.data(), n), shape);
    EXPECT_EQ(dst, src);
    io::npy_header h2;
    EXPECT_EQ(io::read_npy_vector<T>(path, &h2), src);
    EXPECT_EQ(h2.shape, shape);
  }
}

TEST(IoNpy, WritesTheBytesNumpyWrites) {
  temp_dir tmp;
  const std::string path = tmp.file("a.npy");
  const float v[3] = {1.0f, 2.0f, -0.5f};
  io::write_npy(path, span<const float>(v, 3), {3});
  const std::string bytes = read_bytes(path);
  // numpy.save(np.array([1, 2, -0.5], dtype='<f4')) gives exactly this.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                               std::string(128 - 10 - dict.size() - 1, ' ') + "\n" +
                               f32_bytes({1.0f, 2.0f, -0.5f});
  EXPECT_EQ(bytes, expected);
  // uint8 is written '|u1'; a 2-d shape as (2, 3); 0-d as ().
  const std::uint8_t b[6] = {1, 2, 3, 4, 5, 6};
  io::write_npy(path, span<const std::uint8_t>(b, 6), {2, 3});
  EXPECT_NE(read_bytes(path).find("{'descr': '|u1', 'fortran_order': False, 'shape': "
                                  "(2, 3), }"),
            std::string::npos);
  io::write_npy(path, span<const std::uint8_t>(b, 1), {});
  EXPECT_NE(read_bytes(path).find("'shape': (), }"), std::string::npos);
}

// ------------------------------------------------------ accepted variants --

TEST(IoNpy, ReadsHeadersNumpyAndOthersWrite) {
  temp_dir tmp;
  const std::string path = tmp.file("a.npy");
  const std::string data = f32_bytes({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  const char *dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", // NumPy
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",   // no comma
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
      "{'shape': (2L, 3L), 'fortran_order': False, 'descr': '<f4'}", // Python 2
      "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }",
  };
  for (const char *dict : dicts)
    for (int major : {1, 2, 3}) {
      write_bytes(path, make_npy(dict, data, major));
      std::vector<float> dst(6, 42.0f);
      const io::npy_header h = io::read_npy(path, span<float>(dst.data(), 6), {2, 3});
      EXPECT_EQ(h.major_version, major) << dict;
      EXPECT_EQ(dst, (std::vector<float>{1, 2, 3, 4, 5, 6})) << dict;
    }
  // A header padded to 16 bytes (NumPy before 1.9) is read as well.
  const std::string d16 = "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }";
  std::string hdr = d16;
  while ((10 + hdr.size() + 1) % 16 != 0)
    hdr += ' ';
  write_bytes(path, make_npy(hdr + "\n", data, 1, -1, true));
  EXPECT_EQ(io::read_npy_vector<float>(path).size(), 6u);
}

TEST(IoNpy, BigEndianIsConverted) {
  temp_dir tmp;
  const std::string path = tmp.file("be.npy");
  // >f4 1.0, -2.0
  write_bytes(path, make_npy(dict_of(">f4", "(2,)"),
                             std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8)));
  const io::npy_header h = io::read_npy_header(path);
  EXPECT_EQ(h.order, io::byte_order::big);
  EXPECT_EQ(io::read_npy_vector<float>(path), (std::vector<float>{1.0f, -2.0f}));
  // >i2 0x0102, -1 ; >u8 1
  write_bytes(path, make_npy(dict_of(">i2", "(2,)"), std::string("\x01\x02\xff\xff", 4)));
  EXPECT_EQ(io::read_npy_vector<std::int16_t>(path),
            (std::vector<std::int16_t>{0x0102, -1}));
  write_bytes(path, make_npy(dict_of(">u8", "()"), std::string("\0\0\0\0\0\0\0\x01", 8)));
  EXPECT_EQ(io::read_npy_vector<std::uint64_t>(path), (std::vector<std::uint64_t>{1}));
  // 1-byte types with any of the three order characters.
  for (const char *descr : {"|u1", "<u1", ">u1"}) {
    write_bytes(path, make_npy(dict_of(descr, "(1,)"), "\x05"));
    EXPECT_EQ(io::read_npy_vector<std::uint8_t>(path), (std::vector<std::uint8_t>{5}));
  }
}

TEST(IoNpy, FortranOrderOnlyWhenLayoutIsUnambiguous) {
  temp_dir tmp;
  const std::string path = tmp.file("f.npy");
  // (1, 3) and (3,) are the same in both orders: accepted.
  for (const char *shape : {"(1, 3)", "(3,)", "(3, 1, 1)"}) {
    write_bytes(path, make_npy(dict_of("<f4", shape, "True"), f32_bytes({1, 2, 3})));
    EXPECT_EQ(io::read_npy_vector<float>(path), (std::vector<float>{1, 2, 3})) << shape;
  }
  // (2, 3) in Fortran order: rejected with a clear message.
  expect_rejected(
      tmp, make_npy(dict_of("<f4", "(2, 3)", "True"), f32_bytes({1, 2, 3, 4, 5, 6})), 6,
      {"fortran_order", "Fortran", "C order", "(2, 3)"});
  // The header alone reports it.
  EXPECT_TRUE(io::read_npy_header(tmp.file("bad.npy")).fortran_order);
}

// --------------------------------------------------------------- rejected --

TEST(IoNpy, CorruptMagicAndVersion) {
  temp_dir tmp;
  const std::string good = make_npy(dict_of("<f4", "(1,)"), f32_bytes({1}));
  std::string bad = good;
  bad[1] = 'X';
  expect_rejected(tmp, bad, 1, {"magic", "bad.npy"});
  bad = good;
  bad[6] = 4;
  expect_rejected(tmp, bad, 1, {"version 4.0"});
  bad = good;
  bad[7] = 1;
  expect_rejected(tmp, bad, 1, {"version 1.1"});
  expect_rejected(tmp, "", 1, {"0 bytes"});
  expect_rejected(tmp, good.substr(0, 9), 1, {"9 bytes"});
  expect_rejected(tmp, "PK\x03\x04 not numpy at all", 1, {"magic"});
}

TEST(IoNpy, LyingHeaderLengths) {
  temp_dir tmp;
  const std::string dict = dict_of("<f4", "(1,)");
  // Header length beyond the end of the file.
  expect_rejected(tmp, make_npy(dict, f32_bytes({1}), 1, 60000), 1,
                  {"offset 8", "header length 60000", "past the end"});
  expect_rejected(tmp, make_npy(dict, f32_bytes({1}), 2, 0x7fffffff), 1,
                  {"header length 2147483647"});
  expect_rejected(tmp, make_npy(dict, f32_bytes({1}), 1, 0), 1, {"header length is 0"});
  // Header length too short: the dict is cut off.
  expect_rejected(tmp, make_npy(dict, f32_bytes({1}), 1, 20), 1, {"header"});
  // Version 2 prefix on a file too short for it.
  expect_rejected(tmp, std::string("\x93NUMPY\x02\x00\x10\x00", 10), 1, {"truncated"});
}

TEST(IoNpy, DataSizeMustMatchShape) {
  temp_dir tmp;
  // Header claims more data than present (truncated data).
  expect_rejected(tmp, make_npy(dict_of("<f4", "(10,)"), f32_bytes({1, 2, 3, 4, 5})), 10,
                  {"truncated", "(10,)", "40 bytes", "holds 20"});
  // Trailing bytes after the data.
  expect_rejected(tmp, make_npy(dict_of("<f4", "(2,)"), f32_bytes({1, 2, 3})), 2,
                  {"trailing bytes", "holds 12"});
  // Header only: the shape needs data.
  expect_rejected(tmp, make_npy(dict_of("<f4", "(1,)"), ""), 1, {"truncated"});
}

TEST(IoNpy, AbsurdShapes) {
  temp_dir tmp;
  expect_rejected(tmp, make_npy(dict_of("<f4", "(4294967296, 4294967296)"), ""), 1,
                  {"absurd", "overflows"});
  expect_rejected(tmp, make_npy(dict_of("<f8", "(2305843009213693952,)"), ""), 1,
                  {"absurd", "byte size"});
  expect_rejected(tmp, make_npy(dict_of("<f4", "(99999999999999999999999,)"), ""), 1,
                  {"absurd", "64 bits"});
  expect_rejected(tmp, make_npy(dict_of("<f4", "(-3,)"), ""), 1, {"negative"});
  // A zero dimension does not hide an overflowing product, wherever it is.
  expect_rejected(tmp, make_npy(dict_of("<f4", "(0, 4294967296, 4294967296)"), ""), 0,
                  {"absurd", "overflows"});
  expect_rejected(tmp, make_npy(dict_of("<f4", "(4294967296, 4294967296, 0)"), ""), 0,
                  {"absurd", "overflows"});
  std::string many = "(";
  for (int i = 0; i < 65; ++i)
    many += "1, ";
  expect_rejected(tmp, make_npy(dict_of("<f4", many + ")"), f32_bytes({1})), 1,
                  {"more than 64 dimensions"});
}

TEST(IoNpy, MalformedDicts) {
  temp_dir tmp;
  const std::string d = f32_bytes({1, 2, 3});
  struct bad_case {
    std::string dict;
    std::string part;
  };
  const bad_case cases[] = {
      {"{'descr': '<f4', 'shape': (3,), }", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (3,), }", "missing key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, }", "missing key 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
       "appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,) 'x'}", "expected ','"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (3,)}", "expected ':'"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk", "padding"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, x)}", "dimension"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,", "'shape'"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.dict);
    expect_rejected(tmp, make_npy(c.dict, d), 3, {"header", c.part});
  }
  // No final newline.
  const std::string dict = dict_of("<f4", "(3,)");
  expect_rejected(tmp, make_npy(dict + "   ", d, 1, -1, true), 3, {"'\\n'"});
  // A header cut off inside the dict.
  expect_rejected(tmp, make_npy("{'descr': '<f4'", d, 1, -1, true), 3, {"ends early"});
}

TEST(IoNpy, WrongOrUnsupportedDtypes) {
  temp_dir tmp;
  // A valid file of another type.
  expect_rejected(tmp, make_npy(dict_of("<f8", "(1,)"), std::string(8, '\0')), 1,
                  {"'<f8'", "float64", "destination is float32"});
  expect_rejected(tmp, make_npy(dict_of("<i4", "(1,)"), std::string(4, '\0')), 1,
                  {"int32", "float32"});
  // Types resproj does not read.
  struct bad_case {
    const char *descr;
    int size;
    const char *part;
  };
  const bad_case cases[] = {
      {"=f4", 4, "native byte order"},
      {"<f2", 2, "float32 / float64"},
      {"<c8", 8, "not a supported"},
      {"|b1", 1, "not a supported"},
      {"|f4", 4, "'|'"},
      {"<U4", 16, "not a supported"},
      {"<f16", 16, "item size"},
      {"f4", 4, "not a supported"},
      {"xf4", 4, "byte order"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.descr);
    expect_rejected(tmp, make_npy(dict_of(c.descr, "(1,)"), std::string(c.size, '\0')), 1,
                    {"'descr'", c.part});
  }
}

TEST(IoNpy, DestinationAndExpectedShapeMismatch) {
  temp_dir tmp;
  const std::string path = tmp.file("a.npy");
  const std::vector<float> src = {1, 2, 3, 4, 5, 6};
  io::write_npy(path, span<const float>(src.data(), 6), {2, 3});
  std::vector<float> dst(6, 42.0f);
  const std::vector<float> untouched = dst;
  // Wrong element count in the destination.
  std::vector<float> small(5, 42.0f);
  expect_io_error([&] { io::read_npy(path, span<float>(small.data(), 5)); },
                  {"6 elements", "(2, 3)", "destination holds 5"});
  EXPECT_EQ(small, std::vector<float>(5, 42.0f));
  // Expected shape differs from the file's (same element count).
  expect_io_error(
      [&] {
        io::read_npy(path, span<float>(dst.data(), 6), {3, 2});
      },
      {"'shape'", "(2, 3)", "expected (3, 2)"});
  expect_io_error([&] { io::read_npy(path, span<float>(dst.data(), 6), {6}); },
                  {"expected (6,)"});
  // Expected shape inconsistent with the destination: caller's bug.
  expect_invalid(
      [&] {
        io::read_npy(path, span<float>(dst.data(), 6), {2, 2});
      },
      "expected_shape");
  expect_invalid([&] { io::read_npy(path, span<float>(nullptr, 6)); }, "dst");
  EXPECT_EQ(dst, untouched);
  // Wrong type into read_npy_vector: io_error before allocating.
  expect_io_error([&] { (void)io::read_npy_vector<double>(path); }, {"float64"});
}

TEST(IoNpy, MissingPathDirectoryAndBadWrites) {
  temp_dir tmp;
  std::vector<float> dst(2, 42.0f);
  const std::string missing = tmp.file("missing.npy");
  expect_io_error([&] { io::read_npy(missing, span<float>(dst.data(), 2)); },
                  {missing, "does not exist"});
  expect_io_error([&] { (void)io::read_npy_header(tmp.dir()); }, {"directory"});
  expect_io_error([&] { io::read_npy(tmp.dir(), span<float>(dst.data(), 2)); },
                  {"directory"});
  EXPECT_EQ(dst, std::vector<float>(2, 42.0f));
  // Writes.
  expect_invalid(
      [&] { io::write_npy(tmp.file("a.npy"), span<const float>(dst.data(), 2), {3}); },
      "shape");
  expect_invalid(
      [&] { io::write_npy(tmp.file("a.npy"), span<const float>(nullptr, 2), {2}); },
      "data");
  EXPECT_FALSE(fs::exists(tmp.file("a.npy")));
  expect_io_error(
      [&] { io::write_npy(tmp.dir(), span<const float>(dst.data(), 2), {2}); },
      {"directory"});
  expect_io_error(
      [&] { io::write_npy(tmp.file("no/dir/a.npy"), span<float>(dst.data(), 2), {2}); },
      {"cannot open for writing"});
}

TEST(IoNpy, FifoIsRejectedWithoutBlocking) {
  temp_dir tmp;
  const std::string fifo = tmp.file("pipe.npy");
  resproj_test::make_fifo(fifo);
  std::vector<float> v(4, 1.0f);
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::read_npy(fifo, span<float>(v.data(), v.size())); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::write_npy(fifo, span<const float>(v.data(), v.size()), {4}); },
      {fifo, "not a regular file"});
  EXPECT_TRUE(resproj_test::is_fifo(fifo));
}

TEST(IoNpy, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  temp_dir tmp;
  const std::string path = tmp.file("a.npy");
  const std::vector<float> small = {1.0f, 2.0f}, big(4096, 2.5f);
  io::write_npy(path, span<const float>(small.data(), small.size()), {2});
  const std::string before = read_bytes(path);
  {
    resproj_test::file_size_limit limit(4096); // the write fails part-way
    expect_io_error(
        [&] {
          io::write_npy(path, span<const float>(big.data(), big.size()), {64, 64});
        },
        {path, "failed"});
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"a.npy"});
  // Rejected arguments do not touch the file either.
  expect_invalid(
      [&] { io::write_npy(path, span<const float>(big.data(), big.size()), {3}); },
      "shape");
  EXPECT_EQ(read_bytes(path), before);
  io::write_npy(path, span<const float>(big.data(), big.size()), {64, 64});
  EXPECT_EQ(io::read_npy_vector<float>(path), big);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"a.npy"});
}
