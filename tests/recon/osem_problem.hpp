/// @file
/// @brief The small OSEM problem shared by tests/recon and
/// tests/gpu/test_osem.cu: the NEMA-like phantom at 1/4 scale on the small
/// test scanner, 20 x 20 x 4 voxels, a noise-free sinogram model of 1e5
/// counts with 30% background.
#pragma once

#include <vector>

#include "phantom.hpp"
#include "resproj/recon/cpu_osem.hpp"
#include "synthetic.hpp"

namespace resproj_test {

inline resproj::image_geometry small_image() {
  return resproj::image_geometry::centred({20, 20, 4}, {4.0, 4.0, 8.0});
}

struct osem_problem {
  resproj_examples::nema_phantom phantom = resproj_examples::nema_phantom::make(0.25);
  resproj::recon::sinogram_subsets sc;
  std::vector<float> x_true;
  resproj::recon::corrections corr;
  resproj::recon::sinogram_data model;

  explicit osem_problem(int subsets)
      : sc(resproj::scanner::small_test_scanner(), 8, subsets, small_image()) {
    namespace ex = resproj_examples;
    x_true = ex::activity_image<float>(phantom, sc.image);
    corr.mu = ex::mu_image<float>(phantom, sc.image);
    ex::synthetic_settings set;
    set.total_counts = 1e5;
    model = ex::sinogram_model(sc, x_true, corr, set);
  }
  std::vector<float> ones() const { return resproj::recon::start_image(sc.image, 1.f); }
};

} // namespace resproj_test
