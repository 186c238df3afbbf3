/// @file
/// @brief Element types of files (`io::dtype`), their sizes and names, the
/// mapping from C++ types, and little-endian conversion helpers.
///
/// Shared by every file format of `resproj::io` (raw, `.npy`, NIfTI,
/// list-mode). Host code, standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Element type of an array stored in a file. The numeric values are
/// stable (they may be stored), new types are only ever appended.
enum class dtype : std::uint8_t {
  uint8 = 0,   ///< unsigned 8-bit integer
  int8 = 1,    ///< signed 8-bit integer (two's complement)
  uint16 = 2,  ///< unsigned 16-bit integer
  int16 = 3,   ///< signed 16-bit integer
  uint32 = 4,  ///< unsigned 32-bit integer
  int32 = 5,   ///< signed 32-bit integer
  uint64 = 6,  ///< unsigned 64-bit integer
  int64 = 7,   ///< signed 64-bit integer
  float32 = 8, ///< IEEE 754 binary32
  float64 = 9, ///< IEEE 754 binary64
};

/// Byte order of multi-byte elements.
enum class byte_order : std::uint8_t {
  little = 0, ///< least significant byte first
  big = 1,    ///< most significant byte first
};

/// Size of one element in bytes (1, 2, 4 or 8); 0 for a value outside the enum.
constexpr std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
  case dtype::uint8:
  case dtype::int8:
    return 1;
  case dtype::uint16:
  case dtype::int16:
    return 2;
  case dtype::uint32:
  case dtype::int32:
  case dtype::float32:
    return 4;
  case dtype::uint64:
  case dtype::int64:
  case dtype::float64:
    return 8;
  }
  return 0;
}

/// Name of the type as NumPy spells it ("float32", "int16", ...); "invalid"
/// for a value outside the enum.
constexpr const char *dtype_name(dtype t) noexcept {
  switch (t) {
  case dtype::uint8:
    return "uint8";
  case dtype::int8:
    return "int8";
  case dtype::uint16:
    return "uint16";
  case dtype::int16:
    return "int16";
  case dtype::uint32:
    return "uint32";
  case dtype::int32:
    return "int32";
  case dtype::uint64:
    return "uint64";
  case dtype::int64:
    return "int64";
  case dtype::float32:
    return "float32";
  case dtype::float64:
    return "float64";
  }
  return "invalid";
}

/// `true` for float32 and float64.
constexpr bool dtype_is_floating(dtype t) noexcept {
  return t == dtype::float32 || t == dtype::float64;
}

/// `true` for the signed integer types (int8 ... int64).
constexpr bool dtype_is_signed_integer(dtype t) noexcept {
  return t == dtype::int8 || t == dtype::int16 || t == dtype::int32 || t == dtype::int64;
}

namespace detail {
template <class T> struct dtype_of_impl { static constexpr bool known = false; };
#define RESPROJ_IO_DTYPE_OF(type, value)                                                 \
  template <> struct dtype_of_impl<type> {                                               \
    static constexpr bool known = true;                                                  \
    static constexpr dtype v = dtype::value;                                             \
  };
RESPROJ_IO_DTYPE_OF(std::uint8_t, uint8)
RESPROJ_IO_DTYPE_OF(std::int8_t, int8)
RESPROJ_IO_DTYPE_OF(std::uint16_t, uint16)
RESPROJ_IO_DTYPE_OF(std::int16_t, int16)
RESPROJ_IO_DTYPE_OF(std::uint32_t, uint32)
RESPROJ_IO_DTYPE_OF(std::int32_t, int32)
RESPROJ_IO_DTYPE_OF(std::uint64_t, uint64)
RESPROJ_IO_DTYPE_OF(std::int64_t, int64)
RESPROJ_IO_DTYPE_OF(float, float32)
RESPROJ_IO_DTYPE_OF(double, float64)
#undef RESPROJ_IO_DTYPE_OF
} // namespace detail

