#pragma once
// Whole-tree containment of jobs in cgroup v2 (docs/jobs.md "Containment"), the one file for
// the kernel's cgroup interface (nsjail keeps its cgroup2.cc the same way). Every job gets a
// child cgroup `job-<id>` of the server's job root; the runner's child enters it before
// anything of the job runs (open_procs in the runner, enter in its child), so a process the job
// starts — setsid, nohup, a double fork — is born inside it. Ending the job is `cgroup.kill`
// (every process of the tree at once, forks in flight included), then the wait for
// `populated 0` (woken by the kernel's change notification on cgroup.events, never a sleep
// loop), then rmdir.
//
// The job root:
// * given (--cgroup-root / SHELLCTL_CGROUP_ROOT): that directory belongs to this server;
//   jobs are `<root>/job-<id>`, and a job-* there that is not a live job of this server
//   is an orphan, killed and removed at startup. Give each server its own.
// * detected: the server's own cgroup, if it is cgroup2 and writable. Other processes may
//   share that cgroup (two servers started from one shell do), so the jobs go one level
//   down, in `shellctl-<hash of the state dir>`, which only this state dir's server uses.
// * "none": no containment (the process group and session fallback).
#include <sys/types.h>

#include "io/sandbox/cgroup_limits.hpp"

#include <chrono>
#include <optional>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shellctl::io::sandbox::cgroups {

// Passes each of memory, pids and cpu that the job root has (its cgroup.controllers) on to
// the job cgroups, and says which are on. A controller the root cannot pass on (the write
// is refused) is left out: a run that asks for it is refused, never half limited.
job_controllers enable_job_controllers(const std::string& root);

// Where this process sits in cgroup v2: the hierarchy's mount, and our cgroup's path as
// /proc/self/cgroup's 0:: line names it ("/a/b"). nullopt (with `why`) without one.
struct own_cgroup {
  std::string mount;             // the mount point
  std::string mount_root = "/";  // the cgroup the mount shows as its root
  std::string path;
  // The directory of a cgroup path through that mount; "" when it is not beneath it.
  std::string dir(const std::string& cgroup_path) const;
};
std::optional<own_cgroup> find_own_cgroup(std::string& why);

struct root_choice {
  std::string path;      // the job root; "" = no containment
  std::string why_none;  // when path is "": why, for the startup line
  bool detected = false; // found by detection (not given)
};

// Decides the job root once at startup. `given`: the flag or environment value ("" =
// detect, "none" = off). A given root that cannot be used is an error (false, `err`): an
// operator who asked for containment must not silently run without it. Detection that
// finds nothing usable is not an error (path "", why_none says why). The root is created
// if missing (mode 0755) and checked to be cgroup2 with cgroup.kill (Linux >= 5.14).
bool choose_root(const std::string& given, const std::string& state_dir, root_choice& out,
                 std::string& err);

// At a graceful stop: every job cgroup with no process left is removed (in a given root
// too: job-* there are this server's), then a detected root when no job cgroup is left in
// it (jobs that keep running in tmux keep it, and the next start finds it again); a given
// root is the operator's and stays.
void release_root(const root_choice& root);

// Makes the controllers that `limits` needs available to the job cgroups (enabling them
// in cgroup.subtree_control down to `root`). False with a message naming each missing
// controller: asked-for limits without their controller refuse startup.
bool prepare_limits(const std::string& root, const job_limits& limits, std::string& err);

// <root>/job-<id>
std::string job_path(const std::string& root, const std::string& job_id);

// The ids of the job-<id> cgroups under `root`.
std::vector<std::string> job_ids(const std::string& root);

// The job of each cgroup id (the cgroup directory's inode number, as sock_diag reports a
// socket's) under `root`: every job-<id> cgroup and every cgroup a job made below its own.
std::unordered_map<std::uint64_t, std::string> job_of_cgroup_ids(const std::string& root);

bool exists(const std::string& path);

// mkdir (an existing one is fine: a start that is retried) and the limits. False with err.
bool create(const std::string& path, const job_limits& limits, std::string& err);

// Writes `value` to <path>/<file> (one cgroup interface file). False with err.
bool set(const std::string& path, const std::string& file, const std::string& value,
         std::string& err);

// The runner, before it starts the job's first process: <path>/cgroup.procs open for
// writing (the kernel checks the opener's rights, so the child may write it from inside
// new namespaces). -1 with err.
int open_procs(const std::string& path, std::string& err);

// The job's first process, before anything else: moves itself in through `procs_fd`.
bool enter(int procs_fd);

// populated from cgroup.events; nullopt when it cannot be read (no such cgroup).
std::optional<bool> populated(const std::string& path);

// The pids in the cgroup (cgroup.procs), none when it cannot be read.
std::vector<pid_t> procs(const std::string& path);
// The pids in the cgroup and every cgroup below it: a job may make child cgroups in its
// own and move processes there (its cgroup namespace lets it), and they are still its own.
std::vector<pid_t> subtree_procs(const std::string& path);

// Whether the cgroup2 hierarchy that holds `path` is mounted with nsdelegate (the kernel
// then refuses moves out of a cgroup namespace whatever the files' permissions); nullopt
// when no cgroup2 mount holds it.
std::optional<bool> nsdelegate(const std::string& path);

// What the kernel counted against a cgroup's limits (and below it), read as a job ends:
// memory.events' `oom_kill` (the OOM killer's kills) and `oom` (its memory.max reached
// and an allocation about to fail: a kill with it was for the job's own limit, one
// without it the machine's), pids.events' `max` (forks refused at pids.max) and
// cpu.stat's `nr_throttled`. 0 where the controller is absent.
struct limit_events {
  std::uint64_t oom_kill = 0;
  std::uint64_t memory_oom = 0;
  std::uint64_t pids_max = 0;
  std::uint64_t cpu_throttled = 0;
};
limit_events read_limit_events(const std::string& path);

// Ends the cgroup: cgroup.kill, the wait for populated 0 (at most `bound`), rmdir of it
// and of any child cgroup the job made. A cgroup that does not exist is ended already.
// Blocking: for a detached actor (actors/services/cgroup_reaper.hpp). False with err.
bool end(const std::string& path, std::chrono::milliseconds bound, std::string& err);

}  // namespace shellctl::io::sandbox::cgroups
