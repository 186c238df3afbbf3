// libFuzzer harness: .npy files (io/npy_parse.hpp, io/npy_read.hpp).
//
// The input is the whole file. Checked for every input:
// - read_npy_header never throws anything but io_error; when it accepts the
//   file, the header is consistent with it (data size == file size - offset,
//   at most 64 dimensions, a supported descr).
// - read_npy, read_npy (with an expected shape) and read_npy_vector into
//   float, double, int32, int16 and uint8 destinations of the size the
//   header says: they succeed exactly when the header is accepted, the file
//   holds that element type and the layout is C order; the values read equal
//   the file's bytes (converted from big-endian when the descr says so);
//   otherwise they throw io_error and leave the destination untouched.
// - A destination one element too large is rejected (io_error, untouched);
//   a null destination with a nonzero size is invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "resproj/io/npy.hpp"

namespace {

namespace io = resproj::io;
using fuzz::attempt;
using fuzz::outcome;
using resproj::span;

/// Element i of the file's data as a T, from the raw input bytes.
template <class T>
T expected_element(const std::uint8_t *data, const io::npy_header &h, std::size_t i) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, data + h.data_offset + i * sizeof(T), sizeof(T));
  if (sizeof(T) > 1 && h.order != io::host_byte_order())
    io::byteswap_elements(b, 1, sizeof(T));
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

template <class T>
void check_values(const std::vector<T> &got, const std::uint8_t *data,
                  const io::npy_header &h, const char *what) {
  FUZZ_CHECK(got.size() == h.num_elements(), "%s: %zu elements, header says %zu", what,
             got.size(), h.num_elements());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const T want = expected_element<T>(data, h, i);
    FUZZ_CHECK(std::memcmp(&got[i], &want, sizeof(T)) == 0,
               "%s: element %zu differs from the file", what, i);
  }
}

