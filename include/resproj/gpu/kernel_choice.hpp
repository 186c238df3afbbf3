/// @file
/// @brief The table of measured kernel choices: from the operation, the
/// direction, the LOR source's layout, the chunk size, the precision and
/// the device, which thread-to-LOR mapping and kernel variant the GPU
/// projectors run. One table, in one place; every row names the section of
/// docs/kernel-choices.md that holds its measurement. Plain C++: the
/// choice is made on the host, and CPU-only builds test it.
#pragma once

#include <cstddef>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/gpu/tuning.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// The projection operations (see core/operations.hpp).
enum class operation_kind { non_tof, tof_sinogram, tof_listmode };
/// Forward or back projection.
enum class direction { forward, back };

/// What a GPU projection call runs: the outcome of `choose_kernel`.
struct kernel_choice {
  int threads_per_lor = 1;         ///< lanes per LOR: 1, 2, 4, 8, 16 or 32
  int block_size = 256;            ///< threads per block
  std::size_t rows = 0;            ///< > 1: lanes take neighbouring sinogram planes
  bool fast_erfc = false;          ///< TOF, float: the library's fast erfc
  bool sample_first = false;       ///< list-mode forward: weight only non-zero samples
  bool vector_atomics = false;     ///< TOF back, float: paired neighbour atomics
  bool lockstep = false;           ///< list-mode: a warp walks its planes together
  bool transaxial_bins = false;    ///< non-TOF sinogram: a block per (view, radial) bin
  bool wide_index = false;         ///< 64-bit voxel offsets even where 32 bits fit
  bool check_pointers = true;      ///< residency checks before the launch
  int slabs = 1;                   ///< TOF list-mode, per-event kernels: passes
  stencil_workspace_ref stencil{}; ///< TOF back: the caller's workspace
  const char *measured_in = "";    ///< section of docs/kernel-choices.md
};

namespace detail {

/// One row of the table: the choice for an operation, a direction and a
/// layout when the chunk fills the GPU (smaller chunks get more lanes).
struct kernel_rule {
  operation_kind operation;
  direction dir;
  lor_layout::order order;
  bool planes_as_rows; ///< lanes take neighbouring planes of a sinogram
  int lanes;           ///< lanes per LOR for a chunk that fills the GPU
  bool sample_first, vector_atomics, lockstep;
  bool transaxial_bins; ///< sinogram back: axial profiles per (view, radial) bin
  const char *measured_in;
};

using order = lor_layout::order;
/// The measured choices (one H200; docs/kernel-choices.md). A call whose
/// layout has no row of its own takes the operation's `unordered` row.
inline constexpr kernel_rule kernel_table[] = {
    // operation, direction, layout, rows, lanes, sample first, vector atomics,
    // lock-step, transaxial bins
    {operation_kind::non_tof, direction::forward, order::unordered, false, 4, false,
     false, false, false, "Non-TOF mapping"},
    {operation_kind::non_tof, direction::forward, order::sinogram, true, 1, false, false,
     false, true, "Transaxial bins"},
    {operation_kind::non_tof, direction::forward, order::sorted_events, false, 2, false,
     false, false, false, "Non-TOF mapping"},
    {operation_kind::non_tof, direction::back, order::unordered, false, 4, false, false,
     false, false, "Non-TOF mapping"},
    {operation_kind::non_tof, direction::back, order::sinogram, true, 1, false, false,
     false, true, "Transaxial bins"},
    {operation_kind::tof_sinogram, direction::forward, order::unordered, false, 8, false,
     false, false, false, "TOF sinogram"},
    {operation_kind::tof_sinogram, direction::back, order::unordered, false, 4, false,
     true, false, false, "TOF sinogram"},
    {operation_kind::tof_sinogram, direction::back, order::sinogram, true, 1, false,
     false, false, false, "TOF sinogram"},
    {operation_kind::tof_listmode, direction::forward, order::unordered, false, 2, true,
     false, false, false, "TOF list-mode"},
    {operation_kind::tof_listmode, direction::forward, order::sorted_events, false, 2,
     true, false, false, false, "TOF list-mode"},
    {operation_kind::tof_listmode, direction::back, order::unordered, false, 2, false,
     true, false, false, "TOF list-mode"},
    {operation_kind::tof_listmode, direction::back, order::sorted_events, false, 1, false,
     true, true, false, "TOF list-mode"},
};

/// Fewest sinogram planes per call that go by transaxial bins.
inline constexpr std::size_t min_bin_planes = 256;

/// The table's row for (operation, direction, layout order).
inline const kernel_rule &find_rule(operation_kind o, direction d, lor_layout::order k) {
  const kernel_rule *fallback = nullptr;
  for (const kernel_rule &r : kernel_table) {
    if (r.operation != o || r.dir != d)
      continue;
    if (r.order == k)
      return r;
    if (r.order == lor_layout::order::unordered)
      fallback = &r;
  }
  return *fallback; // every (operation, direction) has an unordered row
}

/// Passes over slabs of the image for TOF list-mode events in acquisition
/// order on an image at least twice the L2 (docs/kernel-choices.md, "Slab
/// passes"): forward one per two L2 sizes of image, back one per L2 size
/// (rounded up); 1 otherwise.
inline int auto_slabs(direction d, std::size_t image_bytes, std::size_t l2_bytes) {
  if (l2_bytes == 0 || image_bytes < 2 * l2_bytes)
    return 1;
  const std::size_t per_pass = d == direction::forward ? 2 * l2_bytes : l2_bytes;
  const std::size_t n = (image_bytes + per_pass - 1) / per_pass;
  return n > 64 ? 64 : int(n);
}

/// Lanes per event of the back projection in slab passes.
inline constexpr int slab_back_lanes = 8;

/// @throws invalid_argument for an unsupported block size or lane count.
inline void check_tuning(const tuning &t) {
  if (t.block_size <= 0 || t.block_size > 256 || t.block_size % 32 != 0)
    resproj::detail::throw_invalid("tuning.block_size",
                                   "must be a multiple of 32 in [32, 256] (got " +
                                       std::to_string(t.block_size) + ")");
  if (t.slabs < 0 || t.slabs > 64)
    resproj::detail::throw_invalid("tuning.slabs", "must be in [0, 64] (got " +
                                                       std::to_string(t.slabs) + ")");
  const int g = t.threads_per_lor;
  if (g != 0 && g != 1 && g != 2 && g != 4 && g != 8 && g != 16 && g != 32)
    resproj::detail::throw_invalid("tuning.threads_per_lor",
                                   "must be 0, 1, 2, 4, 8, 16 or 32 (got " +
                                       std::to_string(g) + ")");
}

} // namespace detail

