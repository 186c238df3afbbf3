// Tests of io/dtype.hpp and io/raw.hpp: dtype traits, byte-order helpers,
// raw little-endian array round trips, offsets, strict size checks and
// errors that leave the destination untouched.
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
#include "resproj/io/dtype.hpp"
#include "resproj/io/raw.hpp"

namespace io = resproj::io;
namespace fs = std::filesystem;
using resproj::span;

namespace {

using resproj_test::expect_invalid;
using resproj_test::expect_io_error;
using resproj_test::read_bytes;
using resproj_test::temp_dir;
using resproj_test::write_bytes;

template <class T> std::vector<T> test_values(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>)
      v[i] = T(i) * T(0.37) - T(5.5);
    else if constexpr (std::is_signed_v<T>)
      v[i] = T((i * 37) % 100) - T(50);
    else
      v[i] = T((i * 53) % 251);
  }
  if (n > 0)
    v[0] = std::numeric_limits<T>::max();
  if (n > 1)
    v[1] = std::numeric_limits<T>::lowest();
  return v;
}

template <class T> std::vector<T> sentinel(std::size_t n) {
  return std::vector<T>(n, T(42));
}

} // namespace

// ------------------------------------------------------------------ dtype --

static_assert(io::dtype_of_v<float> == io::dtype::float32);
static_assert(io::dtype_of_v<const double> == io::dtype::float64);
static_assert(io::dtype_of_v<std::int16_t> == io::dtype::int16);
static_assert(io::dtype_of_v<std::uint8_t> == io::dtype::uint8);
static_assert(io::is_dtype_type_v<std::uint64_t>);
static_assert(!io::is_dtype_type_v<bool>);
static_assert(!io::is_dtype_type_v<char>);
static_assert(io::dtype_size(io::dtype::int16) == 2);
static_assert(io::dtype_size(io::dtype::float64) == 8);

TEST(IoDtype, NamesAndSizes) {
  const io::dtype all[] = {io::dtype::uint8,  io::dtype::int8,   io::dtype::uint16,
                           io::dtype::int16,  io::dtype::uint32, io::dtype::int32,
                           io::dtype::uint64, io::dtype::int64,  io::dtype::float32,
                           io::dtype::float64};
  const std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
  const char *names[] = {"uint8", "int8",   "uint16", "int16",   "uint32",
                         "int32", "uint64", "int64",  "float32", "float64"};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(io::dtype_size(all[i]), sizes[i]);
    EXPECT_STREQ(io::dtype_name(all[i]), names[i]);
  }
  EXPECT_EQ(io::dtype_size(static_cast<io::dtype>(200)), 0u);
  EXPECT_STREQ(io::dtype_name(static_cast<io::dtype>(200)), "invalid");
  EXPECT_TRUE(io::dtype_is_floating(io::dtype::float32));
  EXPECT_FALSE(io::dtype_is_floating(io::dtype::int32));
  EXPECT_TRUE(io::dtype_is_signed_integer(io::dtype::int8));
  EXPECT_FALSE(io::dtype_is_signed_integer(io::dtype::uint8));
}

TEST(IoDtype, ByteOrderHelpers) {
  unsigned char b[8];
  io::store_little_endian<std::uint32_t>(0x01020304u, b);
  EXPECT_EQ(b[0], 4);
  EXPECT_EQ(b[3], 1);
  EXPECT_EQ(io::load_little_endian<std::uint32_t>(b), 0x01020304u);
  io::store_little_endian(1.0f, b);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[2], 0x80);
  EXPECT_EQ(b[3], 0x3f);
  EXPECT_EQ(io::load_little_endian<float>(b), 1.0f);
  io::store_little_endian<std::int16_t>(-2, b + 1); // unaligned
  EXPECT_EQ(b[1], 0xfe);
  EXPECT_EQ(b[2], 0xff);
  EXPECT_EQ(io::load_little_endian<std::int16_t>(b + 1), -2);

  std::uint16_t v[3] = {0x0102, 0x0304, 0x0506};
  io::byteswap_elements(v, 3, 2);
  EXPECT_EQ(v[0], 0x0201);
  EXPECT_EQ(v[2], 0x0605);
  io::byteswap_elements(v, 3, 1); // no-op
  EXPECT_EQ(v[1], 0x0403);
  // Converting from the host's own order is a no-op, from the other a swap.
  std::uint32_t w = 0x11223344u;
  io::convert_byte_order(&w, 1, 4, io::host_byte_order());
  EXPECT_EQ(w, 0x11223344u);
  io::convert_byte_order(&w, 1, 4,
                         io::host_is_little_endian() ? io::byte_order::big
                                                     : io::byte_order::little);
  EXPECT_EQ(w, 0x44332211u);
}

