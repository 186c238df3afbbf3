/// @file
/// @brief Whole-file replacement: a new file is written beside the target
/// and renamed over it only on success, so that a failed write leaves the
/// old file as it was and no temporary file behind (`replace_file`).
/// Standard library only.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>

#include "resproj/core/config.hpp"
#include "resproj/io/detail/stream_file.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace io {
namespace detail {
namespace rawio {

/// The file that replacing `path` rewrites (`path`, or the file a chain of
/// symbolic links at `path` ends at) and what is known about it.
struct replace_target {
  std::filesystem::path file;
  bool exists = false;
  std::filesystem::perms perms = std::filesystem::perms::none;
};

/// Resolves and checks the target of `replace_file`; an existing target is
/// opened for appending (never blocks: it is a regular file by then) to
/// check that it may be written, and not modified.
/// @throws io_error for an empty path, a directory, an existing file that is
///         not a regular file (FIFO, device, socket) or cannot be written,
///         or a link loop.
inline replace_target resolve_replace_target(const std::string &path) {
  namespace fs = std::filesystem;
  if (path.empty())
    fail(path, "empty path");
  replace_target t;
  t.file = fs::path(path);
  std::error_code ec;
  for (int hops = 0;; ++hops) {
    const auto lst = fs::symlink_status(t.file, ec);
    if (ec || !fs::is_symlink(lst))
      break;
    if (hops == 40)
      fail(path, "too many levels of symbolic links");
    const fs::path link = fs::read_symlink(t.file, ec);
    if (ec)
      fail(path,
           "cannot read the symbolic link '" + t.file.string() + "': " + ec.message());
    t.file = link.is_absolute() ? link : t.file.parent_path() / link;
  }
  const auto st = fs::status(t.file, ec);
  if (st.type() == fs::file_type::not_found)
    return t;
  if (ec)
    fail(path, "cannot be inspected: " + ec.message());
  if (fs::is_directory(st))
    fail(path, "is a directory, not a file");
  if (!fs::is_regular_file(st))
    fail(path, "is not a regular file");
  t.exists = true;
  t.perms = st.permissions() & fs::perms::all;
  // Replace only a file that could be written in place (a read-only file
  // stays read-only). Opening for appending changes nothing.
  errno = 0;
  std::ofstream probe(t.file, std::ios::binary | std::ios::app);
  if (!probe)
    fail(path, "cannot open for writing" + errno_text(errno));
  return t;
}

/// Creates a new empty file, exclusively, in the directory of `target` and
/// returns its name (".<name>.tmp-<16 hex digits>").
/// @throws io_error "cannot open for writing" (naming `path`) if that fails.
inline std::filesystem::path create_temporary_beside(const std::filesystem::path &target,
                                                     const std::string &path) {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t seed =
      std::uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  try {
    std::random_device rd;
    seed ^= (std::uint64_t(rd()) << 32) ^ rd();
  } catch (...) {
    // Clock and counter alone still give distinct names in this process.
  }
  const std::string name = target.filename().string().substr(0, 200);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::uint64_t x = seed + 0x9e3779b97f4a7c15ull * (counter.fetch_add(1) + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; // splitmix64 finaliser
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(x));
    // Not const: returned by a (non-throwing) move. A copy could fail to
    // allocate after the file exists, and leave it behind.
    std::filesystem::path tmp = target.parent_path() / ("." + name + ".tmp-" + hex);
    errno = 0;
    if (std::FILE *f = std::fopen(tmp.c_str(), "wbx")) { // "x": fails if it exists
      std::fclose(f);
      return tmp;
    }
    if (errno != EEXIST)
      fail(path, "cannot open for writing (creating the temporary file '" + tmp.string() +
                     "')" + errno_text(errno));
  }
  fail(path, "cannot open for writing: no unused temporary file name found beside it");
}

/// Replaces the file `path` as a whole: `write_file(tmp)` writes the new
/// contents to the empty temporary file `tmp` in the same directory, which
/// is renamed over `path` when `write_file` returns. On any error the
/// temporary file is removed and `path` is left as it was (or absent). A
/// symbolic link is followed (the file it points to is replaced, the link
/// stays); an existing file keeps its permission bits (not its owner, nor
/// its hard links: they keep the old contents), a new one gets 0666 less
/// the umask.
/// @throws io_error (nothing created) as `resolve_replace_target`; io_error
///         if the temporary file cannot be created or renamed; whatever
///         `write_file` throws.
template <class WriteFileFn>
void replace_via_temporary(const std::string &path, WriteFileFn &&write_file) {
  namespace fs = std::filesystem;
  const replace_target target = resolve_replace_target(path);
  const fs::path tmp = create_temporary_beside(target.file, path);
  try {
    std::error_code ec;
    if (target.exists) {
      fs::permissions(tmp, target.perms, fs::perm_options::replace, ec);
      if (ec)
        fail(path, "cannot set the permissions of the temporary file '" + tmp.string() +
                       "': " + ec.message());
    }
    write_file(tmp);
    fs::rename(tmp, target.file, ec);
    if (ec)
      fail(path, "cannot replace it with the temporary file '" + tmp.string() +
                     "': " + ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

/// Replaces the file `path` as a whole (as `replace_via_temporary`):
/// `write(std::fstream &f)` fills the temporary file through a stream.
/// @throws as `replace_via_temporary`; io_error if the stream cannot be
///         opened or closed.
template <class WriteFn> void replace_file(const std::string &path, WriteFn &&write) {
  replace_via_temporary(path, [&](const std::filesystem::path &tmp) {
    errno = 0;
    std::fstream f(tmp, std::ios::binary | std::ios::out | std::ios::trunc);
    if (!f)
      fail(path, "cannot open for writing (the temporary file '" + tmp.string() + "')" +
                     errno_text(errno));
    write(f);
    close_checked(f, path);
  });
}

} // namespace rawio
} // namespace detail
} // namespace io
RESPROJ_NAMESPACE_END
