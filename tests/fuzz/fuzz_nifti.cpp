// libFuzzer harness: single-file NIfTI-1 images (io/nifti_parse.hpp,
// io/nifti_read.hpp).
//
// The input is the whole file. Checked for every input:
// - read_nifti_header / read_nifti_geometry never throw anything but
//   io_error, and agree; an accepted header is consistent with the file
//   (dimensions 1..32767, vox_offset >= 352, the data inside the file) and
//   gives a valid geometry (finite positive voxel sizes, finite origin).
// - read_nifti<float> and read_nifti<double> into a destination of the
//   voxel count: either they succeed and every voxel equals the stored
//   value converted, scaled and flipped as the header says (recomputed
//   here from the raw bytes), or they throw io_error and leave the
//   destination and the geometry untouched. read_nifti<double> of an
//   unscaled file with an accepted header always succeeds.
// - A destination of the wrong size is invalid_argument (header accepted)
//   or io_error (header rejected), with the destination untouched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "fuzz_common.hpp"
#include "resproj/io/nifti.hpp"

namespace {

namespace io = resproj::io;
using fuzz::attempt;
using fuzz::outcome;
using resproj::image_geometry;
using resproj::span;

/// Stored element `s` (storage order) of the input, in host order.
template <class S>
S stored(const std::uint8_t *data, const io::nifti_image_info &info, std::uint64_t s) {
  unsigned char b[sizeof(S)];
  std::memcpy(b, data + info.vox_offset + s * sizeof(S), sizeof(S));
  if (sizeof(S) > 1 && info.order != io::host_byte_order())
    io::byteswap_elements(b, 1, sizeof(S));
  S v;
  std::memcpy(&v, b, sizeof(S));
  return v;
}

template <class T> bool same_value(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Compares `got` (resproj C order) with the stored values.
template <class S, class T>
void check_voxels(const std::vector<T> &got, const std::uint8_t *data,
                  const io::nifti_image_info &info) {
  const std::int64_t n0 = info.shape[0], n1 = info.shape[1], n2 = info.shape[2];
  for (std::int64_t i0 = 0; i0 < n0; ++i0)
    for (std::int64_t i1 = 0; i1 < n1; ++i1)
      for (std::int64_t i2 = 0; i2 < n2; ++i2) {
        // NIfTI data index (i, j, k) = (resproj i2, i1, i0), reversed where
        // the affine says the axis is stored flipped.
        const std::int64_t i = info.flipped[2] ? n2 - 1 - i2 : i2;
        const std::int64_t j = info.flipped[1] ? n1 - 1 - i1 : i1;
        const std::int64_t k = info.flipped[0] ? n0 - 1 - i0 : i0;
        const std::uint64_t s = std::uint64_t(i + n2 * (j + n1 * k));
        // The conversion the documentation specifies: scaled in double, else
        // the stored type converted to T directly (one rounding).
        const S v = stored<S>(data, info, s);
        const T want =
            info.scaled ? T(info.scl_slope * double(v) + info.scl_inter) : T(v);
        const T have = got[std::size_t((i0 * n1 + i1) * n2 + i2)];
        FUZZ_CHECK(same_value(have, want),
                   "voxel (%lld,%lld,%lld): read %.17g, stored value gives %.17g",
                   static_cast<long long>(i0), static_cast<long long>(i1),
                   static_cast<long long>(i2), double(have), double(want));
      }
}

template <class T>
void read_as(const std::string &path, const std::uint8_t *data, bool header_ok,
             const io::nifti_image_info &info) {
  const char *tname = std::is_same_v<T, float> ? "float" : "double";
  const image_geometry sentinel_geometry({7, 7, 7}, {7, 7, 7}, {7, 7, 7});
  if (!header_ok) {
    auto dst = fuzz::sentinel_vector<T>(8);
    image_geometry g = sentinel_geometry;
    const outcome r = attempt(
        "read_nifti", [&] { io::read_nifti(path, span<T>(dst.data(), dst.size()), &g); });
    FUZZ_CHECK(r == outcome::io_error, "read_nifti<%s> of a rejected file: %s", tname,
               fuzz::outcome_name(r));
    FUZZ_CHECK(fuzz::untouched(dst.data(), dst.size() * sizeof(T)) &&
                   g == sentinel_geometry,
               "read_nifti<%s> wrote its outputs and threw", tname);
    return;
  }

  const std::size_t n = std::size_t(info.num_voxels());
  auto dst = fuzz::sentinel_vector<T>(n);
  image_geometry g = sentinel_geometry;
  const outcome r = attempt(
      "read_nifti", [&] { io::read_nifti(path, span<T>(dst.data(), dst.size()), &g); });
  FUZZ_CHECK(r != outcome::invalid_argument,
             "read_nifti<%s> with %zu voxels: invalid_argument", tname, n);
  if (r == outcome::ok) {
    FUZZ_CHECK(g == info.geometry(), "read_nifti<%s>: geometry differs from the header's",
               tname);
    io::detail::nifti_visit(info.type,
                            [&](auto s) { check_voxels<decltype(s)>(dst, data, info); });
  } else {
    FUZZ_CHECK(fuzz::untouched(dst.data(), n * sizeof(T)) && g == sentinel_geometry,
               "read_nifti<%s> wrote its outputs and threw", tname);
    FUZZ_CHECK(!(std::is_same_v<T, double> && !info.scaled),
               "read_nifti<double> of an unscaled file with an accepted header threw");
  }

  // Wrong voxel count: an argument error, nothing written.
  auto big = fuzz::sentinel_vector<T>(n + 1);
  const outcome rb = attempt(
      "read_nifti(n+1)", [&] { io::read_nifti(path, span<T>(big.data(), big.size())); });
  FUZZ_CHECK(rb == outcome::invalid_argument,
             "read_nifti<%s> into %zu elements (%zu voxels): %s", tname, n + 1, n,
             fuzz::outcome_name(rb));
  FUZZ_CHECK(fuzz::untouched(big.data(), big.size() * sizeof(T)),
             "read_nifti<%s> into a wrong-size dst wrote to it", tname);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = fuzz::input_file("nifti", data, size);

  io::nifti_image_info info;
  const outcome hr =
      attempt("read_nifti_header", [&] { info = io::read_nifti_header(path); });
  FUZZ_CHECK(hr != outcome::invalid_argument, "read_nifti_header threw invalid_argument");
  const bool ok = hr == outcome::ok;
  if (ok) {
    for (std::size_t k = 0; k < 3; ++k) {
      FUZZ_CHECK(info.shape[k] >= 1 && info.shape[k] <= 32767, "shape[%zu] = %lld", k,
                 static_cast<long long>(info.shape[k]));
      FUZZ_CHECK(std::isfinite(info.voxel_size[k]) && info.voxel_size[k] > 0,
                 "voxel_size[%zu] = %g", k, info.voxel_size[k]);
      FUZZ_CHECK(std::isfinite(info.origin[k]), "origin[%zu] = %g", k, info.origin[k]);
    }
    FUZZ_CHECK(info.vox_offset >= io::nifti_min_vox_offset && info.vox_offset <= size &&
                   info.data_bytes <= size - info.vox_offset,
               "accepted header: %llu data bytes at offset %llu, file has %zu bytes",
               static_cast<unsigned long long>(info.data_bytes),
               static_cast<unsigned long long>(info.vox_offset), size);
    FUZZ_CHECK(info.data_bytes ==
                   std::uint64_t(info.num_voxels()) * io::dtype_size(info.type),
               "data_bytes %llu is not voxels x element size",
               static_cast<unsigned long long>(info.data_bytes));
    const outcome gr = attempt("geometry", [&] { (void)info.geometry(); });
    FUZZ_CHECK(gr == outcome::ok, "accepted header gives an invalid geometry: %s",
               fuzz::outcome_name(gr));
  }
  const outcome gr =
      attempt("read_nifti_geometry", [&] { (void)io::read_nifti_geometry<float>(path); });
  FUZZ_CHECK(gr == hr, "read_nifti_geometry: %s, read_nifti_header: %s",
             fuzz::outcome_name(gr), fuzz::outcome_name(hr));

  read_as<float>(path, data, ok, info);
  read_as<double>(path, data, ok, info);

  const outcome rn =
      attempt("read_nifti(null)", [&] { io::read_nifti(path, span<float>(nullptr, 3)); });
  FUZZ_CHECK(rn == outcome::invalid_argument, "read_nifti(null, 3): %s",
             fuzz::outcome_name(rn));
  return 0;
}
