/// @file
/// @brief The host data of the reproducible back projection tests (CPU and
/// GPU): a grid, LORs, TOF parameters with per-LOR sigmas and offsets,
/// list-mode bins (some outside the range) and values of both signs for
/// the three operations. Plain C++.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/grid.hpp"
#include "common/host_views.hpp"
#include "common/lors.hpp"
#include "common/random.hpp"
#include "common/tof_reference.hpp"
#include "common/tof_setup.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/views.hpp"

namespace resproj_test {

/// The three operations, in the order `reproducible_case::for_each` visits
/// them.
enum class operation_id { non_tof, tof_sinogram, tof_listmode };

inline std::string name_of(operation_id id) {
  switch (id) {
  case operation_id::non_tof:
    return "non-TOF";
  case operation_id::tof_sinogram:
    return "TOF sinogram";
  default:
    return "TOF list-mode";
  }
}

template <class T> struct reproducible_case {
  grid g = grid::centred({24, 20, 12}, {2.0, 2.5, 4.0});
  resproj::image_geometry geometry = geometry_of(g);
  lor_set<T> lors;
  ref::tof_setup setup;
  std::vector<T> sigmas, offsets;
  resproj::tof_params<T> tof;
  std::vector<std::int16_t> bins;
  std::vector<T> values;      ///< one per LOR, in [-0.5, 1.5)
  std::vector<T> sino_values; ///< num_bins per LOR, in [-0.5, 1.5)

  /// `n_outside` LORs from outside the image and `n_anywhere` with end
  /// points anywhere around it.
  explicit reproducible_case(std::size_t n_outside = 3000, std::size_t n_anywhere = 1000,
                             std::uint64_t seed = 7) {
    lors = outside_lors<T>(g, n_outside, seed);
    lors.append(anywhere_lors<T>(g, n_anywhere, seed + 1));
    const std::size_t n = lors.size();
    setup.bin_width = 6;
    setup.num_bins = 13;
    setup.num_sigmas = 3;
    randomise_per_lor(setup, n, seed + 2, 4, 12, 8);
    tof = params_of<T>(setup, sigmas, offsets);
    rng r(seed + 3);
    bins.resize(n);
    for (auto &b : bins) // one bin outside each end
      b = std::int16_t(int(r.below(std::uint64_t(setup.num_bins + 2))) - 1);
    values = random_values<T>(n, seed + 4, -0.5, 1.5);
    sino_values = random_values<T>(n * std::size_t(setup.num_bins), seed + 5, -0.5, 1.5);
  }

  // `tof` points into this object's vectors.
  reproducible_case(const reproducible_case &) = delete;
  reproducible_case &operator=(const reproducible_case &) = delete;

  /// Puts LOR `order[k]` (with its TOF values, bin and values) at k.
  void reorder(const std::vector<std::size_t> &order) {
    const std::size_t nb = std::size_t(setup.num_bins);
    lor_set<T> l;
    std::vector<T> sg, of, v, sv;
    std::vector<std::int16_t> b;
    for (std::size_t i : order) {
      l.push(lors.start(i), lors.end(i));
      sg.push_back(sigmas[i]);
      of.push_back(offsets[i]);
      b.push_back(bins[i]);
      v.push_back(values[i]);
      sv.insert(sv.end(), sino_values.begin() + std::ptrdiff_t(i * nb),
                sino_values.begin() + std::ptrdiff_t((i + 1) * nb));
    }
    lors = l;
    sigmas = sg;
    offsets = of;
    bins = b;
    values = v;
    sino_values = sv;
    tof.sigmas = cspan_of(sigmas);
    tof.center_offsets = cspan_of(offsets);
  }

  std::size_t count() const { return lors.size(); }
  resproj::lor_view<const T> lor_view() const { return view_of(lors); }

  /// Calls `f(id, operation, values)` for the three operations, with their
  /// host arrays (per-LOR TOF values, bins, values).
  template <class F> void for_each(F &&f) const {
    f(operation_id::non_tof, resproj::op::non_tof{}, cspan_of(values));
    f(operation_id::tof_sinogram, resproj::op::tof_sinogram<T>(tof),
      cspan_of(sino_values));
    f(operation_id::tof_listmode, resproj::op::tof_listmode<T>(tof, cspan_of(bins)),
      cspan_of(values));
  }
};

/// Exponent with which the reproducible back projection meets the contract
/// tolerance of T against the plain one (docs/projection.md).
template <class T> constexpr int contract_exponent() {
  return std::is_same<T, float>::value ? 32 : 48;
}

/// Pieces [first, n) of a call.
using chunk_list = std::vector<std::pair<std::size_t, std::size_t>>;

/// Pieces of `size` LORs covering [0, count), shuffled when `shuffle_seed`
/// is not 0.
inline chunk_list chunks_of(std::size_t count, std::size_t size,
                            std::uint32_t shuffle_seed = 0) {
  chunk_list c;
  for (std::size_t first = 0; first < count; first += size)
    c.emplace_back(first, std::min(size, count - first));
  if (shuffle_seed != 0)
    std::shuffle(c.begin(), c.end(), std::mt19937(shuffle_seed));
  return c;
}

} // namespace resproj_test
