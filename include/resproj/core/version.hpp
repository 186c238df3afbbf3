/// @file
/// @brief Library version.
///
/// The version is defined once, by RESPROJ_VERSION_MAJOR, _MINOR and _PATCH
/// in core/config.hpp; CMakeLists.txt reads it from there.
#pragma once

#include "resproj/core/config.hpp"

#define RESPROJ_DETAIL_VERSION_STR_(x) #x
#define RESPROJ_DETAIL_VERSION_STR(x) RESPROJ_DETAIL_VERSION_STR_(x)

/// "major.minor.patch" as a string literal, built from the version macros.
#define RESPROJ_VERSION_STRING                                                           \
  RESPROJ_DETAIL_VERSION_STR(RESPROJ_VERSION_MAJOR)                                      \
  "." RESPROJ_DETAIL_VERSION_STR(RESPROJ_VERSION_MINOR) "." RESPROJ_DETAIL_VERSION_STR(  \
      RESPROJ_VERSION_PATCH)

RESPROJ_NAMESPACE_BEGIN

/// Library version as `major * 10000 + minor * 100 + patch`.
inline constexpr int version =
    RESPROJ_VERSION_MAJOR * 10000 + RESPROJ_VERSION_MINOR * 100 + RESPROJ_VERSION_PATCH;

/// Library version as "major.minor.patch".
inline constexpr const char *version_string = RESPROJ_VERSION_STRING;

RESPROJ_NAMESPACE_END
