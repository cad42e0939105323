#include "io/sandbox/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
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

namespace {

// The probe's steps, in the child: on failure the step's name and errno go up `report`.
[[noreturn]] void probe_failed(int report, const std::string& step) {
  const std::string m = step + ": " + std::strerror(errno);
  (void)!::write(report, m.data(), m.size());
  ::_exit(1);
}

[[noreturn]] void probe_scope_child(const std::string& dir, int report) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER) != 0) probe_failed(report, "user namespace");
  // Our own maps: the process must be dumpable to open its /proc files (the server may
  // have made itself non-dumpable; this child is a copy).
  ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  std::string err;
  if (!write_proc_file("/proc/self/setgroups", "deny", err) ||
      !write_proc_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1", err) ||
      !write_proc_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1", err)) {
    (void)!::write(report, ("id maps: " + err).data(), 9 + err.size());
    ::_exit(1);
  }
  if (::unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) != 0)
    probe_failed(report, "mount, PID and net namespaces");
  const pid_t init = ::fork();
  if (init < 0) probe_failed(report, "fork into the PID namespace");
  if (init == 0) {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      probe_failed(report, "private mounts");
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0)
      probe_failed(report, "tmpfs");
    for (const char* sub : {"/proc", "/lower", "/upper", "/work", "/merged"})
      if (::mkdir((dir + sub).c_str(), 0755) != 0) probe_failed(report, std::string("mkdir ") + sub);
    if (::mount("proc", (dir + "/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      probe_failed(report, "proc");
    const std::string file = dir + "/upper/x";
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) probe_failed(report, "a file on the tmpfs");
    ::close(fd);
    if (::setxattr(file.c_str(), "user.shellctl", "1", 1, 0) != 0)
      probe_failed(report, "user xattrs on tmpfs (Linux 6.6 or later)");
    const std::string opts = "lowerdir=" + dir + "/lower,upperdir=" + dir + "/upper,workdir=" + dir +
                             "/work,userxattr";
    if (::mount("overlay", (dir + "/merged").c_str(), "overlay", 0, opts.c_str()) != 0)
      probe_failed(report, "overlay with a tmpfs upper");
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(init, &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

bool scope_namespaces_available(std::string& why) {
  char tmpl[] = "/tmp/shellctl-nsprobe-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    why = std::string("mkdtemp: ") + std::strerror(errno);
    return false;
  }
  const std::string dir = tmpl;
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    ::rmdir(dir.c_str());
    return false;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    probe_scope_child(dir, report[1]);
  }
  ::close(report[1]);
  std::string said;
  char buf[256];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof buf)) > 0) said.append(buf, static_cast<size_t>(n));
  ::close(report[0]);
  int status = 0;
  if (pid > 0)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  ::rmdir(dir.c_str());
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  why = said.empty() ? "the probe died" : said;
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
