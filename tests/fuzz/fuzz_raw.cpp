// libFuzzer harness: raw little-endian arrays (io/raw.hpp).
//
// Input layout: a 6-byte prefix of read parameters, then the file.
//   byte 0     element type: index % 10 into uint8, int8, uint16, int16,
//              uint32, int32, uint64, int64, float32, float64
//   byte 1     flags: bit 0 "huge count", bit 1 "huge offset"
//   bytes 2-3  count, uint16 little-endian; with "huge count",
//              count = SIZE_MAX >> (byte 2 & 63)
//   bytes 4-5  byte offset, uint16 little-endian; with "huge offset",
//              offset = UINT64_MAX >> (byte 4 & 63)
// An input shorter than 6 bytes is all file, read as float32 from offset 0.
//
// Checked for every input, for read_raw(path, span, offset),
// read_raw(path, dtype, count, span, offset) and read_raw_vector:
// - count * element size overflowing 64 bits is invalid_argument;
// - otherwise the call succeeds exactly when [offset, offset + bytes) lies
//   inside the file, and the elements equal the file's bytes at offset
//   (little-endian); else io_error;
// - on any error the destination is untouched (also when dst claims more
//   elements than it has room for: the size check comes before any read),
//   and read_raw_vector allocates nothing for a huge count;
// - a dtype other than the destination's, a too small dst or a null dst
//   with a nonzero size is invalid_argument; file_size is the file's size.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "resproj/io/raw.hpp"

namespace {

namespace io = resproj::io;
using fuzz::attempt;
using fuzz::outcome;
using resproj::span;

struct params {
  std::size_t count = 0;
  std::uint64_t offset = 0;
};

template <class T>
void check_values(const T *got, std::size_t count, const std::uint8_t *file,
                  std::uint64_t offset, const char *what) {
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, file + offset + i * sizeof(T), sizeof(T));
    if (!io::host_is_little_endian())
      io::byteswap_elements(b, 1, sizeof(T));
    FUZZ_CHECK(std::memcmp(&got[i], b, sizeof(T)) == 0,
               "%s: element %zu differs from the file", what, i);
  }
}

