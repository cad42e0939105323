#pragma once
// The processes of a running job, for the signal route and activity
// (docs/api.md "Job control"): from its cgroup when it has one (docs/jobs.md "Containment"),
// else found in /proc from its pane's process (the runner), as follows.
//
// With job namespaces the runner's child is PID 1 of the job's own PID namespace, and
// every other process in that namespace is the job's: one that calls setsid() or forks
// twice stays in it. Without them, the job is the pane's session and process group (tmux
// makes the runner a session leader), minus the runner. Neither set includes the runner
// or the init: both forward INT, TERM and HUP to the job, which would then get them twice.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace shellctl::io::proc {

// /proc/<pid>/cmdline with NULs as spaces; nullopt when the process does not exist.
std::optional<std::string> cmdline_of(long pid);

// The job's processes (see above), or nothing when `runner` is no longer the runner of the
// job whose directory is `owner` (its pid was reused, or it is gone).
std::vector<pid_t> job_processes(pid_t runner, const std::string& owner);

// The job's processes when it has a cgroup (docs/jobs.md "Containment"): its `members`
// (cgroup.procs) without the namespaced init, i.e. the runner's child when that child is in
// a PID namespace of its own (it forwards INT, TERM and HUP itself). The cgroup holds every
// process the job started, wherever it moved in its sessions and groups.
std::vector<pid_t> cgroup_job_processes(pid_t runner, const std::vector<pid_t>& members);

// What is left of a job whose script has ended (job_init.hpp): its cgroup's `members`
// without the job's init (PID 1 of the job's PID namespace, by /proc's NSpid) and without
// processes already exiting (zombies, or in the kernel's exit path).
std::vector<pid_t> leftover_processes(const std::vector<pid_t>& members);

// Of a job's cgroup `members`, those in process group `pgrp` that the terminal's hangup
// would end (SIGHUP neither ignored, blocked nor caught) and that are still running or in
// the kernel (R, D): a background child its script started as it ended, which may be on
// its way to ignoring SIGHUP (nohup), to a session of its own (setsid) or to a trap. The
// runner lets them get there before its exit hangs the terminal up (runner.cpp).
std::vector<pid_t> unsettled_before_hangup(const std::vector<pid_t>& members, pid_t pgrp);

// Sends `signo` to each of `pids`; returns how many took it.
std::size_t signal_processes(const std::vector<pid_t>& pids, int signo);

}  // namespace shellctl::io::proc
