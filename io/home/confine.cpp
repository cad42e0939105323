#include "io/home/confine.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/world/job_world.hpp"
#include "io/sandbox/capabilities.hpp"
#include "io/sandbox/landlock.hpp"
#include "io/sandbox/namespaces.hpp"
#include "io/sandbox/seccomp.hpp"

namespace shellctl::io::home {
namespace {

policy::path_policy landlock_policy(const confine_spec& spec) {
  policy::path_policy p;
  p.isolation = true;
  p.rw_dirs = spec.rw_dirs;
  p.ro_dirs = spec.ro_dirs;
  // The file worker links an unnamed upload into place through /proc/self/fd.
  p.ro_dirs.push_back("/proc");
  return p;
}

// The job's process steps, in the runner's order (io/proc/runner.cpp, namespaced_step):
// capabilities, no_new_privs, Landlock, the seccomp filter last.
bool lock_down(const confine_spec& spec, bool require_landlock, std::string& err) {
  if (!sandbox::cut_capabilities(err)) {
    err = "sandbox: " + err;
    return false;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    err = std::string("sandbox: set no_new_privs: ") + std::strerror(errno);
    return false;
  }
  if (require_landlock || sandbox::landlock_abi() > 0) {
    if (!sandbox::apply_landlock(landlock_policy(spec), spec.home, "", "", err)) {
      err = "landlock: " + err;
      return false;
    }
  }
  if (!sandbox::install_job_filter(err)) {
    err = "sandbox: " + err;
    return false;
  }
  return true;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kSetupFailed;
}

}  // namespace

int run_confined(const confine_spec& spec, const std::vector<int>& keep,
                 const std::function<int()>& body,
                 const std::function<void(const std::string&)>& report) {
  std::string err;
  if (!spec.namespaces) {
    if (!lock_down(spec, spec.require_landlock, err)) {
      report(err);
      return kSetupFailed;
    }
    return body();
  }
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) {
    report(std::string("sandbox: pipe: ") + std::strerror(errno));
    return kSetupFailed;
  }
  const auto c = sandbox::clone_into_namespaces(err);
  if (c.pid == 0) {
    // PID 1 of the operation's namespaces: it dies with its parent, and goes on only once
    // its ids are mapped.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(sync[1]);
    char go = 0;
    if (::read(sync[0], &go, 1) != 1) ::_exit(kSetupFailed);
    ::close(sync[0]);
    world::world_spec w;
    w.own_root = true;
    w.policy.isolation = true;
    w.policy.ro_dirs = spec.ro_dirs;
    w.policy.rw_dirs = spec.rw_dirs;
    w.state_dir = spec.state_dir;
    w.root_mount = spec.root_mount;
    w.home = spec.home;
    w.cwd = spec.home;
    if (!world::build_world(w, err)) {
      report("sandbox: " + err);
      ::_exit(kSetupFailed);
    }
    if (!lock_down(spec, spec.require_landlock, err)) {
      report(err);
      ::_exit(kSetupFailed);
    }
    ::_exit(body());
  }
  ::close(sync[0]);
  if (c.pid < 0) {
    ::close(sync[1]);
    report("sandbox: " + err);
    return kSetupFailed;
  }
  bool ok = !c.user_ns || sandbox::map_ids(c.pid, ::geteuid(), ::getegid(), err);
  const char go = 'g';
  ok = ok && ::write(sync[1], &go, 1) == 1;
  ::close(sync[1]);
  if (!ok) {
    ::kill(c.pid, SIGKILL);
    report("sandbox: " + err);
  }
  // The confined process alone holds the operation's descriptors: their ends close when
  // it ends, which is how the server learns of it.
  for (int fd : keep) ::close(fd);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ok ? exit_code_of(status) : kSetupFailed;
}

}  // namespace shellctl::io::home
