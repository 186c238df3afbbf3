/// @file
/// @brief `check_device_span`: the size and residency check of a device
/// array argument (too small, or not on the expected device).
#pragma once

#include <cstddef>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/gpu/device.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Checks that an array of `size` elements at `p` holds at least `needed`
/// elements and, when `needed > 0`, that it is memory of `device`.
/// @throws invalid_argument naming `name`.
template <class E>
void check_device_span(const E *p, std::size_t size, std::size_t needed, const char *name,
                       int device) {
  if (size < needed)
    resproj::detail::throw_invalid(name, "too small: holds " + std::to_string(size) +
                                             " elements, needs " +
                                             std::to_string(needed));
  if (needed > 0)
    require_device_pointer(p, device, name);
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