template <class T>
void read_as(const std::string &path, const std::uint8_t *file, std::size_t file_size,
             params p) {
  const char *tname = io::dtype_name(io::dtype_of_v<T>);
  // The expected outcome.
  const bool overflow = p.count > std::numeric_limits<std::uint64_t>::max() / sizeof(T);
  const std::uint64_t bytes = overflow ? 0 : std::uint64_t(p.count) * sizeof(T);
  const bool inside = !overflow && p.offset <= file_size && bytes <= file_size - p.offset;
  const outcome want = overflow ? outcome::invalid_argument
                       : inside ? outcome::ok
                                : outcome::io_error;

  // A real buffer of count (+1 spare) elements when that is small; else a
  // small buffer behind a span that claims `count` elements, which the size
  // checks must reject before anything is written (ASan reports a write).
  constexpr std::size_t max_real = 4097; // inputs are at most 4096 bytes
  const bool real = p.count <= max_real;
  if (!real && inside)
    return; // a reproducer file larger than the fuzzer's inputs: nothing to check
  auto buf = fuzz::sentinel_vector<T>(real ? p.count + 1 : 16);

  // read_raw(path, span, offset).
  const outcome r = attempt(
      "read_raw", [&] { io::read_raw(path, span<T>(buf.data(), p.count), p.offset); });
  FUZZ_CHECK(r == want,
             "read_raw<%s>(count %zu, offset %llu) of %zu bytes: %s, expected %s", tname,
             p.count, static_cast<unsigned long long>(p.offset), file_size,
             fuzz::outcome_name(r), fuzz::outcome_name(want));
  if (r == outcome::ok) {
    check_values(buf.data(), p.count, file, p.offset, "read_raw");
    FUZZ_CHECK(fuzz::untouched(buf.data() + p.count, sizeof(T)),
               "read_raw<%s> wrote past dst", tname);
  } else {
    FUZZ_CHECK(fuzz::untouched(buf.data(), buf.size() * sizeof(T)),
               "read_raw<%s> wrote to dst and threw", tname);
  }

  // read_raw(path, dtype, count, span, offset) with a larger dst.
  if (real) {
    auto buf2 = fuzz::sentinel_vector<T>(p.count + 1);
    const outcome r2 = attempt("read_raw(dtype)", [&] {
      io::read_raw(path, io::dtype_of_v<T>, p.count, span<T>(buf2.data(), buf2.size()),
                   p.offset);
    });
    FUZZ_CHECK(r2 == want, "read_raw<%s>(dtype, count %zu): %s, expected %s", tname,
               p.count, fuzz::outcome_name(r2), fuzz::outcome_name(want));
    if (r2 == outcome::ok)
      check_values(buf2.data(), p.count, file, p.offset, "read_raw(dtype)");
    FUZZ_CHECK(fuzz::untouched(buf2.data() + (r2 == outcome::ok ? p.count : 0),
                               (r2 == outcome::ok ? 1 : buf2.size()) * sizeof(T)),
               "read_raw<%s>(dtype) wrote outside dst[0, count)", tname);

    // Another dtype: an argument error.
    const io::dtype other =
        io::dtype_of_v<T> == io::dtype::float32 ? io::dtype::float64 : io::dtype::float32;
    const outcome r3 = attempt("read_raw(other dtype)", [&] {
      io::read_raw(path, other, p.count, span<T>(buf2.data(), buf2.size()), p.offset);
    });
    FUZZ_CHECK(r3 == outcome::invalid_argument, "read_raw<%s>(%s): %s", tname,
               io::dtype_name(other), fuzz::outcome_name(r3));

    // Too small a dst: an argument error.
    if (p.count > 0) {
      auto small = fuzz::sentinel_vector<T>(p.count - 1);
      const outcome r4 = attempt("read_raw(small)", [&] {
        io::read_raw(path, io::dtype_of_v<T>, p.count,
                     span<T>(small.data(), small.size()), p.offset);
      });
      FUZZ_CHECK(r4 == outcome::invalid_argument, "read_raw<%s> into %zu of %zu: %s",
                 tname, p.count - 1, p.count, fuzz::outcome_name(r4));
    }
  }

  // read_raw_vector: checks before it allocates (a huge count must not
  // allocate: ASan reports allocations beyond -rss_limit_mb / malloc_limit).
  std::vector<T> vec;
  const outcome rv = attempt(
      "read_raw_vector", [&] { vec = io::read_raw_vector<T>(path, p.count, p.offset); });
  FUZZ_CHECK(rv == want, "read_raw_vector<%s>(count %zu, offset %llu): %s, expected %s",
             tname, p.count, static_cast<unsigned long long>(p.offset),
             fuzz::outcome_name(rv), fuzz::outcome_name(want));
  if (rv == outcome::ok) {
    FUZZ_CHECK(vec.size() == p.count, "read_raw_vector<%s>: %zu elements for %zu", tname,
               vec.size(), p.count);
    check_values(vec.data(), p.count, file, p.offset, "read_raw_vector");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  params p;
  unsigned type = 8; // float32
  const std::uint8_t *file = data;
  std::size_t file_size = size;
  if (size >= 6) {
    type = data[0] % 10u;
    const unsigned flags = data[1];
    const unsigned c = unsigned(data[2]) | unsigned(data[3]) << 8;
    const unsigned o = unsigned(data[4]) | unsigned(data[5]) << 8;
    p.count =
        (flags & 1u) ? std::numeric_limits<std::size_t>::max() >> (data[2] & 63u) : c;
    p.offset =
        (flags & 2u) ? std::numeric_limits<std::uint64_t>::max() >> (data[4] & 63u) : o;
    file = data + 6;
    file_size = size - 6;
  } else {
    p.count = size / 4;
  }
  const std::string &path = fuzz::input_file("raw", file, file_size);

  std::uint64_t fs = 0;
  const outcome of = attempt("file_size", [&] { fs = io::file_size(path); });
  FUZZ_CHECK(of == outcome::ok && fs == file_size, "file_size: %s, %llu for %zu bytes",
             fuzz::outcome_name(of), static_cast<unsigned long long>(fs), file_size);

  switch (type) {
  case 0:
    read_as<std::uint8_t>(path, file, file_size, p);
    break;
  case 1:
    read_as<std::int8_t>(path, file, file_size, p);
    break;
  case 2:
    read_as<std::uint16_t>(path, file, file_size, p);
    break;
  case 3:
    read_as<std::int16_t>(path, file, file_size, p);
    break;
  case 4:
    read_as<std::uint32_t>(path, file, file_size, p);
    break;
  case 5:
    read_as<std::int32_t>(path, file, file_size, p);
    break;
  case 6:
    read_as<std::uint64_t>(path, file, file_size, p);
    break;
  case 7:
    read_as<std::int64_t>(path, file, file_size, p);
    break;
  case 8:
    read_as<float>(path, file, file_size, p);
    break;
  default:
    read_as<double>(path, file, file_size, p);
    break;
  }

  const outcome rn =
      attempt("read_raw(null)", [&] { io::read_raw(path, span<float>(nullptr, 2)); });
  FUZZ_CHECK(rn == outcome::invalid_argument, "read_raw(null, 2): %s",
             fuzz::outcome_name(rn));
  return 0;
}
