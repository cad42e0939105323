#pragma once
// File-system steps confined beneath a directory descriptor: every path is resolved by the
// kernel with openat2(RESOLVE_BENEATH), so `..`, absolute names and symlinks that lead out
// are refused however an archive combines them.
#include <sys/types.h>

#include <string>

#include "io/fs/beneath.hpp"

namespace shellctl::io::archive {

// openat2(root, rel, flags | O_CLOEXEC, mode) beneath root; -1 with errno on failure.
using io::fs::open_beneath;

// Creates each missing directory of `rel` (mode `mode`) beneath root and returns an O_PATH
// descriptor of the deepest; -1 with errno on failure. "" gives a copy of root.
int dirs_beneath(int root, const std::string& rel, mode_t mode);

}  // namespace shellctl::io::archive
