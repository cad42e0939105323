#pragma once
// The state dir's files by identity, for the confined Home helper (io/home/helper.hpp): the
// helper cannot see the state dir (its world masks it), but a file of it may also have a
// name in Home, a hard link made before the helper was confined (a restore of an old build
// could make one). Those are the files with more than one name: their (device, inode) go to
// the helper, which never saves them, never writes into them and never serves them.
//
// Blocking (it walks the state dir with lstat): for a detached actor's own thread. The
// walk is bounded by the state dir's size (a few files per job kept).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shellctl::io::home {

// Every non-directory below `state_dir` whose link count is above one, never following a
// symlink or crossing into another file system's mounts. Unreadable parts are skipped.
std::vector<std::pair<std::uint64_t, std::uint64_t>> linked_state_files(const std::string& state_dir);

}  // namespace shellctl::io::home
