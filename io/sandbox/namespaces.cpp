#include "io/sandbox/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shellctl::io::sandbox {

namespace {

// The raw system call, used like fork(): no separate stack, the child continues here. A
// glibc wrapper cannot create a PID namespace in which the child is PID 1 and return.
pid_t raw_clone(unsigned long flags) {
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr,
                                      nullptr));
}

bool write_proc_file(const std::string& path, const std::string& text, std::string& err) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    err = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    err = "write " + path + ": " + std::strerror(n < 0 ? e : EIO);
    return false;
  }
  return true;
}

}  // namespace

ns_clone clone_into_namespaces(std::string& err) {
  ns_clone out;
  const unsigned long base = CLONE_NEWNS | CLONE_NEWPID;
  out.pid = raw_clone(base);
  if (out.pid >= 0) return out;
  const int first = errno;
  // Without CAP_SYS_ADMIN (a non-root server) the namespaces need a user namespace of
  // their own, in which the child holds the capabilities to set them up.
  if (first == EPERM) {
    out.pid = raw_clone(base | CLONE_NEWUSER);
    if (out.pid >= 0) {
      out.user_ns = true;
      return out;
    }
  }
  err = std::string("clone(mount+pid namespaces): ") + std::strerror(first);
  if (first == EPERM)
    err += std::string("; with a user namespace: ") + std::strerror(errno);
  return out;
}

bool map_ids(pid_t child, uid_t uid, gid_t gid, std::string& err) {
  const std::string proc = "/proc/" + std::to_string(child);
  // setgroups must be denied before an unprivileged process may write gid_map.
  return write_proc_file(proc + "/setgroups", "deny", err) &&
         write_proc_file(proc + "/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1",
                         err) &&
         write_proc_file(proc + "/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1",
                         err);
}

bool new_cgroup_namespace(std::string& err) {
  if (::unshare(CLONE_NEWCGROUP) == 0) return true;
  err = std::string("unshare(cgroup namespace): ") + std::strerror(errno);
  return false;
}

bool namespaces_available(std::string& why) {
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  auto c = clone_into_namespaces(why);
  if (c.pid == 0) {
    ::close(sync[1]);
    char go;
    ::_exit(::read(sync[0], &go, 1) == 1 ? 0 : 1);
  }
  ::close(sync[0]);
  bool ok = c.pid > 0;
  if (ok && c.user_ns) ok = map_ids(c.pid, ::geteuid(), ::getegid(), why);
  if (c.pid > 0) {
    char go = 'g';
    if (::write(sync[1], &go, 1) != 1) ok = false;
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  ::close(sync[1]);
  return ok;
}

}  // namespace shellctl::io::sandbox
