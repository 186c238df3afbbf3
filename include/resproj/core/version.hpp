/// @file
/// @brief Library version.
#pragma once

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Library version as `major * 10000 + minor * 100 + patch`.
inline constexpr int version =
    RESPROJ_VERSION_MAJOR * 10000 + RESPROJ_VERSION_MINOR * 100 + RESPROJ_VERSION_PATCH;

/// Library version as "major.minor.patch".
inline constexpr const char *version_string = "0.1.0";

RESPROJ_NAMESPACE_END
