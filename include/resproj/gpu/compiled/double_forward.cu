// Part of the target resproj::gpu_compiled: every forward projection of the
// instantiation list (gpu/compiled.hpp) in double.
#include "resproj/gpu/compiled/definitions.cuh"

RESPROJ_GPU_COMPILED_INSTANTIATE(double, FORWARD)
