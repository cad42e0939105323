#pragma once
// A scope worker's storage (docs/native-scopes.md "The scope worker"; S13, S18, S19), mounted
// by the worker inside its own user and mount namespaces on `dir` (/run/dify-native; a small
// tmpfs of its own is mounted there first, so the worker needs no write access to the host's
// `dir`):
//   dir/spool     a tmpfs of spool_bytes (input + output + 1 MiB): the worker's catalog,
//                 tmux's socket, the jobs' directories and output;
//   dir/payload   a tmpfs of disk_bytes: home/ (a private copy of the base snapshot),
//                 workspace/, tmp/ — the one writable store every job of the scope shares,
//                 so a full disk is ENOSPC, never an unbounded write.
// Home is a copy, not an overlay over the base: the base's files belong to users the
// worker's user namespace does not map (root, typically), and capabilities there do not
// reach such owners, so an overlay would leave Home's base files and directories
// unwritable. The copy is charged to disk_bytes like any other byte of Home; the base
// itself is only ever read.
#include <cstdint>
#include <string>

namespace shellctl::io::native {

struct scope_storage_spec {
  std::string dir;                 // an existing directory in the worker's mount namespace
  std::uint64_t spool_bytes = 0;   // > 0
  std::uint64_t disk_bytes = 0;    // > 0
  int base_fd = -1;                // the base snapshot's directory (an O_PATH descriptor)
};

// Mounts and fills both file systems. False with `err` (a base larger than disk_bytes
// says so): the scope's setup then fails (503 scope_setup_failed).
bool mount_scope_storage(const scope_storage_spec& s, std::string& err);

// Copies the tree under `src_dir` (a directory descriptor) into the existing directory
// `dst_dir`, never following a symlink: directories, regular files and symlinks with their
// permission bits; other kinds (devices, fifos, sockets) are left out. At most `max_depth`
// levels. False with `err` naming the path that failed.
bool copy_tree(int src_dir, int dst_dir, std::string& err, int max_depth = 256);

}  // namespace shellctl::io::native
