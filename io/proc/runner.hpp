#pragma once
// The roles of shellctl-runner (docs/jobs.md "Starting a job", "The output pipe"): the parent
// started by tmux, which waits for the start gate, builds the job environment, starts the job
// and publishes the exit artifacts; and the child role, which becomes the script.
//
// With namespaces (the default), the parent starts the job in new mount and PID namespaces
// (io/sandbox/namespaces.hpp): their PID 1 (job_init.hpp) builds the job's file-system view
// (job_world.hpp) and starts the script's process, which cuts its capabilities, sets
// no_new_privs, applies Landlock (path isolation on) and the seccomp filter, and execs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/policy/policy.hpp"
#include "io/store/job_status.hpp"

namespace shellctl::io::proc {

using io::store::job_mode;  // the one spelling table is in io/store/job_status.hpp

// Exit codes of the runner (docs/api.md "Statuses").
constexpr int kExitSignaled = -1;
constexpr int kExitChdirFailed = 111;
constexpr int kExitSetupFailed = 125;
constexpr int kExitExecFailed = 126;
constexpr int kExitNotFound = 127;

// What the server decided about the job's sandbox. The parent reads it from its OWN
// environment (the server hands it over through tmux), never from the job's.
// A native scope's job (docs/native-scopes.md "The scoped job sandbox"), set by the scope's
// worker for its tmux: SHELLCTL_NATIVE_JOB_PAYLOAD (its presence turns the mode on),
// _IMAGE_ROOT (default "/"), _INPUTS, _SCRIPT_BYTES, _OPEN_FILES, _FILE_BYTES. The job then
// runs in the scoped world (scoped_world.hpp) under rlimits, with every capability dropped,
// Landlock over that world and the scoped seccomp filter; namespaces are required, path
// isolation's settings do not apply. A malformed setting fails the job (125) before anything
// of it runs.
struct scoped_settings {
  std::string image_root = "/";
  std::string payload;
  std::string inputs;
  std::uint64_t script_bytes = 0;
  std::uint64_t open_files = 0;
  std::uint64_t file_bytes = 0;
  // The output budget (stdio jobs; io/native/worker/output_budget.hpp): `<helper> native-budget
  // --db <db>` (SHELLCTL_NATIVE_JOB_BUDGET_HELPER, _BUDGET_DB; both required).
  std::string budget_helper;
  std::string budget_db;
  // The scope's proxy URL when it has network targets (SHELLCTL_NATIVE_JOB_PROXY,
  // docs/native-scopes.md "The network broker"): HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and
  // lowercase) are set to it, whatever the request's env said. "" = no network: nothing is set.
  std::string proxy;
  std::string malformed;  // the first setting that could not be read; "" = all fine
};

struct sandbox_settings {
  policy::path_policy policy;  // policy.isolation: path isolation (Landlock + own root)
  // New mount and PID namespaces (SHELLCTL_JOB_NAMESPACES is not "off"). Required with
  // isolation (its absence fails the job with 125); best effort without.
  bool namespaces = true;
  std::string state_dir;    // canonical state dir (SHELLCTL_STATE_DIR); "" = unknown
  std::string server_home;  // the runner's own HOME, i.e. the server's (canonical)
  // The server's job cgroup root (SHELLCTL_JOB_CGROUP_ROOT, docs/jobs.md "Containment"): the job's
  // first process enters <root>/job-<id> before anything of the job runs; "" = none.
  std::string cgroup_root;
  // Every job process's OOM score adjustment (SHELLCTL_JOB_OOM_SCORE_ADJ, set by the
  // server; io/proc/oom_score.hpp); nullopt = inherit (the runner's).
  std::optional<int> job_oom_score_adj;
  std::optional<scoped_settings> scoped;  // a native scope's job; none for an ordinary one
};

struct parent_options {
  std::string job_dir;
  std::string job_id;
  std::string cwd;
  job_mode mode = job_mode::pty;
  sandbox_settings sandbox;
};

// Reads the settings from the runner's own environment (getenv-like `get`).
sandbox_settings sandbox_from_env(const char* (*get)(const char*));

// Blocks until <job_dir>/start-gate exists, watching the directory with inotify (no
// polling, no timeout). False (with `err`) if the directory cannot be watched or goes away.
bool wait_for_start_gate(const std::string& job_dir, std::string& err);

// Writes "<value>\n" to <path>.tmp.<pid> (mode 0644) and renames it over <path>.
bool write_file_atomic(const std::string& path, const std::string& value, std::string& err);

// The parent role after argument parsing: returns the code to exit with (-1 included;
// the caller's exit turns it into status 255). Writes the artifacts before returning.
int run_parent(const parent_options& opts);

// The `--exec` child role for callers that start it by hand (the server never does):
// chdir (111), HOME (125), argv (127), Landlock when `policy.isolation` (125), execve
// (126), without namespaces. Only returns on failure, with the code to exit with.
int run_exec_role(const std::string& script, const std::string& cwd,
                  const policy::path_policy& policy);

// exec.LookPath: a name containing '/' is checked as is, else searched in PATH.
bool look_path(const std::string& name, std::string& resolved);

}  // namespace shellctl::io::proc
