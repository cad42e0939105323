#include "io/proc/runner.hpp"

#include "io/fs/files.hpp"
#include "io/fs/job_dir.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "io/native/worker/output_budget.hpp"
#include "io/proc/gate_latch.hpp"
#include "io/proc/job_env.hpp"
#include "io/proc/job_init.hpp"
#include "io/world/job_world.hpp"
#include "io/proc/oom_score.hpp"
#include "io/proc/runner_inotify.hpp"
#include "io/world/scoped_world.hpp"
#include "io/proc/stdin_pipe.hpp"
#include "io/sandbox/capabilities.hpp"
#include "io/proc/job_processes.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/sandbox/landlock.hpp"
#include "io/sandbox/namespaces.hpp"
#include "io/policy/path_rules.hpp"
#include "io/sandbox/rlimits.hpp"
#include "io/sandbox/seccomp.hpp"
#include "io/text/clock.hpp"

extern char** environ;

namespace shellctl::io::proc {

namespace {

constexpr const char* kGateName = io::fs::job_files::start_gate;
constexpr const char* kEnvFileName = io::fs::job_files::env;

std::string errno_text(int e) { return std::strerror(e); }

// Runner-side diagnostics, in the original's form "shellctl-runner: <op>: <err>".
void diag(const std::string& op, const std::string& err) {
  std::fprintf(stderr, "shellctl-runner: %s: %s\n", op.c_str(), err.c_str());
  std::fflush(stderr);
}

// Child-side diagnostics, in the original's form "shellctl: <context>: <error>".
void child_diag(const std::string& context, const std::string& err) {
  std::fprintf(stderr, "shellctl: %s: %s\n", context.c_str(), err.c_str());
  std::fflush(stderr);
}

using io::fs::write_all;
std::string join_path(const std::string& dir, const std::string& name) {
  return io::fs::join(dir, name);
}
std::string absolute(const std::string& path) { return io::fs::absolute_clean(path); }

bool is_executable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return false;
  return ::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) == 0;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitSignaled;  // Go's ExitCode() is -1 for a signal death
}

// One captured stream of a stdio job: a pipe read end copied into a file.
struct capture {
  const char* name;
  int pipe_fd = -1;
  int file_fd = -1;
  bool write_failed = false;
};

// What the job's process needs to become the script, decided before any sandboxing
// (the child role's chdir, argv and PATH lookup, plus HOME: decision D7 and guarantee G4).
struct child_plan {
  std::string cwd;            // as given; the host-root job starts there
  std::string cwd_canonical;  // symlinks resolved; the own-root job starts there
  bool cwd_granted = false;   // the cwd gets the original's read-write grant
  std::string home;           // the HOME to grant (canonical with isolation); "" = none
  std::vector<std::string> argv;
  std::string resolved;  // argv[0] found through PATH in the host's tree
};

