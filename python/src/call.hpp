// One projection call of the Python binding, after its arrays were checked:
// raw pointers, sizes and the choices made from the arguments. Plain C++
// (no nanobind, no CUDA), shared by the translation units that run it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "resproj/core/image_geometry.hpp"
#include "resproj/core/tof.hpp"

namespace resproj_py {

enum class op_kind : int { non_tof = 0, tof_sinogram = 1, tof_listmode = 2 };
enum class lor_kind : int { end_points = 0, detector_pairs = 1, sinogram = 2 };

/// The sinogram description of a `lor_kind::sinogram` source (see
/// scanner::sinogram_geometry), in this order.
struct sinogram_ints {
  int crystals_per_ring = 0;
  int num_rings = 0;
  int num_views = 0; ///< of the whole sinogram
  int radial_trim = 0;
  int num_radial = 0;
  int num_planes = 0; ///< of the whole sinogram
  int first_plane = 0;
  int subset_planes = 0; ///< planes of this source
};

/// The TOF parameters as given (double), converted to the call's precision.
struct tof_values {
  double bin_width = 0;
  int num_bins = 0;
  double sigma = 0;
  double num_sigmas = 3;
  double center_offset = 0;

  template <class T> resproj::tof_params<T> as() const {
    resproj::tof_params<T> t;
    t.bin_width = T(bin_width);
    t.num_bins = num_bins;
    t.sigma = T(sigma);
    t.num_sigmas = T(num_sigmas);
    t.center_offset = T(center_offset);
    return t;
  }
};

struct call {
  explicit call(const resproj::image_geometry &g) : geometry(g) {}

  bool forward = true;
  resproj::image_geometry geometry;
  void *image = nullptr; ///< read (forward) or accumulated into (back)

  op_kind op = op_kind::non_tof;
  tof_values tof;
  const std::int16_t *bins = nullptr;
  const void *sigmas = nullptr;         ///< per-LOR, T, or null
  const void *center_offsets = nullptr; ///< per-LOR, T, or null

  lor_kind lors = lor_kind::end_points;
  std::size_t count = 0;                ///< LORs
  const void *a = nullptr;              ///< starts, or the detector table (T)
  const void *b = nullptr;              ///< ends (T), or pairs / views (int32)
  const std::int32_t *planes = nullptr; ///< plane table of a sinogram
  std::size_t num_detectors = 0;
  std::size_t num_subset_views = 0;
  sinogram_ints sino;

  void *data = nullptr; ///< `out` (forward) or `values` (back)
  std::size_t data_size = 0;

  bool zero_image = false; ///< back: zero the image first (it is overwritten)
  bool gpu = false;
  int device = 0;
  std::uintptr_t stream = 0;
  bool sync = false;
};

/// Runs `c` on the CPU backend (blocking).
void run_cpu_float(const call &c);
void run_cpu_double(const call &c);

/// Runs `c` on the GPU backend (queued on `c.stream`); defined only when the
/// binding is built with the GPU backend.
void run_gpu_float(const call &c);
void run_gpu_double(const call &c);

} // namespace resproj_py
