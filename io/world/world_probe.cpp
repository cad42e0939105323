#include "io/world/world_probe.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "io/sandbox/namespaces.hpp"

namespace shellctl::io::world {

namespace {

// What an operator can do about a failed step, where the cause is known.
std::string with_advice(const std::string& err) {
  // mount(2) refuses MS_PRIVATE on a path that is not a mount point: the root of a
  // chroot made from a plain directory.
  if (err.rfind("make private /:", 0) == 0 && err.find(std::strerror(EINVAL)) != std::string::npos)
    return err +
           " (the root directory is not a mount point, as in a chroot of a plain directory: "
           "bind-mount that directory onto itself, `mount --bind DIR DIR`, before entering it)";
  return err;
}

}  // namespace

std::string world_problem(world_spec w) {
  std::string made;
  if (w.own_root && w.root_mount.empty() && w.job_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr && *tmp == '/' ? tmp : "/tmp") + "/shellctl-world-probe-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return "mkdtemp " + tmpl + ": " + std::strerror(errno);
    made = w.root_mount = tmpl;
  }
  auto done = [&made](std::string problem) {
    if (!made.empty()) ::rmdir(made.c_str());
    return problem;
  };
  int sync[2], report[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) return done(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(sync[0]);
    ::close(sync[1]);
    return done(std::string("pipe: ") + std::strerror(errno));
  }
  std::string err;
  const auto c = sandbox::clone_into_namespaces(err);
  if (c.pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(sync[1]);
    ::close(report[0]);
    char go = 0;
    if (::read(sync[0], &go, 1) != 1) ::_exit(1);
    std::string why;
    if (build_world(w, why)) ::_exit(0);
    why = with_advice(why);
    const ssize_t n = ::write(report[1], why.data(), why.size());
    ::_exit(n < 0 ? 2 : 1);
  }
  ::close(sync[0]);
  ::close(report[1]);
  if (c.pid < 0) {
    ::close(sync[1]);
    ::close(report[0]);
    return done(err);
  }
  bool ok = !c.user_ns || sandbox::map_ids(c.pid, ::geteuid(), ::getegid(), err);
  const char go = 'g';
  ok = ok && ::write(sync[1], &go, 1) == 1;
  ::close(sync[1]);
  if (!ok) ::kill(c.pid, SIGKILL);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    said.append(buf, static_cast<std::size_t>(n));
  }
  ::close(report[0]);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ok) return done(err.empty() ? "mapping the probe's ids failed" : err);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return done("");
  return done(said.empty() ? "the probe of the job world died" : said);
}

}  // namespace shellctl::io::world
