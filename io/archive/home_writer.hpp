#pragma once
// The save half of the home snapshot (docs/snapshots.md "Save", "Archive rules"): Home walked
// depth-first in byte order without following symlinks, written as tar by libarchive (USTAR,
// PAX only where needed; files, directories and symlinks; uid/gid 0; whole-second mtimes),
// compressed as one zstd frame (level 3, checksum, window ≤ 8 MiB) by libzstd's streaming API,
// and handed to `sink` chunk by chunk as it is produced: nothing is held beyond one chunk.
//
// Blocking (it reads the tree and its files): run it off the scheduler and the loop thread.
#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "io/archive/excludes.hpp"

namespace shellctl::io::archive {

struct save_result {
  bool ok = false;
  std::string error;         // why not (the first failure)
  std::uint64_t bytes = 0;   // compressed bytes handed to the sink
  std::uint64_t entries = 0;
};

// What a save leaves out whatever the patterns say, by identity: true for an entry's lstat
// that must not be saved (a directory is then not entered). The confined helper leaves out
// the server's state dir this way (io/home/helper.cpp), wherever it lies and under any name.
using save_filter = std::function<bool(const struct stat&)>;

// `sink` gets each compressed chunk; it returns false to stop (peer gone, deadline), which
// ends the save as failed. `stop` is asked before every entry: true ends it as failed.
save_result write_home_archive(const std::string& home, const snapshot_excludes& excludes,
                               const std::function<bool(std::string_view)>& sink,
                               const std::function<bool()>& stop,
                               const save_filter& leave_out = {});

}  // namespace shellctl::io::archive
