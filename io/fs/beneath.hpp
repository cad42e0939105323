#pragma once
// The one kernel-confined open: openat2 with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so
// `..`, absolute names, symlinks that lead out and /proc magic links are refused by the
// kernel however a path combines them (EXDEV, ELOOP). Used by the snapshot archives
// (io/archive), dify-agent's (bin/dify-agent) and the file API's roots (io/fs/file_roots.hpp).
#include <sys/types.h>

#include <string>

namespace shellctl::io::fs {

// openat2(root, rel, flags | O_CLOEXEC, mode) beneath root ("" is root itself); -1 with
// errno on failure. Retried while the kernel answers EAGAIN (a concurrent rename).
int open_beneath(int root, const std::string& rel, int flags, mode_t mode = 0);
// The same, and no symlink at all on the way (RESOLVE_NO_SYMLINKS: ELOOP): the native
// supervisor's refs (S3), which name files only by their real path.
int open_beneath_no_symlinks(int root, const std::string& rel, int flags);

// Creates each missing directory of `rel` (mode `mode`) beneath root and returns an O_PATH
// descriptor of the deepest; -1 with errno on failure. "" gives a copy of root. Each level
// is opened beneath the one before, so a symlinked component that leads out is refused.
int dirs_beneath(int root, const std::string& rel, mode_t mode);

}  // namespace shellctl::io::fs
