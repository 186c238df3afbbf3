/// @file
/// @brief `fill_async`: the stream-ordered fill behind `device_buffer::fill`
/// (`cudaMemsetAsync` for byte-uniform values, a small grid-stride kernel
/// otherwise).
#pragma once

#include <cuda_runtime.h> // cudaLaunchKernelEx (C++ template form)

#include <cstddef>
#include <cstring>

#include "resproj/core/config.hpp"
#include "resproj/gpu/error.cuh"

RESPROJ_NAMESPACE_BEGIN
namespace gpu {
namespace detail {

/// Unsigned word used to move an element of alignment `Align`.
template <std::size_t Align> struct fill_word { using type = unsigned long long; };
template <> struct fill_word<1> { using type = unsigned char; };
template <> struct fill_word<2> { using type = unsigned short; };
template <> struct fill_word<4> { using type = unsigned int; };

/// The object representation of an element of size `Size` and alignment
/// `Align`. Filling writes representations (exact for trivially copyable
/// types), so the kernel is instantiated per (size, alignment) only, never
/// for a user's type: fewer instantiations, and kernel symbols that can be
/// hidden (a type with internal linkage would forbid that).
template <std::size_t Size, std::size_t Align> struct alignas(Align) element_bytes {
  using word = typename fill_word<(Align < 8 ? Align : 8)>::type;
  static_assert(Size % sizeof(word) == 0, "size must be a multiple of the word");
  word words[Size / sizeof(word)];
};

/// Grid-stride fill: `data[i] = value` for i < count.
template <class E>
RESPROJ_KERNEL void buffer_fill_kernel(E *data, std::size_t count, E value) {
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    data[i] = value;
}

/// Queues `data[0, count) = value` on `stream` (the current device must be
/// the stream's). A value whose bytes are all equal (zero, all-ones, ...) is
/// written with `cudaMemsetAsync`; anything else with a small grid-stride
/// kernel launched by `cudaLaunchKernelEx`, whose own return code is checked
/// (a stale error of someone else's earlier call cannot be mistaken for a
/// failure of this launch, which a `cudaPeekAtLastError` after `<<<>>>`, as
/// CUB does, would do). Capturable; never synchronises.
/// @throws gpu_error on failure.
template <class T>
void fill_async(T *data, std::size_t count, const T &value, cudaStream_t stream) {
  if (count == 0)
    return;
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  bool uniform = true;
  for (std::size_t k = 1; k < sizeof(T); ++k)
    uniform = uniform && bytes[k] == bytes[0];
  if (uniform) {
    RESPROJ_CUDA_TRY(cudaMemsetAsync(data, bytes[0], count * sizeof(T), stream));
    return;
  }
  using element = element_bytes<sizeof(T), alignof(T)>;
  static_assert(sizeof(element) == sizeof(T) && alignof(element) == alignof(T));
  element representation;
  std::memcpy(&representation, &value, sizeof(T));
  constexpr unsigned threads = 256;
  constexpr std::size_t max_blocks = 4096; // grid-stride covers the rest
  std::size_t blocks = (count + threads - 1) / threads;
  if (blocks > max_blocks)
    blocks = max_blocks;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = nullptr;
  config.numAttrs = 0;
  RESPROJ_CUDA_TRY(cudaLaunchKernelEx(&config, buffer_fill_kernel<element>,
                                      reinterpret_cast<element *>(data), count,
                                      representation));
}

} // namespace detail
} // namespace gpu
RESPROJ_NAMESPACE_END