/// The kernel a GPU projection runs.
/// @param operation      the operation
/// @param dir            forward or back projection
/// @param layout         the LOR source's layout
/// @param count          LORs of the call
/// @param is_float       single precision (fast erfc, vector loads and
///                       atomics are float-only)
/// @param multiprocessors the device's multiprocessor count
/// @param t              the caller's overrides
/// @param image_bytes    the image's (or accumulator's) bytes; 0: unknown
/// @param l2_bytes       the device's L2 size; 0: unknown (no slab passes)
/// @throws invalid_argument naming "tuning.*" for unsupported overrides.
inline kernel_choice choose_kernel(operation_kind operation, direction dir,
                                   const lor_layout &layout, std::size_t count,
                                   bool is_float, int multiprocessors,
                                   const tuning &t = {}, std::size_t image_bytes = 0,
                                   std::size_t l2_bytes = 0) {
  detail::check_tuning(t);
  const detail::kernel_rule *r = &detail::find_rule(operation, dir, layout.kind);
  const std::size_t rows = r->planes_as_rows ? layout.planes_in(count) : 0;
  if (r->planes_as_rows && rows == 0) // not whole planes: memory order
    r = &detail::find_rule(operation, dir, lor_layout::order::unordered);
  // Threads that keep the GPU busy: about 512 per multiprocessor.
  const std::size_t wanted = std::size_t(multiprocessors > 0 ? multiprocessors : 1) * 512;
  kernel_choice c;
  c.block_size = t.block_size;
  c.check_pointers = t.check_pointers;
  c.measured_in = r->measured_in;
  c.rows = rows;
  const bool tof = operation != operation_kind::non_tof;
  c.fast_erfc = tof && is_float && !t.exact_erfc;
  c.sample_first = r->sample_first;
  c.vector_atomics = r->vector_atomics && is_float;
  // A block per transaxial bin pays for whole axial profiles: it needs many
  // planes per bin (dmi: 301 planes break even forward, 30 lose).
  c.transaxial_bins =
      r->transaxial_bins && rows >= detail::min_bin_planes && t.threads_per_lor == 0;
  // Lock-step needs a full GPU of events; smaller calls take lanes instead.
  c.lockstep = r->lockstep && t.threads_per_lor == 0 && count >= wanted;
  if (tof && dir == direction::back)
    c.stencil = t.stencil;
  // Slab passes: on request, or for events in acquisition order that fill
  // the GPU on an image the L2 cannot hold.
  bool slabs_chosen = false;
  if (operation == operation_kind::tof_listmode && !c.lockstep) {
    if (t.slabs > 0) {
      c.slabs = t.slabs;
    } else if (layout.kind == lor_layout::order::unordered && count >= wanted) {
      c.slabs = detail::auto_slabs(dir, image_bytes, l2_bytes);
      slabs_chosen = c.slabs > 1;
    }
  }
  if (t.threads_per_lor != 0 || c.lockstep) {
    c.threads_per_lor = c.lockstep ? 1 : t.threads_per_lor;
    return c;
  }
  // Chunks too small to fill the GPU get more lanes per LOR (1e3 LORs: 32,
  // 1e4: 8).
  int lanes = slabs_chosen && dir == direction::back ? detail::slab_back_lanes : r->lanes;
  while (lanes < 32 && count * std::size_t(lanes) < wanted)
    lanes *= 2;
  c.threads_per_lor = lanes;
  return c;
}

} // namespace gpu
RESPROJ_NAMESPACE_END
