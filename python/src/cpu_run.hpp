// The CPU backend for one precision (cpu_float.cpp, cpu_double.cpp).
#pragma once

#include <algorithm>
#include <cstddef>

#include "call.hpp"
#include "dispatch.hpp"
#include "resproj/cpu/projector.hpp"

namespace resproj_py {

template <class T> void run_cpu(const call &c) {
  with_operation<T>(c, [&](const auto &op) {
    with_lors<T>(c, [&](const auto &lors) {
      if (c.forward) {
        rp::cpu::forward(
            op, rp::image_view<const T>(static_cast<const T *>(c.image), c.geometry),
            lors, rp::span<T>(static_cast<T *>(c.data), c.data_size));
      } else {
        const rp::image_view<T> image(static_cast<T *>(c.image), c.geometry);
        if (c.zero_image)
          std::fill_n(image.data, std::size_t(c.geometry.num_voxels()), T(0));
        rp::cpu::back(op, image, lors,
                      rp::span<const T>(static_cast<const T *>(c.data), c.data_size));
      }
    });
  });
}

} // namespace resproj_py
