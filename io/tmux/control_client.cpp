#include "io/tmux/control_client.hpp"

#include "io/proc/job_processes.hpp"

#include "io/tmux/control_parser.hpp"

#include "io/fs/files.hpp"
#include "io/proc/signals.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace shellctl::io::tmux {

control_client::control_client(const std::string& socket, const std::vector<std::string>& env,
                               line_sink lines, exit_sink on_exit)
    : lines_(std::move(lines)), on_exit_(std::move(on_exit)) {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) < 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out_pipe, O_CLOEXEC) < 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> args = {"tmux", "-S", socket, "-f", "/dev/null", "-C",
                                   "new-session", "-A", "-s", control_session,
                                   "-x", "80", "-y", "24",
                                   // An idle pane that never prints: output in the
                                   // attached session would become %output noise.
                                   "exec sleep 2147483647"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_copy = env;
  std::vector<char*> envp;
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);
  // fork + exec by hand instead of posix_spawn, for PR_SET_PDEATHSIG: if shellctl dies
  // (even by SIGKILL) its control client must die too, or the tmux server keeps a client
  // nobody reads and can no longer exit. The tmux server the client may fork is not
  // affected: a fork clears the death signal. Only async-signal-safe calls in the child.
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);  // a Ctrl-C aimed at the server's terminal must not hit tmux
    // The tmux server (and through it every job) must not inherit what we ignore (SIGPIPE,
    // and SIGHUP under nohup) or block.
    proc::reset_signals();
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::execvpe("tmux", argv.data(), envp.data());
    ::_exit(127);
  }
  int spawn_errno = errno;
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (pid < 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    throw std::runtime_error(std::string("spawn tmux: ") + std::strerror(spawn_errno));
  }
  pid_ = pid;
  in_fd_ = in_pipe[1];
  out_fd_ = out_pipe[0];
  reader_ = std::thread([this] { read_loop(); });
}

control_client::~control_client() {
  // Closing stdin detaches the control client; the tmux server and its sessions (the
  // jobs) keep running, as they must across a shellctl restart.
  if (in_fd_ >= 0) ::close(in_fd_);
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) ::close(out_fd_);
  if (pid_ > 0) {
    int st;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

bool control_client::send(const std::string& line) {
  std::string buf = line;
  buf += '\n';
  return fs::write_all(in_fd_, buf.data(), buf.size());
}

void control_client::read_loop() {
  line_splitter splitter;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    auto lines = splitter.feed(std::string_view(buf, static_cast<size_t>(n)));
    if (!lines.empty()) lines_(std::move(lines));
  }
  on_exit_();
}

bool is_target_missing(const std::string& error_text) {
  std::string lower = error_text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* needle : {"can't find pane", "can't find session", "no server running",
                             "failed to connect", "server exited unexpectedly"})
    if (lower.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace shellctl::io::tmux

namespace shellctl::io::tmux {
using proc::cmdline_of;

void kill_pane_process_group(long pane_pid, const std::string& owner) {
  if (pane_pid <= 1) return;
  auto cmdline = cmdline_of(pane_pid);
  if (cmdline && cmdline->find(owner) == std::string::npos) return;  // someone else's pid now
  ::kill(-static_cast<pid_t>(pane_pid), SIGKILL);
}

void kill_process_groups_naming(const std::string& owner) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return;
  std::vector<pid_t> groups;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 1 || *end || pid == ::getpid()) continue;
    auto cmdline = cmdline_of(pid);
    // The owner followed by a space: a job dir, not a longer path that starts with it.
    if (cmdline && (cmdline->find(owner + " ") != std::string::npos)) {
      pid_t pgid = ::getpgid(static_cast<pid_t>(pid));
      if (pgid > 1 && pgid != ::getpgrp()) groups.push_back(pgid);
    }
  }
  ::closedir(proc);
  for (pid_t g : groups) ::kill(-g, SIGKILL);
}

void kill_processes_naming(const std::string& text) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 1 || *end || pid == ::getpid()) continue;
    auto cmdline = cmdline_of(pid);
    if (cmdline && cmdline->find(text) != std::string::npos)
      ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  ::closedir(proc);
}
}  // namespace shellctl::io::tmux
