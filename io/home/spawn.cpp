#include "io/home/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/proc/signals.hpp"

namespace shellctl::io::home {
namespace {

// `fd` moved to 3 or above, so that placing the child's 0 and 1 never overwrites it.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

}  // namespace

bool start_helper(const std::string& binary, const std::vector<std::string>& args, data_pipe pipe,
                  helper_process& out, std::string& err) {
  int ctl[2] = {-1, -1};
  int dat[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
    err = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  if (pipe != data_pipe::none && ::pipe2(dat, O_CLOEXEC) != 0) {
    err = std::string("pipe: ") + std::strerror(errno);
    close_all({ctl[0], ctl[1]});
    return false;
  }
  // An archive crosses this pipe: 1 MiB instead of 64 KiB takes a sixteenth of the wake-ups
  // (best effort: a smaller fs.pipe-max-size keeps the default).
  if (pipe != data_pipe::none) ::fcntl(dat[0], F_SETPIPE_SZ, 1 << 20);
  int child_data = pipe == data_pipe::from_helper ? dat[1] : pipe == data_pipe::to_helper ? dat[0] : -1;
  int server_data = pipe == data_pipe::from_helper ? dat[0] : pipe == data_pipe::to_helper ? dat[1] : -1;
  if (pipe == data_pipe::none) child_data = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  int child_ctl = above_stdio(ctl[1]);
  child_data = above_stdio(child_data);
  if (child_ctl < 0 || child_data < 0) {
    err = std::string("descriptors: ") + std::strerror(errno);
    close_all({ctl[0], child_ctl, child_data, server_data});
    return false;
  }
  // Everything the child needs is made before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argv_s;
  argv_s.push_back(binary);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);  // a Ctrl-C aimed at the server's terminal is the server's to handle
    proc::reset_signals();
    if (::dup2(child_ctl, 0) < 0 || ::dup2(child_data, 1) < 0) ::_exit(127);
    ::execve(binary.c_str(), argv.data(), envp);
    ::_exit(127);
  }
  const int fork_errno = errno;
  close_all({child_ctl, child_data});
  if (pid < 0) {
    err = std::string("fork: ") + std::strerror(fork_errno);
    close_all({ctl[0], server_data});
    return false;
  }
  out.pid = pid;
  out.control = ctl[0];
  out.data = server_data;
  return true;
}

void kill_helper(const helper_process& p) {
  if (p.pid > 0) ::kill(p.pid, SIGKILL);
}

int reap_helper(helper_process& p) {
  close_all({p.control, p.data});
  p.control = p.data = -1;
  if (p.pid <= 0) return -1;
  int status = 0;
  while (::waitpid(p.pid, &status, 0) < 0) {
    if (errno != EINTR) {
      status = -1;
      break;
    }
  }
  p.pid = -1;
  return status;
}

std::string describe_status(int status) {
  if (status == -1) return "not started";
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

}  // namespace shellctl::io::home
