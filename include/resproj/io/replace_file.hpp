/// @file
/// @brief `io::replace_file_via`: a whole file written under a temporary name
/// beside its target and renamed over it only when the writing succeeded,
/// for writers that need a path (positional or device I/O) rather than a
/// stream. Standard library only.
#pragma once

#include <filesystem>
#include <string>

#include "resproj/core/config.hpp"
#include "resproj/io/detail/replace_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {

/// Replaces the file `path` as a whole: `write(tmp)` writes the complete new
/// contents to the file named `tmp` (created empty, in the same directory),
/// which is renamed over `path` when `write` returns. On any error the
/// temporary file is removed and `path` is left as it was (or absent). A
/// symbolic link is followed (the file it points to is replaced); an
/// existing file keeps its permission bits.
/// @throws io_error (nothing created) for an empty path, a directory, a
///         non-regular or unwritable file; io_error if the temporary file
///         cannot be created or renamed; whatever `write` throws (errors
///         from `write` name the temporary file).
template <class WriteFn> void replace_file_via(const std::string &path, WriteFn &&write) {
  detail::rawio::replace_via_temporary(
      path, [&](const std::filesystem::path &tmp) { write(tmp.string()); });
}

} // namespace io
RESPROJ_NAMESPACE_END
