/// @file
/// @brief The kernel launches of the GPU projectors, one per operation and
/// direction, for a `kernel_choice` already made and arguments already
/// checked (gpu/projector.cuh does both). Tests call these directly to run
/// every variant. Every back projection is one `launch_back` per operation,
/// run with the adder of the call: the image's atomics (`run_back` into a
/// `device_image_view`) or the fixed-point integer atomics (`run_back`
/// into a `fixed_point_image`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "resproj/core/config.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/gpu/detail/column_fixed_point.cuh"
#include "resproj/gpu/detail/column_kernels.cuh"
#include "resproj/gpu/detail/joseph_kernels.cuh"
#include "resproj/gpu/detail/stencil_kernels.cuh"
#include "resproj/gpu/detail/tof_kernels.cuh"
#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_image_view.hpp"
#include "resproj/gpu/fixed_point_image.cuh"
#include "resproj/gpu/kernel_choice.hpp"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/math/fixed_point.hpp"
#include "resproj/math/image_grid.hpp"
#include "resproj/math/image_slabs.hpp"
#include "resproj/math/stencil_layout.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Calls `f(std::integral_constant<int, G>{})` for the runtime value g.
template <class F> void dispatch_group(int g, F &&f) {
  switch (g) {
  case 1:
    f(std::integral_constant<int, 1>{});
    break;
  case 2:
    f(std::integral_constant<int, 2>{});
    break;
  case 4:
    f(std::integral_constant<int, 4>{});
    break;
  case 8:
    f(std::integral_constant<int, 8>{});
    break;
  case 16:
    f(std::integral_constant<int, 16>{});
    break;
  default:
    f(std::integral_constant<int, 32>{});
    break;
  }
}

/// Calls `f(std::bool_constant<b>{})`.
template <class F> void dispatch_bool(bool b, F &&f) {
  if (b)
    f(std::true_type{});
  else
    f(std::false_type{});
}

/// `dispatch_bool` for the fast erfc: float only (double kernels always
/// use the library erfc), so double compiles one kernel.
template <class T, class F> void dispatch_fast_erfc(bool fast, F &&f) {
  if constexpr (std::is_same_v<T, float>)
    dispatch_bool(fast, f);
  else
    f(std::false_type{});
}

/// The LOR order of a chunk of `count` LORs under `c` (rows > 1 divides
/// count by construction of the choice).
inline lor_order order_of(const kernel_choice &c, std::size_t count) {
  lor_order order;
  if (c.rows > 1 && count % c.rows == 0) {
    order.rows = c.rows;
    order.columns = count / c.rows;
  }
  return order;
}

/// Launches a per-LOR kernel `Kernels::get<T, I, G>()` over `count` LORs
/// with `lanes` (G) threads per LOR, 32-bit voxel indices where they fit
/// (and `c.wide_index` is off), on the image's device. Kernel parameters
/// are `(grid, count, order, args...)`.
template <class T, class Kernels, class... Args>
void launch_per_lor(const device_image_view<const T> &image, std::size_t count, int lanes,
                    const kernel_choice &c, bool wide, stream_ref s, const char *name,
                    Args... args) {
  const lor_order order = order_of(c, count);
  const device_guard guard(image.device);
  const auto grid = math::image_grid<T>::from(image.geometry);
  const bool narrow = !wide && !c.wide_index && math::fits_32bit_index(grid);
  dispatch_group(lanes, [&](auto group) {
    constexpr int G = decltype(group)::value;
    const std::size_t block = std::size_t(c.block_size);
    const std::size_t blocks = (count * std::size_t(G) + block - 1) / block;
    if (narrow)
      launch(Kernels::template get<T, std::int32_t, G>(), blocks, c.block_size, s, name,
             grid, count, order, args...);
    else
      launch(Kernels::template get<T, std::int64_t, G>(), blocks, c.block_size, s, name,
             grid, count, order, args...);
  });
}

