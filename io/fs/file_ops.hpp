#pragma once
// The file API's operations on the OS (docs/api.md "Files"), each confined by file_roots:
// every name is resolved by the kernel beneath its root (openat2), and every step after
// that works on descriptors (fstatat, mkdirat, unlinkat, renameat2 relative to the parent
// directory that was opened beneath the root), so no path string is ever resolved twice.
//
// All of these block (disk I/O): they run on a file_op actor's own thread, never on a
// scheduler or loop thread. Failures are thrown as file_failure with the API's meaning and
// a message (the OS error for file_io_failed).
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "io/fs/file_roots.hpp"

namespace shellctl::io::fs {

enum class file_errc {
  invalid_path,         // 400
  denied,               // 403 path_denied
  not_found,            // 404 file_not_found
  not_a_directory,      // 409
  is_a_directory,       // 409
  exists,               // 409 file_exists
  not_empty,            // 409 directory_not_empty
  io,                   // 500 file_io_failed
};

struct file_failure : std::runtime_error {
  file_failure(file_errc c, const std::string& what) : std::runtime_error(what), code(c) {}
  file_errc code;
};

enum class entry_type { file, dir, symlink, other };

// What lstat says about one entry.
struct entry_meta {
  std::string name;  // the last component ("" for a listing's own path)
  entry_type type = entry_type::other;
  std::uint64_t size = 0;
  unsigned mode = 0;  // permission bits with setuid/setgid/sticky (07777)
  std::int64_t mtime = 0;  // seconds since the epoch
  std::optional<std::string> target;  // a symlink's text (stat only)
};

struct stat_result {
  std::string path;  // absolute, as the client meant it
  entry_meta meta;
};
// lstat: a symlink is reported, never followed.
stat_result stat_path(const file_roots& roots, std::string_view path);

struct listing {
  std::string path;
  std::vector<entry_meta> entries;  // sorted by name, bytewise; at most `limit`
  bool truncated = false;           // the directory holds more than `limit` entries
};
listing list_dir(const file_roots& roots, std::string_view path, std::size_t limit);

// mkdir (with `parents`: mkdir -p, an existing directory is fine). New directories get
// exactly `mode` (the umask does not narrow it). Returns the absolute path.
std::string make_directory(const file_roots& roots, std::string_view path, bool parents, unsigned mode);

// unlink, rmdir, or (recursive) the whole tree, walked by descriptors: a symlink inside is
// removed as a link, never followed. A root itself, and a tree holding the state directory,
// are refused.
std::string remove_path(const file_roots& roots, std::string_view path, bool recursive);

// renameat2 of `from` to `to` (RENAME_NOREPLACE unless `overwrite`), both beneath roots.
std::string move_path(const file_roots& roots, std::string_view from, std::string_view to,
                      bool overwrite);

// A regular file opened for reading. The descriptor is held: a file renamed over it
// meanwhile (an upload) does not change what this reader sees.
class file_reader {
 public:
  file_reader(const file_roots& roots, std::string_view path);
  ~file_reader();
  file_reader(const file_reader&) = delete;
  file_reader& operator=(const file_reader&) = delete;

  const std::string& path() const { return path_; }
  const entry_meta& meta() const { return meta_; }
  int fd() const { return fd_; }  // open for reading (O_NONBLOCK is harmless on a regular file)
  // pread at `offset`; 0 at end of file; throws file_failure(io) on an error.
  std::size_t read_at(std::uint64_t offset, char* buf, std::size_t cap);

 private:
  int fd_ = -1;
  std::string path_;
  entry_meta meta_;
};

// An upload: written to a temporary file in the target's directory (an unnamed O_TMPFILE
// where the file system has it, so that even a crash leaves nothing behind), then fsynced
// and renamed over the target. Destroyed without commit(), it leaves the old file as it was.
// The confined file worker creates it and hands its descriptor to the server, which
// writes the bytes (io/home/helper.cpp); write() is the same step in one process.
class file_upload {
 public:
  // `mode`: nullopt keeps an existing file's mode (less setuid and setgid: an upload never
  // makes a set-id file), else 0644. `parents` creates missing parent directories (0755).
  file_upload(const file_roots& roots, std::string_view path, std::optional<unsigned> mode, bool parents);
  ~file_upload();
  file_upload(const file_upload&) = delete;
  file_upload& operator=(const file_upload&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }      // the temporary file, open for writing
  void write(std::string_view data);  // throws file_failure(io): disk full, I/O
  // Mode, fsync, rename over the target. Returns the size the file has.
  std::uint64_t commit();

 private:
  void discard();
  int dir_fd_ = -1;   // the target's directory
  int fd_ = -1;       // the temporary file
  std::string name_;  // the target's name in dir_fd_
  std::string temp_name_;  // a named temporary ("" while unnamed)
  std::string path_;
  unsigned mode_ = 0644;
  bool done_ = false;
};

// The type name the API uses ("file", "dir", "symlink", "other").
const char* type_name(entry_type t);

}  // namespace shellctl::io::fs