// ------------------------------------------------------------- round trip --

template <class T> class IoRawTyped : public ::testing::Test {};
using raw_types = ::testing::Types<float, double, std::int8_t, std::uint8_t, std::int16_t,
                                   std::uint16_t, std::int32_t, std::uint32_t,
                                   std::int64_t, std::uint64_t>;
/// Names typed tests after the dtype ("float32", ...).
struct dtype_test_names {
  template <class T> static std::string GetName(int) {
    return io::dtype_name(io::dtype_of_v<T>);
  }
};
TYPED_TEST_SUITE(IoRawTyped, raw_types, dtype_test_names);

TYPED_TEST(IoRawTyped, RoundTripAndLittleEndianBytes) {
  using T = TypeParam;
  temp_dir tmp;
  const std::string path = tmp.file("a.raw");
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000)}) {
    const std::vector<T> src = test_values<T>(n);
    EXPECT_EQ(io::write_raw(path, span<const T>(src.data(), src.size())), 0u);
    EXPECT_EQ(io::file_size(path), n * sizeof(T));
    // Bytes on disk are the little-endian encoding of each element.
    const std::string bytes = read_bytes(path);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(
          io::load_little_endian<T>(
              reinterpret_cast<const unsigned char *>(bytes.data()) + i * sizeof(T)),
          src[i]);
    std::vector<T> dst = sentinel<T>(n);
    io::read_raw(path, span<T>(dst.data(), dst.size()));
    EXPECT_EQ(dst, src);
    // The dtype-checked overload.
    std::vector<T> dst2 = sentinel<T>(n + 2);
    io::read_raw(path, io::dtype_of_v<T>, n, span<T>(dst2.data(), dst2.size()));
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(dst2[i], src[i]);
    EXPECT_EQ(dst2[n], T(42)); // beyond count: untouched
    EXPECT_EQ(io::read_raw_vector<T>(path, n), src);
  }
}

TEST(IoRaw, ReadAtOffsetsIncludingUnaligned) {
  temp_dir tmp;
  const std::string path = tmp.file("a.raw");
  std::vector<std::int32_t> src(10);
  for (int i = 0; i < 10; ++i)
    src[i] = 1000 + i;
  io::write_raw(path, span<const std::int32_t>(src.data(), src.size()));
  std::vector<std::int32_t> dst(3, 42);
  io::read_raw(path, span<std::int32_t>(dst.data(), 3), 8);
  EXPECT_EQ(dst, (std::vector<std::int32_t>{1002, 1003, 1004}));
  // The last element exactly.
  io::read_raw(path, span<std::int32_t>(dst.data(), 1), 36);
  EXPECT_EQ(dst[0], 1009);
  // Zero elements at the very end is fine.
  io::read_raw(path, span<std::int32_t>(dst.data(), 0), 40);
  // An offset that is not a multiple of the element size.
  const std::string bytes = std::string("\x07", 1) + std::string("\x34\x12\xff\xff", 4);
  write_bytes(path, bytes);
  std::int16_t v[2] = {0, 0};
  io::read_raw(path, span<std::int16_t>(v, 2), 1);
  EXPECT_EQ(v[0], 0x1234);
  EXPECT_EQ(v[1], -1);
}

TEST(IoRaw, ZeroAndOneByteFiles) {
  temp_dir tmp;
  const std::string empty = tmp.file("empty.raw"), one = tmp.file("one.raw");
  write_bytes(empty, "");
  write_bytes(one, "\xab");
  EXPECT_EQ(io::file_size(empty), 0u);
  io::read_raw(empty, span<float>(nullptr, 0));
  EXPECT_TRUE(io::read_raw_vector<double>(empty, 0).empty());
  std::uint8_t b = 0;
  io::read_raw(one, span<std::uint8_t>(&b, 1));
  EXPECT_EQ(b, 0xab);
  // One byte is too short for anything larger.
  std::int16_t s = 42;
  expect_io_error([&] { io::read_raw(one, span<std::int16_t>(&s, 1)); },
                  {one, "offset 0", "2 bytes", "holds 1"});
  EXPECT_EQ(s, 42);
  // Writing nothing creates an empty file.
  const std::string created = tmp.file("created.raw");
  io::write_raw(created, span<const float>(nullptr, 0));
  EXPECT_TRUE(fs::exists(created));
  EXPECT_EQ(io::file_size(created), 0u);
}