// Creates the missing components of `canonical` (canonical_prospective's answer) one at a
// time, never following a symlink: one planted in between fails the job instead of
// steering the creation elsewhere.
bool make_home_dirs(const std::string& canonical, std::string& err) {
  int fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::size_t i = 1;
  while (fd >= 0 && i < canonical.size()) {
    std::size_t j = canonical.find('/', i);
    if (j == std::string::npos) j = canonical.size();
    const std::string name = canonical.substr(i, j - i);
    i = j + 1;
    if (name.empty()) continue;
    const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int next = ::openat(fd, name.c_str(), flags);
    if (next < 0 && errno == ENOENT) {
      if (::mkdirat(fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
        err = errno_text(errno);
        ::close(fd);
        return false;
      }
      next = ::openat(fd, name.c_str(), flags);
    }
    if (next < 0) err = errno == ELOOP ? "a symlink is in the way" : errno_text(errno);
    ::close(fd);
    fd = next;
  }
  if (fd < 0) {
    if (err.empty()) err = errno_text(errno);
    return false;
  }
  ::close(fd);
  return true;
}

int refuse_home(const std::string& why) {
  std::fprintf(stderr, "shellctl-runner: sandbox: %s\n", why.c_str());
  return kExitSetupFailed;
}

// HOME from the job's environment: created if missing (0700). With path isolation it must
// be absolute and outside "/", the system trees and the state dir (G4), checked on the
// resolved path before and after the creation. Returns 0 or the exit code.
int prepare_home(const sandbox_settings& sb, std::string& home_out) {
  const char* env = std::getenv("HOME");
  const std::string home = env != nullptr ? env : "";
  if (home.empty()) {
    if (!sb.policy.isolation) return 0;
    std::fprintf(stderr,
                 "shellctl-runner: landlock: HOME is empty; refusing to run the job "
                 "without its home directory\n");
    return kExitSetupFailed;
  }
  if (!sb.policy.isolation) {
    if (!sb.state_dir.empty() && home[0] == '/' && policy::is_within(home, sb.state_dir))
      return refuse_home(policy::home_verdict_text(policy::home_verdict::inside_state, home));
    std::string err;
    if (!io::fs::make_dirs(home, 0700, err)) {
      child_diag("create HOME " + home, err);
      return kExitSetupFailed;
    }
    home_out = home;
    return 0;
  }
  if (home[0] != '/')
    return refuse_home(policy::home_verdict_text(policy::home_verdict::relative, home));
  const auto canonical = policy::canonical_prospective(home);
  if (!canonical) {
    child_diag("create HOME " + home, "not a directory");
    return kExitSetupFailed;
  }
  auto verdict = policy::check_home(*canonical, sb.state_dir, sb.server_home);
  if (verdict != policy::home_verdict::ok)
    return refuse_home(policy::home_verdict_text(verdict, *canonical));
  std::string err;
  if (!make_home_dirs(*canonical, err)) {
    child_diag("create HOME " + home, err);
    return kExitSetupFailed;
  }
  char buf[PATH_MAX];
  if (::realpath(canonical->c_str(), buf) == nullptr) {
    child_diag("resolve HOME " + home, errno_text(errno));
    return kExitSetupFailed;
  }
  verdict = policy::check_home(buf, sb.state_dir, sb.server_home);
  if (verdict != policy::home_verdict::ok)
    return refuse_home(policy::home_verdict_text(verdict, buf));
  home_out = buf;
  return 0;
}

// chdir (111), HOME (125), argv and PATH (127), in the order the original reports them.
int plan_child(const std::string& script, const std::string& cwd, const sandbox_settings& sb,
               child_plan& plan) {
  plan.cwd = cwd;
  if (::chdir(cwd.c_str()) != 0) {
    child_diag("chdir " + cwd, errno_text(errno));
    return kExitChdirFailed;
  }
  char buf[PATH_MAX];
  plan.cwd_canonical = ::getcwd(buf, sizeof buf) != nullptr ? buf : cwd;
  plan.cwd_granted = policy::cwd_gets_grant(plan.cwd_canonical, sb.state_dir);
  if (const int rc = prepare_home(sb, plan.home); rc != 0) return rc;
  {
    char magic[2] = {0, 0};
    const int fd = ::open(script.c_str(), O_RDONLY | O_CLOEXEC);
    bool shebang = false;
    if (fd >= 0) {
      shebang = ::read(fd, magic, 2) == 2 && magic[0] == '#' && magic[1] == '!';
      ::close(fd);
    }
    if (shebang) {
      ::chmod(script.c_str(), 0755);  // best effort: a failure surfaces as 127/126 below
      plan.argv = {script};
    } else {
      plan.argv = {"sh", script};
    }
  }
  if (!look_path(plan.argv[0], plan.resolved)) {
    child_diag("exec: \"" + plan.argv[0] + "\"", "executable file not found in $PATH");
    return kExitNotFound;
  }
  return 0;
}

using sandbox_step = std::function<bool(std::string& err)>;

// The last steps of the job's own process: chdir, default signals, `sandbox` (which names
// its own failures: "landlock: ...", "sandbox: ..."), the start gate, execve (126).
// Returns only on failure.
int exec_child(const child_plan& plan, const std::string& chdir_to, const sandbox_step& sandbox) {
  if (::chdir(chdir_to.c_str()) != 0) {
    child_diag("chdir " + chdir_to, errno_text(errno));
    return gate_latch::fail(kExitChdirFailed);
  }
  reset_signals();
  if (sandbox) {
    std::string err;
    if (!sandbox(err)) {
      std::fprintf(stderr, "shellctl-runner: %s\n", err.c_str());
      return gate_latch::fail(kExitSetupFailed);
    }
  }
  // Everything is ready: the script starts the moment the gate opens.
  if (!gate_latch::pass()) return kExitSetupFailed;
  ::close_range(3, ~0U, 0);  // nothing of the runner's stays open in the job
  std::vector<std::string> argv = plan.argv;
  auto c_argv = c_strings(argv);
  ::execve(plan.resolved.c_str(), c_argv.data(), environ);
  child_diag("exec " + plan.resolved, errno_text(errno));
  return kExitExecFailed;
}

sandbox_step landlock_step(const policy::path_policy& policy, const child_plan& plan,
                           const std::string& job_dir) {
  return [&policy, &plan, job_dir](std::string& err) {
    if (!sandbox::apply_landlock(policy, plan.home, plan.cwd_granted ? plan.cwd_canonical : "",
                                 job_dir, err)) {
      err = "landlock: " + err;
      return false;
    }
    return true;
  };
}

// The job's process inside its namespaces: capabilities cut, no_new_privs, Landlock (with
// isolation), seccomp. Order matters: Landlock and seccomp need no_new_privs, and the
// filter comes last so that it never stands in the way of the steps before it.
sandbox_step namespaced_step(const sandbox_settings& sb, const policy::path_policy& policy,
                             const child_plan& plan, const std::string& job_dir) {
  auto landlock = landlock_step(policy, plan, job_dir);
  return [&sb, landlock](std::string& err) {
    if (!sandbox::cut_capabilities(err)) {
      err = "sandbox: " + err;
      return false;
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      err = "sandbox: set no_new_privs: " + errno_text(errno);
      return false;
    }
    if (sb.policy.isolation && !landlock(err)) return false;
    if (!sandbox::install_job_filter(err)) {
      err = "sandbox: " + err;
      return false;
    }
    return true;
  };
}

// PID 1 of a job's namespaces, its world built: starts the job's process (which takes
// `step` and waits at the gate), then is its init. Returns only if the fork failed.
int start_as_init(const child_plan& plan, const std::string& chdir_to, const sandbox_step& step,
                  int status_fd, bool outlive_runner) {
  block_all_signals();
  const pid_t job = ::fork();
  if (job < 0) {
    diag("fork", errno_text(errno));
    return kExitSetupFailed;
  }
  if (job == 0) {
    ::close(status_fd);
    ::_exit(exec_child(plan, chdir_to, step));
  }
  gate_latch::hand_over();  // the job's process waits at the gate now
  run_init(job, status_fd, outlive_runner);
}

// PID 1 of the job's namespaces: plan, build the world, start the job, then be its init.
int init_role(const parent_options& opts, const std::string& script, int status_fd) {
  const auto& sb = opts.sandbox;
  // In the job's cgroup already (docs/jobs.md "Containment"): rooted there, nothing of the job
  // can leave it.
  if (!sb.cgroup_root.empty()) {
    std::string err;
    if (!sandbox::new_cgroup_namespace(err)) {
      diag("cgroup", err);
      return kExitSetupFailed;
    }
  }
  child_plan plan;
  if (const int rc = plan_child(script, opts.cwd, sb, plan); rc != 0) return rc;
  char buf[PATH_MAX];
  world::world_spec w;
  w.own_root = sb.policy.isolation;
  w.policy = sb.policy;
  w.state_dir = sb.state_dir;
  w.job_dir = ::realpath(opts.job_dir.c_str(), buf) != nullptr ? buf : absolute(opts.job_dir);
  w.home = plan.home;
  w.cwd = plan.cwd_canonical;
  w.cwd_granted = plan.cwd_granted;
  if (!sb.state_dir.empty() && !plan.home.empty())
    w.home_view = policy::home_view_dir(sb.state_dir, plan.home);
  w.own_cgroup = !sb.cgroup_root.empty();  // the namespace above is rooted at the job's cgroup
  std::string err;
  if (w.own_root && w.home.empty()) {
    diag("sandbox", "no HOME to grant");
    return kExitSetupFailed;
  }
  if (!world::build_world(w, err)) {
    diag("sandbox", err);
    return kExitSetupFailed;
  }
  // The same-HOME outputs are readable: Landlock must let them through too (G7).
  policy::path_policy policy = sb.policy;
  if (!w.home_view.empty()) policy.ro_dirs.push_back(sb.state_dir + "/jobs");
  const std::string job_dir = w.job_dir;
  const std::string chdir_to = w.own_root ? plan.cwd_canonical : plan.cwd;
  // What the job leaves running outlives its script only where its cgroup can end it later.
  return start_as_init(plan, chdir_to, namespaced_step(sb, policy, plan, job_dir), status_fd,
                       !sb.cgroup_root.empty());
}

// A native scope's job (docs/native-scopes.md "The scoped job sandbox"), in its order: rlimits,
// every capability dropped with the securebits locked, no_new_privs, Landlock over the scoped
// world (fail closed: any error, an unavailable Landlock included, is 125), the scoped seccomp
// filter last.
sandbox_step scoped_step(const scoped_settings& sc) {
  return [&sc](std::string& err) {
    if (!sandbox::lower_limit(RLIMIT_NOFILE, sc.open_files, err) ||
        !sandbox::lower_limit(RLIMIT_FSIZE, sc.file_bytes, err) ||
        !sandbox::drop_all_capabilities(err)) {
      err = "sandbox: " + err;
      return false;
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
      err = "sandbox: set no_new_privs: " + errno_text(errno);
      return false;
    }
    policy::path_policy policy;
    policy.isolation = true;
    policy.rw_dirs = {world::kScopedWorkspace, world::kScopedTmp, "/dev/pts"};
    // Read and execute beneath "/": the root is the scoped world itself (the image trees,
    // /inputs, /run/job, /proc, /dev), nothing of the host but the image is in it.
    policy.ro_dirs = {"/"};
    for (const char* d : world::kScopedDevices) policy.rw_files.push_back(std::string("/dev/") + d);
    if (!sandbox::apply_landlock(policy, world::kScopedHome, "", world::kScopedScriptDir, err)) {
      err = "landlock: " + err;
      return false;
    }
    if (!sandbox::install_job_filter(err, sandbox::job_filter::scoped)) {
      err = "sandbox: " + err;
      return false;
    }
    return true;
  };
}

// PID 1 of a native scope's job: the scoped world (nothing of the spool, the worker or the
// host but the image), then the script from /run/job as the reaping init's child.
int scoped_init_role(const parent_options& opts, const std::string& script, int status_fd) {
  const auto& sc = *opts.sandbox.scoped;
  std::string err;
  if (!sc.malformed.empty()) {
    diag("sandbox", "malformed " + sc.malformed);
    return kExitSetupFailed;
  }
  if (!opts.sandbox.cgroup_root.empty() && !sandbox::new_cgroup_namespace(err)) {
    diag("cgroup", err);
    return kExitSetupFailed;
  }
  char buf[PATH_MAX];
  world::scoped_world_spec w;
  w.image_root = sc.image_root;
  w.payload = sc.payload;
  w.inputs = sc.inputs;
  w.script = script;
  w.script_bytes = sc.script_bytes;
  w.mount_point = ::realpath(opts.job_dir.c_str(), buf) != nullptr ? buf : absolute(opts.job_dir);
  if (!world::build_scoped_world(w, err)) {
    diag("sandbox", err);
    return kExitSetupFailed;
  }
  // Inside the new root: HOME is the scope's, whatever the request said, and so are
  // the proxy variables when the scope has targets (its only way out, S21).
  ::setenv("HOME", world::kScopedHome, 1);
  if (!sc.proxy.empty())
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
      ::setenv(name, sc.proxy.c_str(), 1);
  // HOME, cwd and PATH as the scoped world has them: path isolation's rules about the
  // host's HOME and state dir do not apply inside it.
  sandbox_settings inside;
  inside.policy.isolation = false;
  child_plan plan;
  if (const int rc = plan_child(world::kScopedScript, opts.cwd, inside, plan); rc != 0) return rc;
  // A native scope's job ends whole with its script: a scope has no cgroup of ours to keep
  // what a job leaves running, and the next job of the scope must start from nothing.
  return start_as_init(plan, plan.cwd, scoped_step(sc), status_fd, false);
}

// The job without namespaces: Landlock alone when isolation is on (SHELLCTL_JOB_NAMESPACES
// =off, refused by the server with isolation), nothing when it is off (as the original).
int plain_role(const parent_options& opts, const std::string& script) {
  child_plan plan;
  if (const int rc = plan_child(script, opts.cwd, opts.sandbox, plan); rc != 0) return rc;
  char buf[PATH_MAX];
  const std::string job_dir =
      ::realpath(opts.job_dir.c_str(), buf) != nullptr ? buf : absolute(opts.job_dir);
  sandbox_step step;
  if (opts.sandbox.policy.isolation) step = landlock_step(opts.sandbox.policy, plan, job_dir);
  return exec_child(plan, plan.cwd, step);
}

// A setup failure of the parent before its child exists: said once the gate opened, as
// every setup failure is, so that nothing of the job's (not even this) precedes the gate,
// and the artifacts are written after it, as the server expects.
int refuse_at_gate(const parent_options& opts, const std::string& op, const std::string& err) {
  std::string gate_err;
  if (!wait_for_start_gate(opts.job_dir, gate_err)) diag("start gate", gate_err);
  diag(op, err);
  return kExitSetupFailed;
}

class child_process {
 public:
  child_process(const parent_options& opts, std::vector<std::string> env)
      : opts_(opts), env_(std::move(env)) {}

  // Starts the job and waits for its main process (and, in stdio mode, for EOF on both
  // streams). Returns the code for the artifacts.
  int run(int out_file, int err_file) {
    // A scope's settings are checked before anything starts: said by the runner itself
    // (its stderr), not by the job's init, whose stderr is the job's budgeted output.
    if (opts_.sandbox.scoped && !opts_.sandbox.scoped->malformed.empty())
      return refuse("sandbox", "malformed " + opts_.sandbox.scoped->malformed);
    const std::string script = join_path(absolute(opts_.job_dir), io::fs::job_files::script);
    auto c_env = c_strings(env_);

    const bool stdio = opts_.mode == job_mode::stdio;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, dev_null = -1;
    if (stdio) {
      // The job's stdin: the server's pipe when the run asked for one (it made the FIFO
      // before the start), else /dev/null as in the original.
      const std::string pipe_path = join_path(opts_.job_dir, io::proc::stdin_pipe::file_name);
      dev_null = io::proc::stdin_pipe::open_for_job(pipe_path);
      if (dev_null < 0 && errno != ENOENT) return refuse("open " + pipe_path, errno_text(errno));
      if (dev_null < 0) dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (dev_null < 0) return refuse("open /dev/null", errno_text(errno));
      if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
        return refuse("pipe", errno_text(errno));
    }
    // In the child: the job's OOM score (first: everything of the job inherits it, the
    // job's init too), its streams and environment.
    auto enter_job_side = [&] {
      if (opts_.sandbox.job_oom_score_adj && !oom_score::write_self(*opts_.sandbox.job_oom_score_adj))
        diag("oom_score_adj", errno_text(errno));
      if (stdio) {
        if (::dup2(dev_null, STDIN_FILENO) < 0 || ::dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
            ::dup2(err_pipe[1], STDERR_FILENO) < 0)
          ::_exit(kExitSetupFailed);
      }
      environ = c_env.data();
    };

    // The job's cgroup (docs/jobs.md "Containment"): opened here, entered by our child as its
    // first step, so that every process of the job is born inside it. A job that should be
    // contained and cannot be does not run (125).
    int cgroup_procs = -1;
    if (!opts_.sandbox.cgroup_root.empty()) {
      std::string err;
      const auto path = sandbox::cgroups::job_path(opts_.sandbox.cgroup_root, opts_.job_id);
      if (opts_.job_id.empty() || (cgroup_procs = sandbox::cgroups::open_procs(path, err)) < 0)
        return refuse("cgroup", opts_.job_id.empty() ? "no job id" : err);
    }
    // In the child, after gate_latch::enter (so that a failure is said at the gate).
    auto enter_cgroup = [&] {
      if (cgroup_procs < 0) return;
      if (!sandbox::cgroups::enter(cgroup_procs)) {
        diag("cgroup", "enter " + sandbox::cgroups::job_path(opts_.sandbox.cgroup_root, opts_.job_id) +
                           ": " + errno_text(errno));
        ::_exit(gate_latch::fail(kExitSetupFailed));
      }
      ::close(cgroup_procs);
    };

    // The start gate's latch: the child builds the job's sandbox while we wait for the
    // gate, and only its execve waits for our word (io/proc/gate_latch.hpp).
    int latch[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, latch) != 0)
      return refuse("socketpair", errno_text(errno));

    pid_t pid = -1;
    int status_fd = -1;  // namespaced: the main process's wait status comes from init
    std::string held_diag;
    if (opts_.sandbox.namespaces) {
      int sync[2], status[2];
      if (::pipe2(sync, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0)
        return refuse("pipe", errno_text(errno));
      std::string err;
      const auto c = sandbox::clone_into_namespaces(err);
      if (c.pid == 0) {
        // PID 1 of the job: it dies with us, and waits until its ids are mapped.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::close(sync[1]);
        ::close(status[0]);
        ::close(latch[0]);
        enter_job_side();
        gate_latch::enter(latch[1]);
        enter_cgroup();  // before init forks the job's process
        char go = 0;
        if (::read(sync[0], &go, 1) != 1) ::_exit(gate_latch::fail(kExitSetupFailed));
        ::close(sync[0]);
        ::_exit(gate_latch::fail(opts_.sandbox.scoped.has_value()
                                     ? scoped_init_role(opts_, script, status[1])
                                     : init_role(opts_, script, status[1])));
      }
      ::close(sync[0]);
      ::close(status[1]);
      if (c.pid > 0) {
        bool ok = !c.user_ns || sandbox::map_ids(c.pid, ::geteuid(), ::getegid(), err);
        char go = 'g';
        ok = ok && ::write(sync[1], &go, 1) == 1;
        ::close(sync[1]);
        if (!ok) {
          ::kill(c.pid, SIGKILL);
          held_diag = "sandbox: " + err;  // said once the gate opened, like every setup failure
        }
        pid = c.pid;
        status_fd = status[0];
      } else {
        ::close(sync[1]);
        ::close(status[0]);
        if (opts_.sandbox.policy.isolation || opts_.sandbox.scoped.has_value()) {
          ::close(latch[0]);
          ::close(latch[1]);
          return refuse("sandbox", err + (opts_.sandbox.scoped.has_value()
                                              ? " (a native scope's job needs them)"
                                              : " (path isolation needs them)"));
        }
      }
    }
    if (pid < 0) {
      pid = ::fork();
      if (pid < 0) {
        ::close(latch[0]);
        ::close(latch[1]);
        return refuse("fork", errno_text(errno));
      }
      if (pid == 0) {
        ::close(latch[0]);
        enter_job_side();
        gate_latch::enter(latch[1]);
        enter_cgroup();
        ::_exit(gate_latch::fail(plain_role(opts_, script)));
      }
    }
    ::close(latch[1]);
    if (cgroup_procs >= 0) ::close(cgroup_procs);
    if (stdio) {
      ::close(dev_null);
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
    }

    // Signals keep their default actions while we wait: tmux ending the session (SIGHUP)
    // ends the runner at its gate as it always did, and our child with it (its PID 1 by
    // PDEATHSIG, a plain child by the latch closing).
    {
      std::string err;
      const bool gate = wait_for_start_gate(opts_.job_dir, err);
      if (!gate || !gate_latch::open(latch[0])) {
        ::close(latch[0]);
        if (!gate) diag("start gate", err);
        int st = 0;
        while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        for (int fd : {out_pipe[0], err_pipe[0], status_fd})
          if (fd >= 0) ::close(fd);
        // A child that died before the gate (it was killed) reports as it died.
        return gate ? exit_code_of(st) : kExitSetupFailed;
      }
      ::close(latch[0]);
    }
    if (!held_diag.empty()) std::fprintf(stderr, "shellctl-runner: %s\n", held_diag.c_str());

    // Signals are taken through a signalfd so that forwarding, the child's exit and the
    // stream copies share one poll loop; the child restores its own.
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
    ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
    const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
      diag("signalfd", errno_text(errno));
      ::kill(pid, SIGKILL);
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      return kExitSetupFailed;
    }

    capture streams[2] = {{"stdout", out_pipe[0], out_file}, {"stderr", err_pipe[0], err_file}};
    // A native scope's job: every byte of stdout and stderr is reserved in the scope's
    // output budget before it is written (io/native/worker/output_budget.hpp). Past it, what fits
    // is written, the overflow marker made and the job's whole namespace killed at once.
    io::native::output_budget budget;
    bool overflowed = false;
    const std::string overflow_file = join_path(opts_.job_dir, io::fs::job_files::output_overflow);
    if (opts_.sandbox.scoped.has_value() && stdio) {
      std::string err;
      if (!budget.start(opts_.sandbox.scoped->budget_helper, opts_.sandbox.scoped->budget_db, err))
        diag("output budget", err);  // nothing is granted then: no output is written
    }
    bool capture_failed = false;
    bool exited = false;    // our child (the job, or its init) is gone
    bool finished = false;  // the job's main process is gone and its status known
    int status = 0;
    // A SIGCHLD from before the signalfd was lost: the child may be gone already.
    if (::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    std::string buf(64 * 1024, '\0');
    auto copy = [&](capture& c) {
      if (!opts_.sandbox.scoped.has_value()) return copy_once(c, buf);
      bool write_failed = false;
      const bool ok = copy_once(c, buf, [&](const char* data, std::size_t n) {
        if (!io::native::write_within_budget(budget, c.file_fd, data, n, overflow_file,
                                             overflowed, write_failed) &&
            !exited)
          ::kill(pid, SIGKILL);  // PID 1 of the job's namespace: the whole tree goes
        return !write_failed;
      });
      return ok;
    };
    while (!finished || streams[0].pipe_fd >= 0 || streams[1].pipe_fd >= 0) {
      pollfd fds[4];
      nfds_t nfds = 0;
      fds[nfds++] = {sfd, POLLIN, 0};
      const int status_slot = status_fd >= 0 ? static_cast<int>(nfds) : -1;
      if (status_fd >= 0) fds[nfds++] = {status_fd, POLLIN, 0};
      int slot[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        if (streams[k].pipe_fd < 0) continue;
        slot[k] = static_cast<int>(nfds);
        fds[nfds++] = {streams[k].pipe_fd, POLLIN, 0};
      }
      // The gate's inotify instance is closed here, once idle and cheap to close
      // (runner_inotify.hpp): a long job does not hold one of the user's instances.
      const int linger_ms = runner_inotify().close_if_idle();
      if (::poll(fds, nfds, linger_ms > 0 ? linger_ms : -1) < 0) {
        if (errno == EINTR) continue;
        diag("poll", errno_text(errno));
        capture_failed = true;
        break;  // unreachable in practice; the child is still reaped below
      }
      if (fds[0].revents != 0) handle_signals(sfd, pid, exited, status, finished);
      if (status_slot >= 0 && fds[status_slot].revents != 0) {
        // init's report (or EOF: it died before the job did, e.g. a setup failure).
        int job_status = 0;
        if (::read(status_fd, &job_status, sizeof job_status) ==
            static_cast<ssize_t>(sizeof job_status)) {
          status = job_status;
          finished = true;
        }
        ::close(status_fd);
        status_fd = -1;
        if (!finished && exited) finished = true;  // init's own status stands
      }
      if (exited && status_fd < 0) finished = true;
      for (int k = 0; k < 2; ++k) {
        if (slot[k] < 0 || fds[slot[k]].revents == 0) continue;
        if (!copy(streams[k])) capture_failed = true;
      }
    }
    if (!finished && !exited) {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    for (auto& s : streams)
      if (s.pipe_fd >= 0) ::close(s.pipe_fd);
    if (status_fd >= 0) ::close(status_fd);
    ::close(sfd);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    const int code = exit_code_of(status);
    if (WIFSIGNALED(status) && !capture_failed) end_signal_ = WTERMSIG(status);
    return capture_failed ? kExitSetupFailed : code;
  }
  // The signal that ended the job's main process (0: it exited, or never ran).
  int end_signal() const { return end_signal_; }

 private:
  int end_signal_ = 0;
  const parent_options& opts_;
  std::vector<std::string> env_;

  int refuse(const std::string& op, const std::string& err) {
    return refuse_at_gate(opts_, op, err);
  }

  // SIGCHLD: our child exited (its status stands unless init reports the job's). Others:
  // forwarded to the child while the job runs.
  static void handle_signals(int sfd, pid_t pid, bool& exited, int& status, bool& finished) {
    signalfd_siginfo si{};
    while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGCHLD) {
        int st = 0;
        if (!exited && ::waitpid(pid, &st, WNOHANG) == pid) {
          exited = true;
          if (!finished) status = st;
        }
      } else if (!exited && !finished) {
        ::kill(pid, static_cast<int>(si.ssi_signo));
      }
    }
  }

  // One read from the pipe; false on a capture error. Closes the pipe at EOF or error.
  // `write` (a scope's budget) replaces the plain write of what was read.
  static bool copy_once(capture& s, std::string& buf,
                        const std::function<bool(const char*, std::size_t)>& write = {}) {
    const ssize_t r = ::read(s.pipe_fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) return true;
      diag(std::string("copy ") + s.name, errno_text(errno));
      ::close(s.pipe_fd);
      s.pipe_fd = -1;
      return false;
    }
    if (r == 0) {
      ::close(s.pipe_fd);
      s.pipe_fd = -1;
      return true;
    }
    if (s.write_failed) return false;  // keep draining so the child never blocks on us
    if (write ? !write(buf.data(), static_cast<std::size_t>(r))
              : !write_all(s.file_fd, buf.data(), static_cast<std::size_t>(r))) {
      diag(std::string("copy ") + s.name, errno_text(errno));
      s.write_failed = true;
      return false;
    }
    return true;
  }
};

