#pragma once
// The two roles of shellctl-runner (runtime.md §4, §5): the parent started by tmux, which
// waits for the start gate, builds the job environment, starts the child role and
// publishes the exit artifacts; and the `--exec` child role, which becomes the script.
#include <functional>
#include <string>
#include <vector>

namespace shellctl::io::proc {

enum class job_mode { pty, stdio };

// Exit codes of the runner (runtime.md §4.3).
constexpr int kExitSignaled = -1;
constexpr int kExitChdirFailed = 111;
constexpr int kExitSetupFailed = 125;
constexpr int kExitExecFailed = 126;
constexpr int kExitNotFound = 127;

struct parent_options {
  std::string job_dir;
  std::string cwd;
  job_mode mode = job_mode::pty;
  // Inserted after `--exec` on the child's command line (the sandbox policy flags).
  std::vector<std::string> child_flags;
  // When set, the forked child runs this (the `--exec` role, in-process) instead of
  // re-executing the runner binary: one exec fewer on every job start. It receives the
  // script path and cwd and returns only on failure, with the code to exit with.
  std::function<int(const std::string& script, const std::string& cwd)> child_role;
};

// Blocks until <job_dir>/start-gate exists, watching the directory with inotify (no
// polling, no timeout). False (with `err`) if the directory cannot be watched or goes away.
bool wait_for_start_gate(const std::string& job_dir, std::string& err);

// Writes "<value>\n" to <path>.tmp.<pid> (mode 0644) and renames it over <path>.
bool write_file_atomic(const std::string& path, const std::string& value, std::string& err);

// The parent role after argument parsing: returns the code to exit with (-1 included;
// the caller's exit turns it into status 255). Writes the artifacts before returning.
int run_parent(const parent_options& opts);

struct child_context {
  std::string home;     // $HOME of the job's environment (may be empty)
  std::string cwd;      // the job's working directory
  std::string job_dir;  // the directory holding the script
};

// Applies the sandbox just before execve; false with `err` aborts the job with 125.
using sandbox_hook = std::function<bool(const child_context&, std::string& err)>;

// The child role: chdir (111), create HOME (125; with a sandbox an empty HOME is 125),
// choose and resolve argv (127), apply `sandbox` if set (125), execve (126). Only returns
// on failure, with the code to exit with.
int run_child(const std::string& script, const std::string& cwd, const sandbox_hook& sandbox);

// exec.LookPath: a name containing '/' is checked as is, else searched in PATH.
bool look_path(const std::string& name, std::string& resolved);

}  // namespace shellctl::io::proc
