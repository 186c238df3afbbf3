/// @file
/// @brief Umbrella header: core types, per-LOR math, CPU backend and the
/// reference scanner; the GPU backend too when compiled by nvcc.
#pragma once

#include "resproj/core/config.hpp"
#include "resproj/core/errors.hpp"
#include "resproj/core/image_geometry.hpp"
#include "resproj/core/lor_layout.hpp"
#include "resproj/core/lor_sources.hpp"
#include "resproj/core/operations.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/tof.hpp"
#include "resproj/core/version.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"
#include "resproj/math/joseph.hpp"
#include "resproj/scanner/dmi.hpp"
#include "resproj/scanner/listmode.hpp"
#include "resproj/scanner/sinogram_source.hpp"

#if defined(__CUDACC__)
#include "resproj/gpu/gpu.cuh"
#endif
