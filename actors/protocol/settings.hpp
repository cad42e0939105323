#pragma once
// Immutable settings every job needs, resolved once at startup by `shellctl serve`.
// Each actor holds its own copy: nothing here is shared or mutated after start.
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/sandbox/cgroups.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors {

// What a native scope's worker changes for the jobs it runs (docs/native-scopes.md "The
// scope worker", "The scoped job sandbox"), given to the registry and every job actor as
// one value instead of settings whose emptiness means "an ordinary server".
struct scope_policy {
  // Jobs run in the scoped world, so a cwd names a path there: /home/dify, /workspace and
  // /tmp are the payload's home/, workspace/ and tmp/ (checked there), the rest is the
  // image (image_root).
  std::string payload;
  std::string image_root;
  // The jobs' wall deadline: a job still running this long after it started, or at the
  // scope's deadline (seconds since the epoch), is terminated. 0 = none.
  std::chrono::seconds wall_limit{0};
  std::int64_t wall_until_epoch = 0;
  // The output budget: every output byte is reserved before it is written (the
  // sanitizer's and the runner's copies, io/native/worker/output_budget.hpp), through
  // `helper` (`shellctl native-budget`) in the scope's catalog `db`; the script, the env
  // and every input are charged there too.
  io::tmux::output_budget budget;
};

struct job_settings {
  std::string state_dir;    // S (absolute)
  std::string runtime_dir;  // R = S/runtime (decision D10)
  // R/trash: job directories being removed (io::fs::move_aside), out of S/jobs at once.
  std::string trash_dir() const { return runtime_dir + "/trash"; }
  std::string tmux_socket;  // R/tmux.sock
  std::string runner_link;  // R/bin/shellctl-runner
  std::string sanitizer;    // shellctl-sanitize-pty: absolute when found next to shellctl
  std::string default_cwd;  // the server's HOME
  // Path isolation (SHELLCTL_ENABLE_PATH_ISOLATION): the rules of io/policy/path_rules.hpp
  // apply to a job's HOME at run; they need the canonical state dir and server HOME.
  bool isolation = true;
  std::string state_dir_canonical;
  std::string server_home_canonical;
  int sqlite_busy_timeout_ms = 5000;
  // The sandbox settings from the server's own environment (decision D7) and the state dir,
  // handed to the runner with `tmux new-session -e NAME=value`.
  std::vector<std::pair<std::string, std::string>> runner_policy_env;
  // Whole-tree containment (docs/jobs.md "Containment"): the job root ("" = none: the
  // process group and session fallback), the limits each job cgroup gets (a run may ask for
  // less: they are its ceilings), and the controllers job cgroups have for a run's own limits.
  std::string cgroup_root;
  io::sandbox::cgroups::job_limits job_limits;
  io::sandbox::cgroups::job_controllers job_controllers;
  // Whether the host mounts the job root's cgroup2 with nsdelegate (said, never relied on).
  std::optional<bool> cgroup_nsdelegate;
  // A native scope's worker changes what its jobs are (scope_policy, below); an ordinary
  // server has none.
  std::optional<scope_policy> scope;
  std::chrono::milliseconds pipe_ready_timeout{10000};
  // How long a PTY job whose runner exited may wait for the output pipe's finalizer
  // before the exit is recorded without it (decision D8: never stuck).
  std::chrono::milliseconds finalizer_grace{10000};
};

// Home snapshots (docs/api.md "Home snapshots"): the Home they save and restore (the server's
// $HOME as found at startup; checked again by each operation) and the total deadline of one.
// How the server starts its confined Home helper, shellctl-home (io/home/helper.hpp), for
// every operation on Home: the binary, the arguments every role shares after the role and
// its --home (the state dir, the world's root mount, the system trees, the confinement's
// options) and the file worker's own (its roots). The state dir is walked for the files
// that have other names (io/home/state_identity.hpp) before each operation.
struct home_helper_settings {
  std::string binary;
  std::string state_dir;
  std::vector<std::string> args;
  std::vector<std::string> file_args;
};

struct snapshot_settings {
  std::string home;
  std::chrono::nanoseconds timeout = std::chrono::seconds(45);
  home_helper_settings helper;
};

struct retention_settings {
  std::chrono::nanoseconds retention = std::chrono::hours(24);
  std::chrono::nanoseconds interval = std::chrono::seconds(60);
};

}  // namespace shellctl::actors
