// Imported DLPack arrays and their checks (dtype, shape, C order, device),
// raising TypeError / ValueError that name the argument.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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

/// A NumPy array owning `v`, of the given shape.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T> v, std::vector<std::size_t> shape) {
  auto *owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned,
                    [](void *p) noexcept { delete static_cast<std::vector<T> *>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner);
}

/// An array argument of a projection call: any DLPack array (imported by
/// nanobind and kept for the call), or the plain description the Python
/// layer makes of a PyTorch tensor, the tuple `(data_ptr, shape, strides,
/// dtype code, dtype bits, DLPack device type, device index)`, which costs
/// a fraction of a DLPack export. Either way the memory is the caller's and
/// no copy is made.
template <class A> struct array_arg {
  array_info info;
  std::optional<A> keep;
};
using in_arg = array_arg<in_array>;
using out_arg = array_arg<out_array>;

template <class A> inline const array_info &info_of(const array_arg<A> &a) {
  return a.info;
}

namespace detail {
/// Reads `tuple` of Python ints into `out`; false (and no Python error set)
/// if an entry is not an int.
inline bool int_tuple(PyObject *tuple, std::vector<std::int64_t> &out) {
  if (!PyTuple_Check(tuple))
    return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  out.resize(std::size_t(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, k));
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    out[std::size_t(k)] = std::int64_t(v);
  }
  return true;
}

/// Parses the plain tensor description of `array_arg` (see there).
inline bool raw_array(PyObject *t, array_info &i) {
  if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 7)
    return false;
  long long v[4];
  for (int k = 0; k < 4; ++k) {
    v[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, k + 3));
    if (v[k] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  void *data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(t, 0));
  if (data == nullptr && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (!int_tuple(PyTuple_GET_ITEM(t, 1), i.shape) ||
      !int_tuple(PyTuple_GET_ITEM(t, 2), i.strides) || i.shape.size() != i.strides.size())
    return false;
  i.data = data;
  i.dtype = nb::dlpack::dtype{std::uint8_t(v[0]), std::uint8_t(v[1]), 1};
  i.device_type = int(v[2]);
  i.device_id = int(v[3]);
  return true;
}
} // namespace detail

} // namespace resproj_py

namespace nanobind::detail {
template <class A> struct type_caster<resproj_py::array_arg<A>> {
  NB_TYPE_CASTER(resproj_py::array_arg<A>, const_name("ndarray"))

  bool from_python(handle src, uint8_t flags, cleanup_list *cleanup) noexcept {
    if (resproj_py::detail::raw_array(src.ptr(), value.info)) {
      value.keep.reset();
      return true;
    }
    make_caster<A> c;
    if (!c.from_python(src, flags, cleanup))
      return false;
    value.info = resproj_py::info_of(c.value);
    value.keep.emplace(std::move(c.value));
    return true;
  }
};
} // namespace nanobind::detail