// Kernel selectors for launch_per_lor.
template <class Lors> struct forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return forward_kernel<T, I, G, Lors>;
  }
};
template <class Lors, class Add> struct back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return back_kernel<T, I, G, Lors, Add>;
  }
};
template <class Lors, bool FastErfc> struct tof_sino_forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_sino_forward_kernel<T, I, G, Lors, FastErfc>;
  }
};
template <class Lors, class Add, bool FastErfc> struct tof_sino_back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_sino_back_kernel<T, I, G, Lors, Add, FastErfc>;
  }
};
/// Slab-pass kernels exist for 32-bit voxel offsets and up to
/// `max_slab_lanes` lanes per event (`slab_passes_apply`); the selectors
/// name the one-pass kernel for the other combinations, which never run
/// in passes, so that they are not compiled twice.
inline constexpr int max_slab_lanes = 8;
template <bool Slabs, class I, int G> constexpr bool slab_kernel() {
  const bool narrow = std::is_same_v<I, std::int32_t>;
  return Slabs && narrow && G <= max_slab_lanes;
}

template <class Lors, bool SampleFirst, bool FastErfc, bool Slabs>
struct tof_lm_forward_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_forward_kernel<T, I, G, Lors, SampleFirst, FastErfc,
                                 slab_kernel<Slabs, I, G>()>;
  }
};
template <class Lors, class Add, bool FastErfc, bool Slabs> struct tof_lm_back_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_back_kernel<T, I, G, Lors, Add, FastErfc, slab_kernel<Slabs, I, G>()>;
  }
};
template <class Lors, bool SampleFirst, bool FastErfc>
struct tof_lm_forward_lockstep_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_forward_lockstep_kernel<T, I, Lors, SampleFirst, FastErfc>;
  }
};
template <class Lors, class Add, bool FastErfc> struct tof_lm_back_lockstep_kernels {
  template <class T, class I, int G> static constexpr auto get() {
    return tof_lm_back_lockstep_kernel<T, I, Lors, Add, FastErfc>;
  }
};

/// Calls `run(add, wide)` with the atomic adder of a back projection: into
/// the stencil workspace `c.stencil` when set (then queues its reduction
/// into `image` on `s`; `wide` when the layout needs 64-bit offsets), else
/// paired vector atomics (`c.vector_atomics`) or scalar atomics.
template <class T, class Run>
void run_with_back_adder(const kernel_choice &c, const device_image_view<T> &image,
                         stream_ref s, Run &&run) {
  const auto grid = math::image_grid<T>::from(image.geometry);
  if (c.stencil) {
    const auto layout = math::make_stencil_layout(grid, c.stencil.width);
    run(stencil_atomic_add<T, paired_atomic_add>{static_cast<T *>(c.stencil.data), layout,
                                                 back_adder<true>::make(grid)},
        !math::fits_32bit_index(layout));
    stencil_reduce<T>(c.stencil, image, s);
  } else if (c.vector_atomics) {
    run(back_adder<true>::make(grid), false);
  } else {
    run(back_adder<false>::make(grid), false);
  }
}

// ------------------------------------------------------------- non-TOF --

/// Shared memory of a transaxial-bin block: two blocks fit on an SM.
inline constexpr std::size_t column_shared_budget = 100 * 1024;

/// Launches `Kernels::get<T, I>()` over the columns of a `[c.rows][count /
/// c.rows]` LOR array by transaxial bins (gpu/detail/column_kernels.cuh),
/// parameters `(grid, rows, columns, plan, args...)`. Returns false,
/// launching nothing, when the image's axial profiles do not fit in
/// `budget` bytes of shared memory per block.
template <class T, class Kernels, class Lors, class... Args>
bool launch_columns(const device_image_view<const T> &image, const Lors &src,
                    const kernel_choice &c, stream_ref s, const char *name,
                    std::size_t budget, int max_tile_rows, Args... args) {
  const device_guard guard(image.device);
  const auto grid = math::image_grid<T>::from(image.geometry);
  const std::size_t rows = c.rows, columns = src.count / c.rows;
  const column_plan plan = make_column_plan(grid, rows, budget, max_tile_rows);
  if (plan.profile_rows == 0)
    return false;
  if (!c.wide_index && math::fits_32bit_index(grid))
    launch_shared(Kernels::template get<T, std::int32_t>(), columns, plan.profile_rows,
                  plan.shared_bytes, s, name, grid, rows, columns, plan, args...);
  else
    launch_shared(Kernels::template get<T, std::int64_t>(), columns, plan.profile_rows,
                  plan.shared_bytes, s, name, grid, rows, columns, plan, args...);
  return true;
}

