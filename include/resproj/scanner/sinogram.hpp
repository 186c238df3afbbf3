/// @file
/// @brief Span-1 sinograms of a `polygon_scanner`: the layout and its
/// device-usable geometry (scanner/sinogram_layout.hpp), view subsets and
/// STIR-style chunks (scanner/sinogram_subsets.hpp), LOR end point
/// generation (scanner/sinogram_lors.hpp) and the map from detector pairs
/// to bins (scanner/sinogram_lookup.hpp) (docs/benchmark-problems.md,
/// "Sinogram").
#pragma once

#include "resproj/scanner/sinogram_layout.hpp"
#include "resproj/scanner/sinogram_lookup.hpp"
#include "resproj/scanner/sinogram_lors.hpp"
#include "resproj/scanner/sinogram_subsets.hpp"
