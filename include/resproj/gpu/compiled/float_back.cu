// Part of the target resproj::gpu_compiled: every back projection of the
// instantiation list (gpu/compiled.hpp) in float.
#include "resproj/gpu/compiled/definitions.cuh"

RESPROJ_GPU_COMPILED_INSTANTIATE(float, BACK)