template <class T>
void read_as(const std::string &path, const std::uint8_t *data, bool header_ok,
             const io::npy_header &h) {
  const char *tname = io::dtype_name(io::dtype_of_v<T>);
  if (!header_ok) {
    // Whatever the destination, a rejected header is an io_error.
    auto dst = fuzz::sentinel_vector<T>(4);
    const outcome r =
        attempt("read_npy", [&] { io::read_npy(path, span<T>(dst.data(), dst.size())); });
    FUZZ_CHECK(r == outcome::io_error, "read_npy<%s> of a rejected file: %s", tname,
               fuzz::outcome_name(r));
    FUZZ_CHECK(fuzz::untouched(dst.data(), dst.size() * sizeof(T)),
               "read_npy<%s> wrote to dst and threw", tname);
    const outcome rv =
        attempt("read_npy_vector", [&] { (void)io::read_npy_vector<T>(path); });
    FUZZ_CHECK(rv == outcome::io_error, "read_npy_vector<%s> of a rejected file: %s",
               tname, fuzz::outcome_name(rv));
    return;
  }

  const std::size_t n = h.num_elements();
  const bool readable = h.type == io::dtype_of_v<T> && h.is_c_order();
  const outcome want = readable ? outcome::ok : outcome::io_error;

  // Exactly the header's element count.
  auto dst = fuzz::sentinel_vector<T>(n);
  io::npy_header h1;
  const outcome r = attempt(
      "read_npy", [&] { h1 = io::read_npy(path, span<T>(dst.data(), dst.size())); });
  FUZZ_CHECK(r == want, "read_npy<%s> of '%s' (fortran_order %d): %s, expected %s", tname,
             h.descr.c_str(), int(h.fortran_order), fuzz::outcome_name(r),
             fuzz::outcome_name(want));
  if (r == outcome::ok) {
    FUZZ_CHECK(h1.shape == h.shape && h1.descr == h.descr &&
                   h1.data_offset == h.data_offset,
               "read_npy<%s> returned another header than read_npy_header", tname);
    check_values(dst, data, h, "read_npy");
  } else {
    FUZZ_CHECK(fuzz::untouched(dst.data(), n * sizeof(T)),
               "read_npy<%s> wrote to dst and threw", tname);
  }

  // With the expected shape.
  auto dst2 = fuzz::sentinel_vector<T>(n);
  const outcome r2 = attempt("read_npy(shape)", [&] {
    io::read_npy(path, span<T>(dst2.data(), dst2.size()), h.shape);
  });
  FUZZ_CHECK(r2 == want, "read_npy<%s>(expected_shape): %s, expected %s", tname,
             fuzz::outcome_name(r2), fuzz::outcome_name(want));
  if (r2 == outcome::ok)
    check_values(dst2, data, h, "read_npy(expected_shape)");
  else
    FUZZ_CHECK(fuzz::untouched(dst2.data(), n * sizeof(T)),
               "read_npy<%s>(expected_shape) wrote to dst and threw", tname);

  // One element too many: always an io_error, nothing written.
  auto big = fuzz::sentinel_vector<T>(n + 1);
  const outcome r3 = attempt(
      "read_npy(n+1)", [&] { io::read_npy(path, span<T>(big.data(), big.size())); });
  FUZZ_CHECK(r3 == outcome::io_error, "read_npy<%s> into %zu elements (file %zu): %s",
             tname, n + 1, n, fuzz::outcome_name(r3));
  FUZZ_CHECK(fuzz::untouched(big.data(), big.size() * sizeof(T)),
             "read_npy<%s> into a too large dst wrote to it", tname);

  // A new vector.
  std::vector<T> vec;
  io::npy_header h4;
  const outcome r4 =
      attempt("read_npy_vector", [&] { vec = io::read_npy_vector<T>(path, &h4); });
  FUZZ_CHECK(r4 == want, "read_npy_vector<%s>: %s, expected %s", tname,
             fuzz::outcome_name(r4), fuzz::outcome_name(want));
  if (r4 == outcome::ok) {
    FUZZ_CHECK(h4.shape == h.shape, "read_npy_vector<%s>: header shape differs", tname);
    check_values(vec, data, h, "read_npy_vector");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = fuzz::input_file("npy", data, size);

  io::npy_header h;
  const outcome hr = attempt("read_npy_header", [&] { h = io::read_npy_header(path); });
  FUZZ_CHECK(hr != outcome::invalid_argument, "read_npy_header threw invalid_argument");
  const bool ok = hr == outcome::ok;
  if (ok) {
    FUZZ_CHECK(h.major_version >= 1 && h.major_version <= 3 && h.minor_version == 0,
               "accepted version %d.%d", h.major_version, h.minor_version);
    FUZZ_CHECK(h.shape.size() <= 64, "accepted %zu dimensions", h.shape.size());
    FUZZ_CHECK(h.data_offset <= size && h.data_bytes() == size - h.data_offset,
               "accepted header: offset %llu + %llu data bytes, file has %zu bytes",
               static_cast<unsigned long long>(h.data_offset),
               static_cast<unsigned long long>(h.data_bytes()), size);
    FUZZ_CHECK(h.descr.size() == 3 &&
                   h.descr.substr(1) == io::npy_descr(h.type).substr(1),
               "descr '%s' accepted as %s", h.descr.c_str(), io::dtype_name(h.type));
    FUZZ_CHECK((h.order == io::byte_order::big) == (h.descr[0] == '>'),
               "descr '%s' accepted with the wrong byte order", h.descr.c_str());
  }

  read_as<float>(path, data, ok, h);
  read_as<double>(path, data, ok, h);
  read_as<std::int32_t>(path, data, ok, h);
  read_as<std::int16_t>(path, data, ok, h);
  read_as<std::uint8_t>(path, data, ok, h);

  // A null destination with a nonzero size is an argument error, checked
  // before the file is looked at.
  const outcome rn =
      attempt("read_npy(null)", [&] { io::read_npy(path, span<float>(nullptr, 3)); });
  FUZZ_CHECK(rn == outcome::invalid_argument, "read_npy(null, 3): %s",
             fuzz::outcome_name(rn));
  return 0;
}
