/// @file
/// @brief NIfTI-1 single-file (`.nii`) images: strict header parsing, reading
/// into a caller's buffer with voxel size and origin from the affine, and
/// writing with an axis-aligned affine. Includes the parts: the image model
/// (io/nifti_header.hpp), header parsing (io/nifti_parse.hpp), reading
/// (io/nifti_read.hpp) and writing (io/nifti_write.hpp).
///
/// Why no dependency (Debian's libnifti2-dev would be the candidate):
/// resproj needs one narrow slice of the format - single-file NIfTI-1, one
/// 3D volume, a handful of scalar types, an affine that is diagonal up to
/// sign. That is one fixed 348-byte struct, a few dozen lines to read and
/// write, all of it publicly specified. The reference library would add a
/// build- and run-time dependency (and zlib) to a header-only library that
/// promises "standard library + POSIX" for `io/`, would still need the same
/// strict checks (it is permissive by design), and could not report errors
/// through resproj's exceptions. So the header code is written here.
#pragma once

#include "resproj/io/nifti_header.hpp"
#include "resproj/io/nifti_parse.hpp"
#include "resproj/io/nifti_read.hpp"
#include "resproj/io/nifti_write.hpp"
#include "resproj/io/parallel_read.hpp"
#include "resproj/io/raw.hpp"
