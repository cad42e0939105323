#pragma once
// Where the file API may reach (docs/api.md "Files"): the server's $HOME and the trees of
// SHELLCTL_LANDLOCK_RW_PATHS (the places a job may write), never the state directory
// (database, every job's output, the tmux socket) even when it lies under $HOME.
//
// A client's path is resolved by the kernel beneath one of those roots: each root is
// opened once, and every lookup is openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from its
// descriptor, so `..`, absolute symlinks, symlinks that lead out and /proc's magic links
// are refused however they are combined, and a symlink swapped in between two requests is
// met by the kernel at the second one. Whatever is opened is then checked not to be in the
// state directory by walking its parents (device and inode), which catches a symlink that
// stays inside $HOME and leads into the state dir. The string checks here only pick the
// root and refuse what can never be a path; they grant nothing.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::fs {

class file_roots {
 public:
  // Roots that do not exist (or are not directories) are left out; the state dir is
  // identified by device and inode, opened now. `state_files` are the (device, inode) of
  // the state dir's files that have other names (io/home/state_identity.hpp): a name in a
  // root that is one of them (a hard link made before this was built) is refused too.
  file_roots(const std::string& home, const std::vector<std::string>& rw_paths,
             const std::string& state_dir,
             std::set<std::pair<std::uint64_t, std::uint64_t>> state_files = {});
  ~file_roots();
  file_roots(const file_roots&) = delete;
  file_roots& operator=(const file_roots&) = delete;

  enum class verdict {
    ok,
    invalid_path,  // 400 invalid_path: empty, NUL, not UTF-8, over 4096 bytes
    denied,        // 403 path_denied: outside every root, in the state dir, or escaping
  };
  struct location {
    verdict v = verdict::denied;
    std::string why;       // for the error message
    std::string absolute;  // the path as the client meant it (absolute, lexically clean)
    int root_fd = -1;      // the root it lies beneath (owned by file_roots)
    std::string rel;       // relative to that root ("" for the root itself)
  };

  // Picks the root for `path` (absolute, or relative to $HOME). Nothing is opened.
  location locate(std::string_view path) const;

  // Opens a located path beneath its root (flags as for openat2, e.g. O_RDONLY or
  // O_PATH | O_NOFOLLOW) and refuses what lies in the state dir. -1 with errno on failure:
  // EXDEV or ELOOP when the path escapes its root, EACCES for the state dir.
  int open(const location& at, int flags, mode_t mode = 0) const;

  // True when the open descriptor `fd` is the state dir or lies below it.
  bool in_state_dir(int fd) const;
  // True when `st` (an lstat/fstat) is the state dir itself.
  bool is_state_dir(const struct stat& st) const;
  // True when `st` is one of the state dir's files (by identity, see the constructor).
  bool is_state_file(const struct stat& st) const;
  // True when the directory `dir_fd` is the state dir or one of its ancestors: removing or
  // moving it would take the state dir with it.
  bool holds_state_dir(int dir_fd) const;

  std::size_t root_count() const { return roots_.size(); }

 private:
  struct root {
    std::string path;  // absolute, lexically clean
    int fd;
  };
  std::vector<root> roots_;
  std::string home_;
  std::string state_path_;
  std::string state_real_;  // symlinks resolved
  bool have_state_ = false;
  dev_t state_dev_ = 0;
  ino_t state_ino_ = 0;
  std::set<std::pair<std::uint64_t, std::uint64_t>> state_files_;
};

}  // namespace shellctl::io::fs
