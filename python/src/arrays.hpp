// Imported DLPack arrays and their checks (dtype, shape, C order, device),
// raising TypeError / ValueError that name the argument.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace resproj_py {

namespace nb = nanobind;
using in_array = nb::ndarray<nb::ro>;
using out_array = nb::ndarray<>;

/// What the checks need of an imported array.
struct array_info {
  void *data = nullptr;
  nb::dlpack::dtype dtype{};
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  int device_type = 0;
  int device_id = 0;
};

template <class A> inline array_info info_of(const A &a) {
  array_info i;
  i.data = const_cast<void *>(static_cast<const void *>(a.data()));
  i.dtype = a.dtype();
  for (std::size_t k = 0; k < a.ndim(); ++k) {
    i.shape.push_back(std::int64_t(a.shape(k)));
    i.strides.push_back(std::int64_t(a.stride(k)));
  }
  i.device_type = a.device_type();
  i.device_id = a.device_id();
  return i;
}

/// Where an array lives: the host (CPU or pinned memory) or a CUDA device.
struct place {
  bool cuda = false;
  int id = 0;
  bool operator==(const place &o) const {
    return cuda == o.cuda && (!cuda || id == o.id);
  }
  std::string str() const { return cuda ? "cuda:" + std::to_string(id) : "cpu"; }
};

inline place place_of(const array_info &a, const std::string &name) {
  switch (a.device_type) {
  case nb::device::cpu::value:
  case nb::device::cuda_host::value:
    return {false, 0};
  case nb::device::cuda::value:
  case nb::device::cuda_managed::value:
    return {true, a.device_id};
  default:
    throw nb::value_error(
        (name +
         ": arrays must be in host memory or on a CUDA device (DLPack device type " +
         std::to_string(a.device_type) + ")")
            .c_str());
  }
}

inline std::string dtype_name(const nb::dlpack::dtype &d) {
  std::string base;
  switch (nb::dlpack::dtype_code(d.code)) {
  case nb::dlpack::dtype_code::Int:
    base = "int";
    break;
  case nb::dlpack::dtype_code::UInt:
    base = "uint";
    break;
  case nb::dlpack::dtype_code::Float:
    base = "float";
    break;
  case nb::dlpack::dtype_code::Bfloat:
    base = "bfloat";
    break;
  case nb::dlpack::dtype_code::Complex:
    base = "complex";
    break;
  case nb::dlpack::dtype_code::Bool:
    return "bool";
  default:
    base = "code" + std::to_string(int(d.code)) + "_";
  }
  return base + std::to_string(int(d.bits));
}

inline std::string shape_str(const std::vector<std::int64_t> &s) {
  std::string r = "(";
  for (std::size_t k = 0; k < s.size(); ++k)
    r += (k ? ", " : "") + std::to_string(s[k]);
  return r + (s.size() == 1 ? ",)" : ")");
}

inline std::int64_t product(const std::vector<std::int64_t> &s) {
  std::int64_t n = 1;
  for (const std::int64_t v : s)
    n *= v;
  return n;
}

inline bool c_contiguous(const array_info &a) {
  std::int64_t expected = 1;
  for (std::size_t k = a.shape.size(); k-- > 0;) {
    if (a.shape[k] != 1 && a.strides[k] != expected)
      return product(a.shape) <= 1;
    expected *= a.shape[k];
  }
  return true;
}

/// Checks dtype, C order, device and shape of `a`. `shape` entries of -1
/// match any extent; `flat_ok` also accepts a 1-D array of as many elements.
inline void check_array(const array_info &a, const std::string &name,
                        const nb::dlpack::dtype &dtype, const char *why,
                        const std::vector<std::int64_t> &shape, bool flat_ok,
                        const place &where, const char *where_of) {
  if (a.dtype != dtype)
    throw nb::type_error((name + ": dtype " + dtype_name(a.dtype) + ", expected " +
                          dtype_name(dtype) + " (" + why + ")")
                             .c_str());
  bool shape_ok = a.shape.size() == shape.size();
  for (std::size_t k = 0; shape_ok && k < shape.size(); ++k)
    shape_ok = shape[k] < 0 || a.shape[k] == shape[k];
  if (!shape_ok && flat_ok && a.shape.size() == 1 && a.shape[0] == product(shape))
    shape_ok = true;
  if (!shape_ok) {
    std::string want = "(";
    for (std::size_t k = 0; k < shape.size(); ++k)
      want += (k ? ", " : "") +
              (shape[k] < 0 ? std::string("any") : std::to_string(shape[k]));
    want += shape.size() == 1 ? ",)" : ")";
    throw nb::value_error((name + ": shape " + shape_str(a.shape) + ", expected " + want +
                           (flat_ok ? " or that many elements in 1-D" : ""))
                              .c_str());
  }
  if (!c_contiguous(a))
    throw nb::value_error(
        (name + ": not C-contiguous (pass a contiguous array, e.g. ascontiguousarray)")
            .c_str());
  const place p = place_of(a, name);
  if (!(p == where))
    throw nb::value_error((name + ": on " + p.str() + ", but " + where_of + " is on " +
                           where.str() + " (all arrays of a call on one device)")
                              .c_str());
}

template <class T> constexpr nb::dlpack::dtype dt() { return nb::dtype<T>(); }

} // namespace resproj_py