template <class Lors> struct forward_columns_kernels {
  template <class T, class I> static constexpr auto get() {
    return forward_columns_kernel<T, I, Lors>;
  }
};
template <class Lors, class Add> struct back_columns_kernels {
  template <class T, class I> static constexpr auto get() {
    return back_columns_kernel<T, I, Lors, Add>;
  }
};

/// Whether `c` runs a call of `count` LORs by transaxial bins.
inline bool by_transaxial_bins(const kernel_choice &c, std::size_t count) {
  return c.transaxial_bins && c.rows > 1 && count % c.rows == 0;
}

/// Non-TOF back projection by transaxial bins, scalar atomics into
/// `image`; false when the profiles do not fit (see `launch_columns`).
template <class T, class Lors>
bool launch_back_columns(const device_image_view<T> &image, const Lors &src,
                         span<const T> values, const kernel_choice &c, stream_ref s,
                         std::size_t budget = column_shared_budget,
                         int max_tile_rows = 2048) {
  return launch_columns<T, back_columns_kernels<Lors, atomic_add>>(
      device_image_view<const T>(image), src, c, s, "back_columns_kernel", budget,
      max_tile_rows, image.data, src, values.data(), atomic_add{});
}

/// Non-TOF forward projection by transaxial bins; false when the profiles
/// do not fit (see `launch_columns`).
template <class T, class Lors>
bool launch_forward_columns(const device_image_view<const T> &image, const Lors &src,
                            span<T> out, const kernel_choice &c, stream_ref s,
                            std::size_t budget = column_shared_budget,
                            int max_tile_rows = 2048) {
  return launch_columns<T, forward_columns_kernels<Lors>>(
      image, src, c, s, "forward_columns_kernel", budget, max_tile_rows, image.data, src,
      out.data());
}

template <class T, class Lors>
void run_forward(const op::non_tof &, const device_image_view<const T> &image,
                 const Lors &src, span<T> out, const kernel_choice &c, stream_ref s) {
  if (by_transaxial_bins(c, src.count) && launch_forward_columns(image, src, out, c, s))
    return;
  launch_per_lor<T, forward_kernels<Lors>>(image, src.count, c.threads_per_lor, c, false,
                                           s, "forward_kernel", image.data, src,
                                           out.data());
}

/// Back projection of each operation with the adders `with_adder` gives:
/// it calls `run(add, wide)` once per adder it needs (`wide`: 64-bit voxel
/// offsets required).
template <class T, class Lors, class WithAdder>
void launch_back(const op::non_tof &, const device_image_view<T> &image, const Lors &src,
                 span<const T> values, const kernel_choice &c, stream_ref s,
                 WithAdder &&with_adder) {
  with_adder([&](auto add, bool wide) {
    launch_per_lor<T, back_kernels<Lors, decltype(add)>>(
        device_image_view<const T>(image), src.count, c.threads_per_lor, c, wide, s,
        "back_kernel", image.data, src, values.data(), add);
  });
}

template <class T, class Lors>
void run_back(const op::non_tof &o, const device_image_view<T> &image, const Lors &src,
              span<const T> values, const kernel_choice &c, stream_ref s) {
  if (by_transaxial_bins(c, src.count) && launch_back_columns(image, src, values, c, s))
    return;
  launch_back(o, image, src, values, c, s, [](auto &&run) { run(atomic_add{}, false); });
}

// -------------------------------------------------------- TOF sinogram --

