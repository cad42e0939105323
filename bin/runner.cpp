// shellctl-runner: started by tmux for every job (docs/jobs.md "Starting a job").
//   parent: shellctl-runner <job_dir> <job_id> <cwd> [pty|stdio]
//   child : shellctl-runner --exec [--landlock] [--rw CSV] [--ro CSV] [--dev CSV] [--]
//           <script> <cwd>      (by hand only: Landlock without namespaces)
#include "io/proc/runner.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/policy/policy.hpp"

namespace proc = shellctl::io::proc;
namespace policy = shellctl::io::policy;

namespace {

int child_main(const std::vector<std::string>& args) {
  std::string err;
  const auto parsed = policy::parse_exec_args(args, err);
  if (!parsed) {
    std::fprintf(stderr,
                 "shellctl: usage: shellctl-runner --exec [--landlock] <script> <cwd>: %s\n",
                 err.c_str());
    return proc::kExitSetupFailed;
  }
  return proc::run_exec_role(parsed->script, parsed->cwd, parsed->policy);
}

int parent_main(const std::vector<std::string>& args) {
  if (args.size() < 3) {
    std::fprintf(stderr,
                 "shellctl: usage: shellctl-runner <job_dir> <job_id> <cwd> [pty|stdio]: bad "
                 "args\n");
    return proc::kExitSetupFailed;
  }
  proc::parent_options opts;
  opts.job_dir = args[0];
  opts.job_id = args[1];
  opts.cwd = args[2];
  const std::string mode = args.size() > 3 ? args[3] : "pty";
  if (auto m = shellctl::io::store::parse_mode(mode)) {
    opts.mode = *m;
  } else {
    std::fprintf(stderr, "shellctl: invalid job mode \"%s\"\n", mode.c_str());
    return proc::kExitSetupFailed;
  }
  // The sandbox comes from the runner's own environment (the server's settings), read
  // before the job's overlay exists (decision D7).
  opts.sandbox = proc::sandbox_from_env([](const char* name) -> const char* {
    return std::getenv(name);
  });
  return proc::run_parent(opts);
}

}  // namespace

constexpr const char* kHelp =
    "Usage: shellctl-runner <job_dir> <job_id> <cwd> [pty|stdio]\n"
    "       shellctl-runner --exec [--landlock] [--rw CSV] [--ro CSV] [--dev CSV] <script> <cwd>\n"
    "\n"
    "Started by tmux for every job of shellctl serve (not for direct use): waits for\n"
    "<job_dir>/start-gate, runs <job_dir>/script in its sandbox, writes runner-exit-code and\n"
    "runner-ended-at. Exit codes: the script's; -1 (255) killed by a signal; 111 cannot chdir;\n"
    "125 setup failed (nothing ran); 126 cannot exec; 127 not found.\n"
    "\n"
    "Environment (the server's, never the job's):\n"
    "  SHELLCTL_ENABLE_PATH_ISOLATION, SHELLCTL_LANDLOCK_RW_PATHS, SHELLCTL_LANDLOCK_RO_PATHS,\n"
    "  SHELLCTL_LANDLOCK_RW_DEV_PATHS, SHELLCTL_JOB_NAMESPACES   the sandbox (see shellctl --help)\n"
    "  SHELLCTL_STATE_DIR                                         masked inside every job\n"
    "  SHELLCTL_JOB_CGROUP_ROOT                                   its cgroup: <root>/job-<job_id>\n"
    "  SHELLCTL_NATIVE_JOB_PAYLOAD, _IMAGE_ROOT, _INPUTS,         a native scope's job (set by\n"
    "  _SCRIPT_BYTES, _OPEN_FILES, _FILE_BYTES,                   its worker): the scoped world\n"
    "  _BUDGET_HELPER, _BUDGET_DB                                 and the output budget\n"
    "  HOME, PATH                                                 the job's defaults\n"
    "  <job_dir>/.job-env.json                                    the request's environment\n";

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.size() == 1 && (args[0] == "--version" || args[0] == "-version")) {
    std::printf("shellctl-runner %s\n", SHELLCTL_VERSION);
    return 0;
  }
  if (!args.empty() && args[0] == "--exec") {
    args.erase(args.begin());
    return child_main(args);
  }
  return parent_main(args);
}