/// `true` if `T` (cv-qualifiers ignored) is one of the fixed-width types
/// that map to a `dtype`: std::uint8_t ... std::int64_t, float, double.
/// (`char`, and `long` where it is not the int64_t type, are not.)
template <class T>
inline constexpr bool is_dtype_type_v = detail::dtype_of_impl<std::remove_cv_t<T>>::known;

/// `dtype_of<T>::value`: the `dtype` of `T` (cv-qualifiers ignored);
/// ill-formed for other types.
template <class T> struct dtype_of {
  static_assert(is_dtype_type_v<T>, "resproj::io: no dtype for this type (use "
                                    "std::[u]int{8,16,32,64}_t, float or double)");
  static constexpr dtype value = detail::dtype_of_impl<std::remove_cv_t<T>>::v;
};

/// The `dtype` of `T` (cv-qualifiers ignored); ill-formed for other types.
template <class T> inline constexpr dtype dtype_of_v = dtype_of<T>::value;

static_assert(sizeof(float) == 4 && sizeof(double) == 8,
              "resproj::io needs 4-byte float and 8-byte double");

/// Byte order of the host, known at compile time.
constexpr byte_order host_byte_order() noexcept {
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) &&                          \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return byte_order::big;
#else
  // GCC / Clang little-endian hosts, and MSVC (little-endian on every target).
  return byte_order::little;
#endif
}

/// `true` on a little-endian host (where the conversions below are no-ops).
constexpr bool host_is_little_endian() noexcept {
  return host_byte_order() == byte_order::little;
}

/// Reverses the bytes of each of `count` elements of `element_size` bytes
/// at `data`, in place. `element_size` 0 or 1 does nothing.
inline void byteswap_elements(void *data, std::size_t count,
                              std::size_t element_size) noexcept {
  if (element_size <= 1 || data == nullptr)
    return;
  auto *p = static_cast<unsigned char *>(data);
  for (std::size_t i = 0; i < count; ++i, p += element_size)
    for (std::size_t a = 0, b = element_size - 1; a < b; ++a, --b) {
      const unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/// Converts `count` elements of `element_size` bytes in place between
/// `order` and the host's byte order (the operation is its own inverse, so
/// it serves for reading and for writing). A no-op when they agree.
inline void convert_byte_order(void *data, std::size_t count, std::size_t element_size,
                               byte_order order) noexcept {
  if (order != host_byte_order())
    byteswap_elements(data, count, element_size);
}

/// Converts `count` elements of type `t` in place from little-endian (file)
/// order to host order. A no-op on little-endian hosts.
inline void little_endian_to_host(void *data, std::size_t count, dtype t) noexcept {
  convert_byte_order(data, count, dtype_size(t), byte_order::little);
}

/// Converts `count` elements of type `t` in place from host order to
/// little-endian (file) order. A no-op on little-endian hosts.
inline void host_to_little_endian(void *data, std::size_t count, dtype t) noexcept {
  convert_byte_order(data, count, dtype_size(t), byte_order::little);
}

/// Reads one `T` (any `is_dtype_type_v` type) stored little-endian at `bytes`
/// (no alignment needed).
template <class T> T load_little_endian(const unsigned char *bytes) noexcept {
  static_assert(is_dtype_type_v<T>, "load_little_endian: not a dtype type");
  unsigned char tmp[sizeof(T)];
  std::memcpy(tmp, bytes, sizeof(T));
  convert_byte_order(tmp, 1, sizeof(T), byte_order::little);
  T v;
  std::memcpy(&v, tmp, sizeof(T));
  return v;
}

/// Stores `v` (any `is_dtype_type_v` type) little-endian at `bytes` (no
/// alignment needed).
template <class T> void store_little_endian(T v, unsigned char *bytes) noexcept {
  static_assert(is_dtype_type_v<T>, "store_little_endian: not a dtype type");
  std::memcpy(bytes, &v, sizeof(T));
  convert_byte_order(bytes, 1, sizeof(T), byte_order::little);
}

} // namespace io
RESPROJ_NAMESPACE_END
