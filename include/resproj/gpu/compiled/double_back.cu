// Part of the target resproj::gpu_compiled: every back projection of the
// instantiation list (gpu/compiled.hpp) in double.
#include "resproj/gpu/compiled/definitions.cuh"

RESPROJ_GPU_COMPILED_INSTANTIATE(double, BACK)