// ----------------------------------------------------------------- errors --

TEST(IoRaw, TruncatedFileLeavesDestinationUntouched) {
  temp_dir tmp;
  const std::string path = tmp.file("short.raw");
  write_bytes(path, std::string(10, '\x01'));
  std::vector<float> dst = sentinel<float>(3);
  expect_io_error([&] { io::read_raw(path, span<float>(dst.data(), 3)); },
                  {path, "too short", "offset 0", "12 bytes", "needs 12", "holds 10"});
  EXPECT_EQ(dst, sentinel<float>(3));
  // At an offset: 2 floats at 4 need 12 bytes.
  expect_io_error([&] { io::read_raw(path, span<float>(dst.data(), 2), 4); },
                  {"offset 4", "needs 12", "holds 10"});
  // An offset beyond the end, even for zero elements.
  expect_io_error([&] { io::read_raw(path, span<float>(dst.data(), 0), 11); },
                  {"offset 11"});
  // An offset near 2^64 must not wrap around.
  expect_io_error(
      [&] {
        io::read_raw(path, span<float>(dst.data(), 3),
                     std::numeric_limits<std::uint64_t>::max() - 4);
      },
      {"too short"});
  EXPECT_EQ(dst, sentinel<float>(3));
  // A huge count on a short file: io_error, no attempt to allocate.
  expect_io_error([&] { (void)io::read_raw_vector<double>(path, std::size_t(1) << 60); },
                  {"too short"});
}

TEST(IoRaw, MissingPathAndDirectory) {
  temp_dir tmp;
  std::vector<double> dst = sentinel<double>(4);
  const std::string missing = tmp.file("nope.raw");
  expect_io_error([&] { io::read_raw(missing, span<double>(dst.data(), 4)); },
                  {missing, "does not exist"});
  expect_io_error([&] { (void)io::file_size(missing); }, {"does not exist"});
  expect_io_error([&] { io::read_raw(tmp.dir(), span<double>(dst.data(), 4)); },
                  {tmp.dir(), "directory"});
  expect_io_error([&] { io::read_raw("", span<double>(dst.data(), 4)); }, {"empty path"});
  EXPECT_EQ(dst, sentinel<double>(4));
  // Writing to a directory, or into a folder that does not exist.
  expect_io_error([&] { io::write_raw(tmp.dir(), span<const double>(dst.data(), 4)); },
                  {"directory"});
  const std::string nofolder = tmp.file("no/such/folder/a.raw");
  expect_io_error([&] { io::write_raw(nofolder, span<const double>(dst.data(), 4)); },
                  {nofolder, "cannot open for writing"});
}

TEST(IoRaw, BadArguments) {
  temp_dir tmp;
  const std::string path = tmp.file("a.raw");
  std::vector<float> src(4, 1.0f);
  io::write_raw(path, span<const float>(src.data(), 4));
  std::vector<float> dst = sentinel<float>(4);
  expect_invalid(
      [&] { io::read_raw(path, io::dtype::int32, 4, span<float>(dst.data(), 4)); },
      "type");
  expect_invalid(
      [&] { io::read_raw(path, io::dtype::float32, 5, span<float>(dst.data(), 4)); },
      "dst");
  expect_invalid([&] { io::read_raw(path, span<float>(nullptr, 4)); }, "dst");
  expect_invalid([&] { io::write_raw(path, span<const float>(nullptr, 4)); }, "src");
  EXPECT_EQ(dst, sentinel<float>(4));
  EXPECT_EQ(io::file_size(path), 16u); // not touched by the failed write
}

// ----------------------------------------------------------------- writes --

