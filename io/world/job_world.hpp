#pragma once
// The file-system view a sandboxed job sees, built by its PID-1 init inside the job's own
// mount namespace (io/sandbox/mounts.hpp primitives). Two shapes:
//
// * own root (path isolation on): a fresh tmpfs root holding only what the job is granted,
//   bubblewrap-style: the read-only trees (/usr, /etc, ... as symlinks where the host has
//   symlinks), HOME, the granted cwd and the extra read-write trees, a minimal /dev with the
//   allowed device files and a private devpts, a procfs of the job's PID namespace with its
//   kernel knobs read-only. Sockets, other homes, /run, /var, /tmp contents: absent.
// * host root (isolation off): the machine's tree as it is, with a fresh procfs and devpts.
//
// In the host root, the machine's cgroup file systems (/sys/fs/cgroup and any other cgroup
// mount) are replaced as well: cgroup2 mounted afresh inside the job's cgroup namespace,
// so that its root is the job's own cgroup and nothing above or beside it (another job's,
// the server's cgroup.kill or cgroup.freeze) can be named; v1 hierarchies hidden. A job
// then cannot leave its cgroup whether or not the host mounts cgroup2 with nsdelegate.
//
// In both, the state directory is replaced by an empty read-only tmpfs that shows only the
// job's own directory (read-only) and, at their usual paths, the output.log files of the
// jobs that share the job's HOME (read-only; guarantee G7); and every directory between a
// writable tree and the state directory is a mount point, so the job cannot rename its way
// around the mask (rename(2) refuses mount points).
#include <string>

#include "io/policy/policy.hpp"

namespace shellctl::io::world {

struct world_spec {
  bool own_root = true;
  policy::path_policy policy;  // ro_dirs, rw_dirs, rw_files as configured
  std::string state_dir;        // canonical; "" = unknown (nothing to mask)
  // The job's own directory, shown read-only inside the mask (canonical). "" for a world
  // that shows nothing of the state dir at all: a Home operation's (io/home/confine.hpp).
  std::string job_dir;
  // Where the own root's tmpfs is mounted (an existing directory the world never shows);
  // "" = job_dir.
  std::string root_mount;
  std::string home;             // canonical; exists
  std::string cwd;              // canonical
  bool cwd_granted = false;     // path_rules.hpp: cwd_gets_grant
  std::string home_view;        // canonical dir whose jobs/ shows same-HOME output.logs; "" = none
  // The caller is in a cgroup namespace rooted at the job's own cgroup (docs/jobs.md "Containment").
  // The host root's cgroup file systems are then replaced by ones mounted in that
  // namespace (the job sees its own subtree only); without it, by nothing at all.
  bool own_cgroup = false;
};

// Builds the view in the calling process's (new) mount namespace and, for an own root,
// makes it the root. The caller must be PID 1 of the job's PID namespace. False with `err`.
bool build_world(const world_spec& w, std::string& err);

// Pieces both job worlds share (the scoped one too, scoped_world.hpp). A procfs of the
// caller's PID namespace at <root>/proc, its kernel knobs read-only and the files that
// leak kernel memory or other processes' keys masked, as container runtimes do (`null_fd`:
// an O_PATH descriptor of /dev/null; -1 masks nothing). False with `err`.
bool mount_job_proc(const std::string& root, int null_fd, std::string& err);
// The /dev links to the process's own descriptors: fd, stdin, stdout, stderr.
bool make_dev_links(const std::string& dev, std::string& err);

}  // namespace shellctl::io::world
