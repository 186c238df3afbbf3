// Forward-projects one LOR through an image of ones; exits 0 iff the line
// integral is the image's length along the LOR (20).
#include <cmath>
#include <cstdio>
#include <vector>

#include "resproj/resproj.hpp"

int main() {
  const auto geometry = resproj::image_geometry::centred({10, 20, 30}, {2.0, 1.0, 4.0});
  const std::vector<float> image(std::size_t(geometry.num_voxels()), 1.0f);
  const float starts[3] = {0.3f, -100.0f, 0.2f};
  const float ends[3] = {0.3f, 100.0f, 0.2f};
  float out[1] = {0.0f};

  resproj::cpu::forward(
      resproj::op::non_tof{}, resproj::image_view<const float>{image.data(), geometry},
      resproj::lor_view<const float>{starts, ends, 1}, resproj::span<float>{out, 1});

  std::printf("resproj %s: line integral %.6f (expected 20)\n", resproj::version_string,
              double(out[0]));
  return std::fabs(out[0] - 20.0f) <= 1e-4f ? 0 : 1;
}