TEST(IoRaw, AppendAndWriteAtOffset) {
  temp_dir tmp;
  const std::string path = tmp.file("a.raw");
  const std::vector<std::uint16_t> a = {1, 2, 3}, b = {4, 5};
  EXPECT_EQ(
      io::write_raw(path, span<const std::uint16_t>(a.data(), 3), io::write_mode::append),
      0u); // append creates
  EXPECT_EQ(
      io::write_raw(path, span<const std::uint16_t>(b.data(), 2), io::write_mode::append),
      6u);
  EXPECT_EQ(io::read_raw_vector<std::uint16_t>(path, 5),
            (std::vector<std::uint16_t>{1, 2, 3, 4, 5}));
  // Overwrite elements 1..2 in place, keep the rest.
  const std::vector<std::uint16_t> c = {7, 8};
  io::write_raw_at(path, 2, span<const std::uint16_t>(c.data(), 2));
  EXPECT_EQ(io::read_raw_vector<std::uint16_t>(path, 5),
            (std::vector<std::uint16_t>{1, 7, 8, 4, 5}));
  // Past the end: the gap is zero-filled.
  io::write_raw_at(path, 14, span<const std::uint16_t>(c.data(), 1));
  EXPECT_EQ(io::read_raw_vector<std::uint16_t>(path, 8),
            (std::vector<std::uint16_t>{1, 7, 8, 4, 5, 0, 0, 7}));
  // Truncate replaces the contents.
  io::write_raw(path, span<const std::uint16_t>(b.data(), 2));
  EXPECT_EQ(io::file_size(path), 4u);
  // write_raw_at creates a missing file.
  const std::string fresh = tmp.file("fresh.raw");
  io::write_raw_at(fresh, 2, span<const std::uint16_t>(c.data(), 1));
  EXPECT_EQ(read_bytes(fresh), std::string("\0\0\x07\0", 4));
  // A span<T> (non-const) is accepted too.
  std::vector<std::uint16_t> d = {9};
  io::write_raw(fresh, span<std::uint16_t>(d.data(), 1));
  EXPECT_EQ(read_bytes(fresh), std::string("\x09\0", 2));
}

// ---------------------------------------------- awkward targets, failures --

TEST(IoRaw, FifoIsRejectedWithoutBlocking) {
  temp_dir tmp;
  const std::string fifo = tmp.file("pipe.raw");
  resproj_test::make_fifo(fifo);
  std::vector<float> v(4, 1.0f);
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::read_raw(fifo, span<float>(v.data(), v.size())); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::write_raw(fifo, span<const float>(v.data(), v.size())); },
      {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(fifo,
                                       [&] {
                                         io::write_raw(
                                             fifo, span<const float>(v.data(), v.size()),
                                             io::write_mode::append);
                                       },
                                       {fifo, "not a regular file"});
  resproj_test::expect_prompt_io_error(
      fifo, [&] { io::write_raw_at(fifo, 4, span<const float>(v.data(), v.size())); },
      {fifo, "not a regular file"});
  EXPECT_TRUE(resproj_test::is_fifo(fifo));
}

TEST(IoRaw, FailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  temp_dir tmp;
  const std::string path = tmp.file("a.raw");
  const std::vector<double> small = test_values<double>(3), big(4096, 2.5);
  io::write_raw(path, span<const double>(small.data(), small.size()));
  const std::string before = read_bytes(path);
  {
    resproj_test::file_size_limit limit(4096); // the write fails part-way
    expect_io_error(
        [&] { io::write_raw(path, span<const double>(big.data(), big.size())); },
        {path, "failed"});
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"a.raw"});
  io::write_raw(path, span<const double>(big.data(), big.size()));
  EXPECT_EQ(io::read_raw_vector<double>(path, big.size()), big);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"a.raw"});
}

TEST(IoRaw, ReplacingKeepsPermissionsAndFollowsSymbolicLinks) {
  temp_dir tmp;
  const std::string path = tmp.file("a.raw"), link = tmp.file("link.raw");
  const std::vector<std::int32_t> a = {1, 2, 3}, b = {4, 5};
  io::write_raw(path, span<const std::int32_t>(a.data(), a.size()));
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_EQ(::symlink("a.raw", link.c_str()), 0);
  io::write_raw(link, span<const std::int32_t>(b.data(), b.size()));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(resproj_test::file_mode(path), 0640u);
  EXPECT_EQ(io::read_raw_vector<std::int32_t>(path, 2), b);
  EXPECT_EQ(io::file_size(path), 8u);
}

TEST(IoRaw, ReadOnlyFileIsNotReplaced) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "root may write any file";
  temp_dir tmp;
  const std::string path = tmp.file("ro.raw");
  const std::vector<std::int32_t> a = {1, 2, 3}, b = {4, 5};
  io::write_raw(path, span<const std::int32_t>(a.data(), a.size()));
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  expect_io_error([&] { io::write_raw(path, span<const std::int32_t>(b.data(), 2)); },
                  {path, "cannot open for writing"});
  EXPECT_EQ(io::read_raw_vector<std::int32_t>(path, 3), a);
  EXPECT_EQ(resproj_test::dir_entries(tmp.dir()), std::set<std::string>{"ro.raw"});
}
