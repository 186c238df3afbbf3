/// @file
/// @brief NumPy `.npy` files: read the header, read the array into a
/// caller's span, write a span with a shape. Includes the parts: the header
/// model and format (io/npy_header.hpp), header parsing (io/npy_parse.hpp),
/// reading (io/npy_read.hpp) and writing (io/npy_write.hpp), and the raw
/// array functions they build on (io/raw.hpp).
#pragma once

#include "resproj/io/npy_header.hpp"
#include "resproj/io/npy_parse.hpp"
#include "resproj/io/npy_read.hpp"
#include "resproj/io/npy_write.hpp"
#include "resproj/io/raw.hpp"