template <class T, class Lors>
void run_forward(const op::tof_sinogram<T> &o, const device_image_view<const T> &image,
                 const Lors &src, span<T> out, const kernel_choice &c, stream_ref s) {
  const auto tof = o.tof.subview(0, src.count);
  dispatch_fast_erfc<T>(c.fast_erfc, [&](auto fast) {
    launch_per_lor<T, tof_sino_forward_kernels<Lors, decltype(fast)::value>>(
        image, src.count, c.threads_per_lor, c, false, s, "tof_sino_forward_kernel",
        image.data, src, tof, out.data());
  });
}

template <class T, class Lors, class WithAdder>
void launch_back(const op::tof_sinogram<T> &o, const device_image_view<T> &image,
                 const Lors &src, span<const T> values, const kernel_choice &c,
                 stream_ref s, WithAdder &&with_adder) {
  const auto tof = o.tof.subview(0, src.count);
  with_adder([&](auto add, bool wide) {
    dispatch_fast_erfc<T>(c.fast_erfc, [&](auto fast) {
      launch_per_lor<T,
                     tof_sino_back_kernels<Lors, decltype(add), decltype(fast)::value>>(
          device_image_view<const T>(image), src.count, c.threads_per_lor, c, wide, s,
          "tof_sino_back_kernel", image.data, src, tof, values.data(), add);
    });
  });
}

// -------------------------------------------------------- TOF list-mode --

/// Whether a per-event list-mode call under `c` runs in slab passes: more
/// than one asked for, 32-bit voxel offsets (`wide`: the adder needs 64)
/// and at most `max_slab_lanes` lanes per event; other calls take one pass.
template <class T>
bool slab_passes_apply(const kernel_choice &c, const math::image_grid<T> &grid,
                       bool wide) {
  return c.slabs > 1 && c.threads_per_lor <= max_slab_lanes && !wide && !c.wide_index &&
         math::fits_32bit_index(grid);
}

/// Calls `run(slabs, pass)` once per pass of `c.slabs` over `image` (in
/// order, all on one stream) with `std::true_type{}` slab kernels, or once
/// with an unused pass and `std::false_type{}` where slab passes do not
/// apply (`slab_passes_apply`).
template <class T, class Run>
void for_each_slab_pass(const kernel_choice &c, const device_image_view<const T> &image,
                        bool wide, Run &&run) {
  const auto grid = math::image_grid<T>::from(image.geometry);
  if (!slab_passes_apply(c, grid, wide)) {
    run(std::false_type{}, math::slab_pass{});
    return;
  }
  for (int k = 0; k < c.slabs; ++k)
    run(std::true_type{}, math::make_slab_pass(grid, c.slabs, k));
}

template <class T, class Lors>
void run_forward(const op::tof_listmode<T> &o, const device_image_view<const T> &image,
                 const Lors &src, span<T> out, const kernel_choice &c, stream_ref s) {
  const auto tof = o.tof.subview(0, src.count);
  const std::int16_t *bins = o.bins.data();
  dispatch_bool(c.sample_first, [&](auto first) {
    dispatch_fast_erfc<T>(c.fast_erfc, [&](auto fast) {
      constexpr bool sf = decltype(first)::value, fe = decltype(fast)::value;
      if (c.lockstep) {
        launch_per_lor<T, tof_lm_forward_lockstep_kernels<Lors, sf, fe>>(
            image, src.count, 1, c, false, s, "tof_lm_forward_lockstep_kernel",
            image.data, src, bins, tof, out.data());
        return;
      }
      for_each_slab_pass(c, image, false, [&](auto slabs, const math::slab_pass &pass) {
        launch_per_lor<T, tof_lm_forward_kernels<Lors, sf, fe, decltype(slabs)::value>>(
            image, src.count, c.threads_per_lor, c, false, s, "tof_lm_forward_kernel",
            image.data, src, bins, tof, out.data(), pass);
      });
    });
  });
}

