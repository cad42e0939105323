#include "io/native/worker/worker_spawn.hpp"

#include "io/proc/proc_file.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace shellctl::io::native {
namespace {

bool write_proc(pid_t pid, const char* file, const std::string& text, std::string& err) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    err = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) err = "write " + path + ": " + std::strerror(errno);
  ::close(fd);
  return ok;
}

}  // namespace

std::uint64_t process_starttime(pid_t pid) {
  const std::string stat = proc::read_proc_file(pid, "stat").value_or("");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  // Field 3 (state) is the first after ")"; field 22 is the 20th from there.
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

bool spawn_worker(const std::string& exe, int setup_fd, int cgroup_dir_fd, spawned_worker& out,
                  std::string& err) {
  // Everything the child needs, made before the clone: after it, only async-signal-safe
  // calls (the supervisor has threads).
  const char* argv[] = {exe.c_str(), "native-worker", "--setup-fd", "3", nullptr};
  const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", nullptr};
  int ready[2], go[2];
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(go, O_CLOEXEC) != 0) {
    err = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
               CLONE_NEWUTS | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup_dir_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<std::uint64_t>(cgroup_dir_fd);
  }
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    // The worker, PID 1 of its namespace. Dumpable again (the supervisor is not), so that
    // the supervisor may write our id maps; then wait for them.
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(125);
    // fd 3 without close-on-exec (dup2 onto itself would keep the flag), nothing else.
    if (setup_fd == 3 ? ::fcntl(3, F_SETFD, 0) != 0 : ::dup2(setup_fd, 3) != 3) ::_exit(125);
    ::syscall(SYS_close_range, 4U, ~0U, 0U);
    ::execve(exe.c_str(), const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    ::_exit(127);
  }
  ::close(ready[1]);
  ::close(go[0]);
  if (pid < 0) {
    err = std::string("clone3: ") + std::strerror(errno);
    ::close(ready[0]);
    ::close(go[1]);
    return false;
  }
  char c = 0;
  bool ok = ::read(ready[0], &c, 1) == 1;
  if (!ok) err = "the worker died before its id maps";
  const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  ok = ok && write_proc(static_cast<pid_t>(pid), "setgroups", "deny", err) &&
       write_proc(static_cast<pid_t>(pid), "uid_map", "0 " + uid + " 1", err) &&
       write_proc(static_cast<pid_t>(pid), "gid_map", "0 " + gid + " 1", err);
  out.pid = static_cast<pid_t>(pid);
  out.pidfd = pidfd;
  out.starttime = process_starttime(out.pid);
  c = 'g';
  ok = ok && ::write(go[1], &c, 1) == 1;
  ::close(ready[0]);
  ::close(go[1]);
  if (!ok) {
    ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
    ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    ::close(pidfd);
    out = {};
    return false;
  }
  return true;
}

}  // namespace shellctl::io::native
