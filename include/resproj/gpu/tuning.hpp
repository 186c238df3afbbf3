/// @file
/// @brief `gpu::tuning`: the one defaulted struct through which experts
/// can override the GPU projectors' automatic choices. Never needed for
/// speed: the library picks the fastest measured kernel from the
/// operation, the LOR source's layout, the chunk size, the precision and
/// the device (gpu/kernel_choice.hpp). Plain C++ (usable from g++ code
/// through the compiled target).
#pragma once

#include <cstddef>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {

/// Caller-owned device memory for the stencil layout of an image, as made
/// by `stencil_workspace<T>::ref()` (gpu/stencil_workspace.cuh); empty: no
/// workspace.
struct stencil_workspace_ref {
  void *data = nullptr;
  std::size_t elements = 0;
  std::size_t element_size = 0;
  int device = -1;
  int width = 2; ///< layout width (math::stencil_layout::width)
  explicit operator bool() const noexcept { return data != nullptr; }
};

/// Overrides of the GPU projectors' automatic choices. Every field's
/// default leaves the choice to the library.
struct tuning {
  /// Threads that share one LOR, each walking every n-th plane: 1, 2, 4, 8,
  /// 16 or 32; 0 (default): the library's choice.
  int threads_per_lor = 0;
  /// Threads per block: a multiple of 32 in [32, 256].
  int block_size = 256;
  /// Check before launching that every pointer is device (or managed)
  /// memory on the image's device (about a microsecond of host time per
  /// pointer). Turn off only in hot loops whose pointers were checked once;
  /// sizes are always checked.
  bool check_pointers = true;
  /// Float TOF operations: bin-edge values from the exact `erfcf` rather
  /// than the library's fast erfc (relative difference ~1e-6, well inside
  /// the projection contract). Pass the same value to the forward and the
  /// back projection of one operation, so that they stay exact transposes.
  bool exact_erfc = false;
  /// TOF list-mode projections run by the per-event kernels: this many
  /// passes, each over the events' samples in one slab of the image cut
  /// across its longest axis (math/image_slabs.hpp), so that the part of
  /// the image a pass touches can stay in the L2. 1: one pass; 0
  /// (default): the library's choice (passes for events in acquisition
  /// order on an image at least twice the L2, else one); at most 64.
  /// Passes need 32-bit voxel offsets and at most 8 threads per event;
  /// other calls take one pass. The forward values then sum the passes'
  /// parts (rounding differs from one pass); the back projection adds the
  /// same amounts.
  int slabs = 0;
  /// TOF back projections: accumulate through this caller-owned stencil
  /// workspace (faster for sorted events on an image that stays in the L2;
  /// see gpu/stencil_workspace.cuh; the list-mode OSEM backend sets one
  /// itself there). One call at a time per workspace.
  stencil_workspace_ref stencil{};
};

} // namespace gpu
RESPROJ_NAMESPACE_END
