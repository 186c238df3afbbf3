/// @file
/// @brief Format-aware device readers and writers: `.npy`, NIfTI-1,
/// list-mode and raw files straight into new device buffers and images, and
/// device buffers and images written as such files, through a
/// `device_file_io` (headers on the host, payloads on the device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"
#include "resproj/core/span.hpp"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/file_io_device.cuh"
#include "resproj/gpu/file_io_options.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/io/dtype.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/io/nifti.hpp"
#include "resproj/io/npy.hpp"
#include "resproj/io/positional_file.hpp"
#include "resproj/io/replace_file.hpp"
#include "resproj/scanner/listmode.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Reads the `.npy` file `path` into a new device buffer (allocated on
/// `io.device()`, ordered on `stream`, after the header has been checked).
/// The payload goes straight to the device when the file's byte order is
/// the host's; big-endian files are converted on the host (then the call
/// also waits for the upload). `header`, if not null, receives the header.
/// @throws io_error as `io::read_npy_header`, or for an element type other
///         than `T` or Fortran order (nothing allocated); as `read`.
template <class T>
device_buffer<T> read_npy_to_device(device_file_io &io, const std::string &path,
                                    stream_ref stream,
                                    ::resproj::io::npy_header *header = nullptr) {
  namespace rio = ::resproj::io;
  detail::require_explicit_stream(stream, "stream");
  rio::npy_header h = rio::read_npy_header(path);
  rio::check_npy_readable<T>(h, path);
  device_guard guard(io.device());
  device_buffer<T> out(h.num_elements(), stream);
  if (sizeof(T) == 1 || h.order == rio::host_byte_order()) {
    io.read(path, h.data_offset, out, stream);
  } else {
    std::vector<T> host(h.num_elements());
    rio::read_npy(path, span<T>(host.data(), host.size()));
    out.copy_from_host(span<const T>(host.data(), host.size()), stream);
    stream.synchronize(); // host is pageable and goes out of scope
  }
  if (header != nullptr)
    *header = std::move(h);
  return out;
}

/// Writes `src` with `shape` (slowest first) as a C-order little-endian
/// `.npy` file `path` (created or replaced as a whole, through a temporary
/// file renamed on success): header from the host, payload from the device. Host-blocking
/// as `device_file_io::write`.
/// @throws invalid_argument ("shape") if it does not hold `src.size()`
///         elements (before the file is touched); io_error as `write`.
template <class T>
file_io_result write_npy_from_device(device_file_io &io, const std::string &path,
                                     const device_buffer<T> &src,
                                     const std::vector<std::size_t> &shape,
                                     stream_ref stream) {
  namespace rio = ::resproj::io;
  static_assert(rio::is_dtype_type_v<T>, "write_npy_from_device: T must map to a dtype");
  static_assert(rio::host_is_little_endian(),
                "the .npy writer assumes a little-endian host");
  detail::require_explicit_stream(stream, "stream");
  const std::string hdr =
      rio::npy_header_bytes(rio::dtype_of_v<T>, shape, src.size(), "src");
  file_io_result result;
  rio::replace_file_via(path, [&](const std::string &tmp) {
    {
      const rio::positional_file f = rio::positional_file::open_write(tmp, true);
      f.pwrite_exact(tmp, hdr.data(), hdr.size(), 0);
    }
    result = io.write(tmp, hdr.size(), src, stream);
  });
  return result;
}

/// Reads the NIfTI-1 image `path` into a new `device_image<T>` (geometry
/// from the header). float32/float64 data in host byte order, unscaled and
/// with no reversed axis, go straight to the device; anything else is
/// converted on the host by `io::read_nifti` and uploaded (the call then
/// also waits for the upload).
/// @throws io_error as `io::read_nifti_header` (before anything is
///         allocated); as `read`.
template <class T>
device_image<T> read_nifti_to_device(device_file_io &io, const std::string &path,
                                     stream_ref stream) {
  namespace rio = ::resproj::io;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "read_nifti_to_device: T must be float or double");
  detail::require_explicit_stream(stream, "stream");
  const rio::nifti_image_info info = rio::read_nifti_header(path);
  device_guard guard(io.device());
  device_image<T> image(info.geometry(), stream);
  const bool direct = info.type == rio::dtype_of_v<T> &&
                      info.order == rio::host_byte_order() && !info.scaled &&
                      !info.flipped[0] && !info.flipped[1] && !info.flipped[2];
  if (direct) {
    io.read(path, info.vox_offset, image.data(), info.data_bytes, stream);
  } else {
    std::vector<T> host(image.size());
    rio::read_nifti(path, span<T>(host.data(), host.size()));
    image.upload(span<const T>(host.data(), host.size()), stream);
    stream.synchronize(); // host is pageable and goes out of scope
  }
  return image;
}

/// Writes `image` as the NIfTI-1 file `path` (as `io::write_nifti`: header
/// from the host, voxels from the device; created or replaced as a whole,
/// through a temporary file renamed on success). Host-blocking as `write`.
/// @throws invalid_argument as `io::write_nifti` (before the file is
///         touched); io_error as `write`.
template <class T>
file_io_result write_nifti_from_device(device_file_io &io, const std::string &path,
                                       const device_image<T> &image, stream_ref stream) {
  namespace rio = ::resproj::io;
  detail::require_explicit_stream(stream, "stream");
  const auto hdr = rio::nifti_header_bytes<T>(image.geometry(), image.size(), "image");
  file_io_result result;
  rio::replace_file_via(path, [&](const std::string &tmp) {
    {
      const rio::positional_file f = rio::positional_file::open_write(tmp, true);
      f.pwrite_exact(tmp, hdr.data(), hdr.size(), 0);
    }
    result = io.write(tmp, hdr.size(), image.buffer(), stream);
  });
  return result;
}

/// Reads every event of the list-mode file `path` into a new device buffer.
/// @throws io_error as `io::count_listmode_events` (size not a multiple of
///         10 bytes etc., before anything is allocated); as `read`.
inline device_buffer<scanner::listmode_event>
read_listmode_to_device(device_file_io &io, const std::string &path, stream_ref stream) {
  detail::require_explicit_stream(stream, "stream");
  const std::uint64_t n = ::resproj::io::count_listmode_events(path);
  device_guard guard(io.device());
  device_buffer<scanner::listmode_event> out(std::size_t(n), stream);
  io.read(path, 0, out, stream);
  return out;
}

/// Writes `events` to the list-mode file `path` (created or replaced as a
/// whole: written under a temporary name, renamed on success). Host-blocking
/// as `write`. @throws as `write` and `io::replace_file_via`.
inline file_io_result
write_listmode_from_device(device_file_io &io, const std::string &path,
                           const device_buffer<scanner::listmode_event> &events,
                           stream_ref stream) {
  file_io_result result;
  ::resproj::io::replace_file_via(path, [&](const std::string &tmp) {
    result = io.write(tmp, 0, events, stream, true);
  });
  return result;
}

/// Writes `src` as a raw array to `path` (created or replaced as a whole,
/// through a temporary file), host byte order. Host-blocking as `write`.
/// @throws as `write` and `io::replace_file_via`.
template <class T>
file_io_result write_raw_from_device(device_file_io &io, const std::string &path,
                                     const device_buffer<T> &src, stream_ref stream) {
  file_io_result result;
  ::resproj::io::replace_file_via(path, [&](const std::string &tmp) {
    result = io.write(tmp, 0, src, stream, true);
  });
  return result;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