int open_log(const std::string& path, std::string& err) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    err = errno_text(errno);
    return -1;
  }
  if (::fchmod(fd, 0600) != 0) {
    err = errno_text(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything before the artifacts (the start gate included); returns the code to publish.
int run_job(const parent_options& opts, int& end_signal) {
  int out_file = -1, err_file = -1;
  auto close_logs = [&]() {
    bool ok = true;
    for (int* fd : {&out_file, &err_file}) {
      if (*fd >= 0 && ::close(*fd) != 0) {
        diag("close log", errno_text(errno));
        ok = false;
      }
      *fd = -1;
    }
    return ok;
  };
  auto refuse = [&](const std::string& op, const std::string& err) {
    close_logs();
    return refuse_at_gate(opts, op, err);
  };
  if (opts.mode == job_mode::stdio) {
    std::string err;
    out_file = open_log(join_path(opts.job_dir, io::fs::job_files::output), err);
    if (out_file < 0) return refuse("open output.log", err);
    err_file = open_log(join_path(opts.job_dir, "stderr.log"), err);
    if (err_file < 0) return refuse("open stderr.log", err);
    // Nobody reads the pane in stdio mode: the runner's own diagnostics go to stderr.log
    // too, so a setup failure leaves a trace next to the job's output.
    ::dup2(err_file, STDERR_FILENO);
  }

  std::string text, err;
  env_pairs overlay;
  const std::string env_path = join_path(opts.job_dir, kEnvFileName);
  const auto read = io::fs::read_small_file_checked(env_path, text, SIZE_MAX);
  if (read == io::fs::read_result::ok) {
    auto parsed = parse_env_json(text, err);
    if (!parsed) return refuse("parse " + env_path, err);
    overlay = std::move(*parsed);
  } else if (read == io::fs::read_result::error) {
    return refuse("read " + env_path, errno_text(errno));
  }

  child_process child(opts, build_job_env(current_environ(), overlay, opts.cwd));
  int code = child.run(out_file, err_file);
  end_signal = child.end_signal();
  if (!close_logs()) code = kExitSetupFailed;
  return code;
}

}  // namespace

namespace {
// Fallback when the per-user inotify limits are exhausted (fs.inotify.max_user_instances
// is 128 by default, and each runner waiting at its gate holds one instance): poll like
// the original runner, every 50 ms, rather than fail the job.
bool poll_for_start_gate(const std::string& job_dir, const std::string& gate, std::string& err) {
  for (;;) {
    if (::access(gate.c_str(), F_OK) == 0) return true;
    struct stat st;
    if (::stat(job_dir.c_str(), &st) != 0) {
      err = "job directory " + job_dir + " disappeared before the start gate";
      return false;
    }
    ::usleep(50 * 1000);
  }
}
}  // namespace

bool wait_for_start_gate(const std::string& job_dir, std::string& err) {
  const std::string gate = join_path(job_dir, kGateName);
  auto& ino = runner_inotify();
  // Watch first, then look: a gate created in between is seen either way.
  if (ino.add_watch(job_dir, IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                                 IN_ONLYDIR) < 0) {
    const int e = errno;
    ino.drop_watches();
    if (e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOSPC)
      return poll_for_start_gate(job_dir, gate, err);
    err = "watch " + job_dir + ": " + errno_text(e);
    return false;
  }
  // The job directory's own IN_DELETE_SELF comes only once nothing holds it: our logs are
  // open in it while we wait (the job's process is being set up meanwhile), so its removal
  // is seen from the directory above (the jobs directory's IN_DELETE/IN_MOVED_FROM), and
  // every wake-up checks that it is still there. Without that second watch (out of
  // watches) the removal is still seen, when the logs close.
  std::string parent = job_dir;
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();  // "J/" is J
  const auto slash = parent.find_last_of('/');
  parent = slash == std::string::npos ? "." : parent.substr(0, slash + 1);
  ino.add_watch(parent, IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR);
  alignas(inotify_event) char buf[4096];
  bool opened = false;
  for (;;) {
    if (::access(gate.c_str(), F_OK) == 0) {
      opened = true;
      break;
    }
    struct stat st;
    if (::stat(job_dir.c_str(), &st) != 0) break;
    struct pollfd p {ino.fd(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      err = "poll inotify: " + errno_text(errno);
      ino.drop_watches();
      return false;
    }
    bool self_gone = false;
    ssize_t n;
    while ((n = ::read(ino.fd(), buf, sizeof buf)) > 0) {
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) self_gone = true;
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      err = "read inotify: " + errno_text(errno);
      ino.drop_watches();
      return false;
    }
    if (self_gone) break;
  }
  ino.drop_watches();  // not closed: see runner_inotify.hpp
  if (opened) return true;
  // The job directory is gone (job deleted): the gate can never appear.
  err = "job directory " + job_dir + " disappeared before the start gate";
  return false;
}

// PTY jobs: the job's last output must reach output.log before the pane closes. tmux frees
// a dead pane's pipe buffer without writing it, so a runner that exits at once can lose
// what the job printed last. The runner prints an end marker (an OSC sequence the
// sanitizer strips) and waits until the sanitizer says it read it (.pipe-end): everything
// before the marker has then arrived. Bounded: a pipe that is gone costs at most 10 s.
static void await_pipe_end(const std::string& job_dir) {
  const char* nonce = std::getenv("SHELLCTL_PIPE_END");
  if (nonce == nullptr || *nonce == '\0') return;  // started without the handshake
  const std::string marker = std::string("\x1b]shellctl-end;") + nonce + "\x07";
  if (!io::fs::write_all(STDOUT_FILENO, marker.data(), marker.size())) return;
  const std::string end = join_path(job_dir, io::fs::job_files::pipe_end);
  // Woken by inotify when the sanitizer creates the file (each millisecond counts on every
  // PTY job's path); polled every 2 ms if no inotify instance is to be had. The instance
  // is left to our exit to close (runner_inotify.hpp).
  auto& ino = runner_inotify();
  const bool watching = ino.add_watch(job_dir, IN_CREATE | IN_MOVED_TO) >= 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  alignas(inotify_event) char buf[4096];
  while (::access(end.c_str(), F_OK) != 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (!watching) {  // out of watches (or the dir is gone): polling still works
      ::usleep(2000);
      continue;
    }
    struct pollfd p {ino.fd(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0)
      while (::read(ino.fd(), buf, sizeof buf) > 0) {
      }
  }
  ino.drop_watches();
  // Nothing is printed: the pane is the job's output, and a note there could still reach
  // output.log after the marker.
}

// Our exit ends the pane's session (we are its leader): the kernel sends SIGHUP to the
// terminal's foreground process group, which holds the job's background children. What
// ignores it (nohup), catches it or left the group (setsid) outlives the job, where the job
// has a cgroup to end it later (job_init.hpp). A script that ends right after `nohup cmd &`
// leaves that child on its way there — forked, not yet in nohup — and the hangup would
// race it: such children (running, not yet sparing SIGHUP) get until they settle, at most
// a second. A job that left nothing running is not held up: one read of its cgroup.
static void settle_before_hangup(const parent_options& opts) {
  if (opts.sandbox.cgroup_root.empty() || opts.sandbox.scoped.has_value() || opts.job_id.empty()) return;
  const std::string cgroup = sandbox::cgroups::job_path(opts.sandbox.cgroup_root, opts.job_id);
  const pid_t group = ::getpgrp();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!unsettled_before_hangup(sandbox::cgroups::subtree_procs(cgroup), group).empty() &&
         std::chrono::steady_clock::now() < deadline)
    ::usleep(2000);
}

int run_parent(const parent_options& opts) {
  // Whatever tmux (or whoever started us) ignored or blocked, the job gets the defaults,
  // and the signals forwarded below reach our signalfd (an ignored one never would).
  reset_signals();
  std::string err;
  // The gate is waited for inside: the job's sandbox is built meanwhile.
  int end_signal = 0;
  const int code = run_job(opts, end_signal);
  // The signal first (ours: why a job ended, for its activity view), then the exit code,
  // then the end time: a reader that sees runner-ended-at can rely on the others.
  std::vector<std::pair<const char*, std::string>> artifacts;
  if (end_signal > 0) artifacts.emplace_back(io::fs::job_files::exit_signal, std::to_string(end_signal));
  artifacts.emplace_back(io::fs::job_files::exit_code, std::to_string(code));
  artifacts.emplace_back(io::fs::job_files::ended_at, text::utc_now());
  for (const auto& [name, value] : artifacts) {
    if (!io::fs::write_file_atomic(join_path(opts.job_dir, name), value + "\n", 0644, err))
      diag(std::string("write ") + name, err);
  }
  settle_before_hangup(opts);
  if (opts.mode == job_mode::pty) await_pipe_end(opts.job_dir);
  return code;
}

bool look_path(const std::string& name, std::string& resolved) {
  if (name.find('/') != std::string::npos) {
    if (!is_executable_file(name)) return false;
    resolved = name;
    return true;
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string_view rest = path;
  for (;;) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    // Relative entries ("" means ".") are refused, like Go's exec.ErrDot.
    if (!dir.empty() && dir[0] == '/') {
      const std::string candidate = join_path(dir, name);
      if (is_executable_file(candidate)) {
        resolved = candidate;
        return true;
      }
    }
    if (colon == std::string_view::npos) return false;
    rest.remove_prefix(colon + 1);
  }
}

sandbox_settings sandbox_from_env(const char* (*get)(const char*)) {
  sandbox_settings sb;
  sb.policy = policy::policy_from_env([get](const char* name) { return get(name); });
  const char* ns = get("SHELLCTL_JOB_NAMESPACES");
  sb.namespaces = ns == nullptr || std::string_view(ns) != "off";
  char buf[PATH_MAX];
  if (const char* s = get("SHELLCTL_STATE_DIR"); s != nullptr && *s != '\0')
    sb.state_dir = ::realpath(s, buf) != nullptr ? buf : "";
  if (const char* h = get("HOME"); h != nullptr && *h != '\0')
    sb.server_home = ::realpath(h, buf) != nullptr ? buf : h;
  if (const char* c = get("SHELLCTL_JOB_CGROUP_ROOT"); c != nullptr) sb.cgroup_root = c;
  if (const char* o = get("SHELLCTL_JOB_OOM_SCORE_ADJ"); o != nullptr && *o != '\0') {
    char* end = nullptr;
    const long v = std::strtol(o, &end, 10);
    if (*end == '\0' && v >= oom_score::min_adj && v <= oom_score::max_adj)
      sb.job_oom_score_adj = static_cast<int>(v);
  }
  if (const char* p = get("SHELLCTL_NATIVE_JOB_PAYLOAD"); p != nullptr) {
    auto& sc = sb.scoped.emplace();
    if (const char* h = get("SHELLCTL_NATIVE_JOB_BUDGET_HELPER"); h != nullptr) sc.budget_helper = h;
    if (const char* d = get("SHELLCTL_NATIVE_JOB_BUDGET_DB"); d != nullptr) sc.budget_db = d;
    sb.namespaces = true;
    sc.payload = p;
    if (const char* i = get("SHELLCTL_NATIVE_JOB_IMAGE_ROOT"); i != nullptr && *i != '\0')
      sc.image_root = i;
    if (const char* i = get("SHELLCTL_NATIVE_JOB_INPUTS"); i != nullptr) sc.inputs = i;
    if (const char* x = get("SHELLCTL_NATIVE_JOB_PROXY"); x != nullptr) {
      sc.proxy = x;
      if (sc.proxy.rfind("http://", 0) != 0 && sc.malformed.empty()) sc.malformed = "SHELLCTL_NATIVE_JOB_PROXY";
    }
    auto absolute_dir = [&sc](const std::string& v, const char* name) {
      if (sc.malformed.empty() && (v.empty() || v[0] != '/')) sc.malformed = name;
    };
    absolute_dir(sc.payload, "SHELLCTL_NATIVE_JOB_PAYLOAD");
    absolute_dir(sc.budget_helper, "SHELLCTL_NATIVE_JOB_BUDGET_HELPER");
    absolute_dir(sc.budget_db, "SHELLCTL_NATIVE_JOB_BUDGET_DB");
    absolute_dir(sc.image_root, "SHELLCTL_NATIVE_JOB_IMAGE_ROOT");
    if (!sc.inputs.empty()) absolute_dir(sc.inputs, "SHELLCTL_NATIVE_JOB_INPUTS");
    // Positive decimal integers, nothing else.
    const std::pair<const char*, std::uint64_t*> numbers[] = {
        {"SHELLCTL_NATIVE_JOB_SCRIPT_BYTES", &sc.script_bytes},
        {"SHELLCTL_NATIVE_JOB_OPEN_FILES", &sc.open_files},
        {"SHELLCTL_NATIVE_JOB_FILE_BYTES", &sc.file_bytes}};
    for (const auto& [name, out] : numbers) {
      const char* v = get(name);
      std::uint64_t n = 0;
      bool ok = v != nullptr && *v != '\0' && std::strlen(v) <= 18;
      for (const char* c = v; ok && *c != '\0'; ++c) {
        ok = *c >= '0' && *c <= '9';
        n = n * 10 + static_cast<std::uint64_t>(*c - '0');
      }
      if (ok && n > 0)
        *out = n;
      else if (sc.malformed.empty())
        sc.malformed = name;
    }
  }
  return sb;
}

int run_exec_role(const std::string& script, const std::string& cwd,
                  const policy::path_policy& policy) {
  parent_options opts;
  opts.cwd = cwd;
  opts.job_dir = io::fs::parent_of(absolute(script));
  opts.sandbox.policy = policy;
  opts.sandbox.namespaces = false;
  return plain_role(opts, script);
}

}  // namespace shellctl::io::proc
