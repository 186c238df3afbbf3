/// @file
/// @brief PETSIRD 0.12 (the open PET raw-data standard, yardl binary
/// encoding): reading headers and time blocks into detector tables, TOF
/// parameters, detector pairs and normalisation factors, and writing
/// simulated data (docs/petsird.md). Includes every header of
/// io/petsird/. Host code, standard library and POSIX only.
#pragma once

#include "resproj/io/petsird/binary_input.hpp"
#include "resproj/io/petsird/binary_output.hpp"
#include "resproj/io/petsird/detector_map.hpp"
#include "resproj/io/petsird/efficiency.hpp"
#include "resproj/io/petsird/events.hpp"
#include "resproj/io/petsird/header.hpp"
#include "resproj/io/petsird/header_read.hpp"
#include "resproj/io/petsird/list_plan.hpp"
#include "resproj/io/petsird/parallel_decode.hpp"
#include "resproj/io/petsird/planned_read.hpp"
#include "resproj/io/petsird/reader.hpp"
#include "resproj/io/petsird/schema.hpp"
#include "resproj/io/petsird/skip.hpp"
#include "resproj/io/petsird/tof.hpp"
#include "resproj/io/petsird/varint_index.hpp"
#include "resproj/io/petsird/window_walk.hpp"
#include "resproj/io/petsird/writer.hpp"
