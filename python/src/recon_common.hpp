// What the CPU and GPU reconstruction bindings share: corrections from
// host arrays, the all-LOR sensitivity's statistics and the phase table as
// Python dicts, the progress callback with
// the GIL, and one call at a time per object.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arrays.hpp"
#include "call.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/recon/all_lor_sensitivity.hpp"
#include "resproj/recon/corrections.hpp"
#include "resproj/recon/em.hpp"
#include "resproj/recon/phase_timing.hpp"
#include "resproj/recon/sinogram_subsets.hpp"

namespace resproj_py {

namespace rr = resproj::recon;

/// The NumPy-style shape of an image of `g`.
inline std::vector<std::size_t> image_shape(const resproj::image_geometry &g) {
  const auto &s = g.shape();
  return {std::size_t(s[0]), std::size_t(s[1]), std::size_t(s[2])};
}

/// A host float32 array (any shape, C order) of `n` values, copied.
inline std::vector<float> host_floats(const in_array &a, const std::string &name,
                                      std::size_t n, const char *what) {
  const array_info i = info_of(a);
  if (i.dtype != dt<float>())
    throw nb::type_error(
        (name + ": dtype " + dtype_name(i.dtype) + ", expected float32").c_str());
  if (!c_contiguous(i))
    throw nb::value_error((name + ": not C-contiguous").c_str());
  if (place_of(i, name).cuda)
    throw nb::value_error((name + ": on the GPU, expected a host array").c_str());
  if (std::size_t(product(i.shape)) != n)
    throw nb::value_error((name + ": " + std::to_string(product(i.shape)) +
                           " values, expected " + std::to_string(n) + " (" + what + ")")
                              .c_str());
  const float *p = static_cast<const float *>(i.data);
  return std::vector<float>(p, p + n);
}

/// The corrections of `sub` from host arrays (checked against it).
inline rr::corrections corrections_of(const rr::sinogram_subsets &sub,
                                      const in_array &eff, const in_array &mu,
                                      double scale, double background) {
  rr::corrections c;
  c.efficiency =
      host_floats(eff, "corrections.efficiency", sub.num_detectors(), "one per detector");
  c.mu = host_floats(mu, "corrections.mu", std::size_t(sub.image.num_voxels()),
                     "one per voxel of the image");
  c.scale = float(scale);
  c.background = float(background);
  return c;
}

/// What an all-LOR sensitivity walked, as a dict (lors, families,
/// mirror_flips, attenuation_walks, scatter_walks).
inline nb::dict all_lor_stats(const rr::all_lor_sensitivity_stats &st) {
  nb::dict d;
  d["lors"] = st.lors;
  d["families"] = st.families;
  d["mirror_flips"] = st.mirror_flips;
  d["attenuation_walks"] = st.attenuation_walks;
  d["scatter_walks"] = st.scatter_walks;
  return d;
}

/// The reconstruction's TOF parameters (None: non-TOF, no bins).
inline resproj::tof_params<float> recon_tof(const std::optional<tof_values> &tof) {
  return tof ? tof->as<float>() : resproj::tof_params<float>{};
}

/// The phases as a list of dicts (key, name, seconds, items, item_name,
/// overlapped).
inline nb::list phase_list(const rr::phase_table &t) {
  nb::list out;
  for (const auto &p : t.phases) {
    nb::dict d;
    d["key"] = p.key;
    d["name"] = p.name;
    d["seconds"] = p.seconds;
    d["items"] = p.items;
    d["item_name"] = p.item_name;
    d["overlapped"] = p.overlapped;
    out.append(d);
  }
  return out;
}

/// Adds `seconds` and `items` to the phase `key`, created on first use.
inline void add_to_phase(rr::phase_table &t, const char *key, const char *name,
                         double seconds, double items, const char *item_name) {
  for (auto &p : t.phases)
    if (p.key == key) {
      p.seconds += seconds;
      p.items += items;
      return;
    }
  t.add(key, name, seconds, items, item_name);
}

/// One call at a time per reconstruction object: `run` releases the GIL,
/// so another thread could otherwise reach the object. The progress
/// callback, which runs between subsets with the work finished, may read
/// the image (calls that allow it).
struct call_gate {
  std::mutex mutex;
  std::atomic<std::thread::id> callback_thread{}; ///< while the callback runs
};

/// Holds the gate for one call; RuntimeError when it is taken, except for
/// calls made from the progress callback that `allow_in_callback`.
class busy_guard {
public:
  busy_guard(call_gate &g, bool allow_in_callback) : lock_(g.mutex, std::try_to_lock) {
    if (!lock_.owns_lock() &&
        !(allow_in_callback && g.callback_thread.load() == std::this_thread::get_id()))
      throw std::runtime_error("ListmodeOsem: busy (in use by another thread, or run() "
                               "called from the progress callback)");
  }

private:
  std::unique_lock<std::mutex> lock_;
};

/// The C++ progress callback calling `progress` (a Python callable or None)
/// with the GIL held. `progress` and `gate` must outlive the callback.
inline rr::osem_callback progress_callback(const nb::object &progress, call_gate &gate) {
  if (progress.is_none())
    return nullptr;
  return [&progress, &gate](const rr::osem_progress &p) {
    struct mark {
      call_gate &g;
      explicit mark(call_gate &g_) : g(g_) {
        g.callback_thread.store(std::this_thread::get_id());
      }
      ~mark() { g.callback_thread.store(std::thread::id()); }
    } in_callback(gate);
    const nb::gil_scoped_acquire gil;
    progress(nb::cast(p, nb::rv_policy::copy)); // the callback may keep it
  };
}

/// `o.run(iterations, progress)` of a list-mode OSEM binding: one call at a
/// time, `progress` called with the GIL, the GIL released while it computes.
template <class Osem> void run_osem(Osem &o, int iterations, const nb::object &progress) {
  const busy_guard busy(o.gate(), false);
  const auto cb = progress_callback(progress, o.gate());
  const nb::gil_scoped_release release;
  o.run(iterations, cb);
}

} // namespace resproj_py
