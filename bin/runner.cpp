// shellctl-runner: started by tmux for every job (runtime.md §4, §5).
//   parent: shellctl-runner <job_dir> <job_id> <cwd> [pty|stdio]
//   child : shellctl-runner --exec [--landlock] [--rw CSV] [--ro CSV] [--dev CSV] [--]
//           <script> <cwd>
#include "io/proc/runner.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/sandbox/landlock.hpp"
#include "io/sandbox/policy.hpp"

namespace proc = shellctl::io::proc;
namespace sandbox = shellctl::io::sandbox;

namespace {

// The child role with a resolved policy: Landlock (if on) just before exec.
int run_child_with(const sandbox::path_policy& policy, const std::string& script,
                   const std::string& cwd) {
  proc::sandbox_hook hook;
  if (policy.isolation) {
    hook = [&policy](const proc::child_context& ctx, std::string& why) {
      return sandbox::apply_landlock(policy, ctx.home, ctx.cwd, ctx.job_dir, why);
    };
  }
  return proc::run_child(script, cwd, hook);
}

int child_main(const std::vector<std::string>& args) {
  std::string err;
  const auto parsed = sandbox::parse_exec_args(args, err);
  if (!parsed) {
    std::fprintf(stderr,
                 "shellctl: usage: shellctl-runner --exec [--landlock] <script> <cwd>: %s\n",
                 err.c_str());
    return proc::kExitSetupFailed;
  }
  return run_child_with(parsed->policy, parsed->script, parsed->cwd);
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
  opts.cwd = args[2];
  const std::string mode = args.size() > 3 ? args[3] : "pty";
  if (mode == "pty") {
    opts.mode = proc::job_mode::pty;
  } else if (mode == "stdio") {
    opts.mode = proc::job_mode::stdio;
  } else {
    std::fprintf(stderr, "shellctl: invalid job mode \"%s\"\n", mode.c_str());
    return proc::kExitSetupFailed;
  }
  // The policy comes from the runner's own environment (the server's settings), read
  // before the job's overlay exists, and travels to the child on its command line.
  const auto policy =
      sandbox::policy_from_env([](const char* name) -> const char* { return std::getenv(name); });
  opts.child_flags = sandbox::policy_to_args(policy);
  // The child role runs in the forked child directly (the `--exec` form stays for
  // callers that start it by hand): process creation is the costliest step of a start.
  opts.child_role = [policy](const std::string& script, const std::string& cwd) {
    return run_child_with(policy, script, cwd);
  };
  return proc::run_parent(opts);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--exec") {
    args.erase(args.begin());
    return child_main(args);
  }
  return parent_main(args);
}