template <class T, class Lors, class WithAdder>
void launch_back(const op::tof_listmode<T> &o, const device_image_view<T> &image,
                 const Lors &src, span<const T> values, const kernel_choice &c,
                 stream_ref s, WithAdder &&with_adder) {
  const auto tof = o.tof.subview(0, src.count);
  const std::int16_t *bins = o.bins.data();
  with_adder([&](auto add, bool wide) {
    using Add = decltype(add);
    dispatch_fast_erfc<T>(c.fast_erfc, [&](auto fast) {
      constexpr bool fe = decltype(fast)::value;
      const device_image_view<const T> cimage(image);
      if (c.lockstep) {
        launch_per_lor<T, tof_lm_back_lockstep_kernels<Lors, Add, fe>>(
            cimage, src.count, 1, c, wide, s, "tof_lm_back_lockstep_kernel", image.data,
            src, bins, tof, values.data(), add);
        return;
      }
      for_each_slab_pass(c, cimage, wide, [&](auto slabs, const math::slab_pass &pass) {
        launch_per_lor<T, tof_lm_back_kernels<Lors, Add, fe, decltype(slabs)::value>>(
            cimage, src.count, c.threads_per_lor, c, wide, s, "tof_lm_back_kernel",
            image.data, src, bins, tof, values.data(), add, pass);
      });
    });
  });
}

// ---------------------------------------------------- back projections --

/// Back projection of a TOF operation into an image: the stencil
/// workspace, paired vector atomics or scalar atomics, as `c` says.
template <class Op, class T, class Lors>
void run_back(const Op &o, const device_image_view<T> &image, const Lors &src,
              span<const T> values, const kernel_choice &c, stream_ref s) {
  launch_back(o, image, src, values, c, s,
              [&](auto &&run) { run_with_back_adder(c, image, s, run); });
}

/// Reproducible back projection into a fixed-point accumulator: the
/// kernels of `c` with the fixed-point adder (scalar integer atomics; the
/// vector atomics and the stencil workspace of `c` are not used). The
/// kernels get the accumulator's storage viewed as a T image, which only
/// forms voxel pointers; the adder maps them back to integers.
template <class Op, class T, class Lors>
void run_back(const Op &o, fixed_point_image<T> &acc, const Lors &src,
              span<const T> values, const kernel_choice &c, stream_ref s) {
  const device_image_view<T> base(reinterpret_cast<T *>(acc.data()), acc.geometry(),
                                  acc.device());
  const math::fixed_point_add<T, fixed_point_atomic_sink> add{
      base.data, acc.data(), math::exact_power_of_two<T>(acc.exponent()), {}};
  if constexpr (std::is_same_v<Op, op::non_tof>) {
    // Whole sinograms by transaxial bins: the same integers, summed exactly.
    if (by_transaxial_bins(c, src.count)) {
      const device_guard guard(base.device);
      const auto grid = math::image_grid<T>::from(base.geometry);
      const column_plan plan = make_fixed_column_plan(grid, c.rows);
      if (plan.profile_rows > 0) {
        const std::size_t columns = src.count / c.rows;
        using Add = std::decay_t<decltype(add)>;
        const int threads = fixed_column_threads(plan);
        if (!c.wide_index && math::fits_32bit_index(grid))
          launch_shared(back_columns_fixed_kernel<T, std::int32_t, Lors, Add>, columns,
                        threads, plan.shared_bytes, s, "back_columns_fixed_kernel", grid,
                        c.rows, columns, plan, base.data, src, values.data(), add);
        else
          launch_shared(back_columns_fixed_kernel<T, std::int64_t, Lors, Add>, columns,
                        threads, plan.shared_bytes, s, "back_columns_fixed_kernel", grid,
                        c.rows, columns, plan, base.data, src, values.data(), add);
        return;
      }
    }
  }
  kernel_choice scalar = c;
  scalar.vector_atomics = false;
  scalar.stencil = {};
  launch_back(o, base, src, values, scalar, s, [&](auto &&run) { run(add, false); });
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
