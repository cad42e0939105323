#pragma once
// Mount primitives for building a job's file-system view inside its own (private) mount
// namespace: bind mounts, tmpfs, a fresh procfs and devpts, read-only flags, pivot_root.
// Nothing here is visible outside that namespace. Every call returns false with a one-line
// `err` naming the path.
#include <string>

namespace shellctl::io::sandbox {

// Stops mount events from propagating to or from the parent namespace (MS_REC|MS_PRIVATE).
bool make_mounts_private(std::string& err);

enum class access { read_only, read_write };

// Binds `src` (a path, or /proc/self/fd/N of an O_PATH descriptor) onto `dst`, with its
// submounts when `recursive`. Directories also get nosuid and nodev; device files keep
// their device access.
bool bind(const std::string& src, const std::string& dst, access a, std::string& err,
          bool recursive = true);

// A tmpfs on `dst` (nosuid, nodev) with `options` such as "mode=0755,size=1m".
bool mount_tmpfs(const std::string& dst, const std::string& options, std::string& err);

// A procfs for the caller's PID namespace on `dst` (nosuid, nodev, noexec).
bool mount_proc(const std::string& dst, std::string& err);

// A cgroup2 file system on `dst` (nosuid, nodev, noexec). Mounted inside a cgroup
// namespace, its root is the namespace's root cgroup: nothing above it can be named.
bool mount_cgroup2(const std::string& dst, std::string& err);

// A new devpts instance on `dst`, so that the job's own new terminals live apart from
// every other terminal of the machine (other jobs' panes among them).
bool mount_devpts(const std::string& dst, std::string& err);

// Makes the mount at `dst` read-only (with its submounts when `recursive`).
bool set_read_only(const std::string& dst, bool recursive, std::string& err);

// Makes `new_root` (a mount point) the root of this mount namespace and detaches the old
// root, so that nothing outside `new_root` stays reachable.
bool pivot_into(const std::string& new_root, std::string& err);

// Creates an empty regular file to bind a file onto (no-op when something exists there).
bool make_file(const std::string& path, std::string& err);

}  // namespace shellctl::io::sandbox
