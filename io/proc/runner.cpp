#include "io/proc/runner.hpp"

#include "io/fs/files.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io/proc/job_env.hpp"
#include "io/text/clock.hpp"

extern char** environ;

namespace shellctl::io::proc {

namespace {

constexpr const char* kGateName = "start-gate";
constexpr const char* kEnvFileName = ".job-env.json";

std::string errno_text(int e) { return std::strerror(e); }

// Runner-side diagnostics (runtime.md §5: "shellctl-runner: <op>: <err>").
void diag(const std::string& op, const std::string& err) {
  std::fprintf(stderr, "shellctl-runner: %s: %s\n", op.c_str(), err.c_str());
  std::fflush(stderr);
}

// Child-side diagnostics (runtime.md §4.2: "shellctl: <context>: <error>").
void child_diag(const std::string& context, const std::string& err) {
  std::fprintf(stderr, "shellctl: %s: %s\n", context.c_str(), err.c_str());
  std::fflush(stderr);
}

using io::fs::write_all;
std::string join_path(const std::string& dir, const std::string& name) {
  return io::fs::join(dir, name);
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return path;
  return join_path(buf, path);
}

std::string dirname_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Reads a whole file; ENOENT is reported through `missing`.
bool read_file(const std::string& path, std::string& out, bool& missing, std::string& err) {
  missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    missing = errno == ENOENT;
    err = errno_text(errno);
    return false;
  }
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      err = errno_text(errno);
      ::close(fd);
      return false;
    }
    if (r == 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  return true;
}

// mkdir -p with 0700 for every directory it creates (like Go's os.MkdirAll(path, 0700)).
bool mkdir_all(const std::string& path, std::string& err) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    err = "not a directory";
    return false;
  }
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      err = errno_text(errno);
      return false;
    }
  }
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    err = "not a directory";
    return false;
  }
  return true;
}

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

class child_process {
 public:
  child_process(const parent_options& opts, std::vector<std::string> env)
      : opts_(opts), env_(std::move(env)) {}

  // Starts the child and waits for it (and, in stdio mode, for EOF on both streams).
  // Returns the code for the artifacts.
  int run(int out_file, int err_file) {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
      diag("readlink /proc/self/exe", errno_text(errno));
      return kExitSetupFailed;
    }
    self[n] = '\0';
    std::vector<std::string> argv{self, "--exec"};
    argv.insert(argv.end(), opts_.child_flags.begin(), opts_.child_flags.end());
    argv.push_back("--");
    argv.push_back(join_path(absolute(opts_.job_dir), "script"));
    argv.push_back(opts_.cwd);
    auto c_argv = c_strings(argv);
    auto c_env = c_strings(env_);

    const bool stdio = opts_.mode == job_mode::stdio;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, dev_null = -1;
    if (stdio) {
      dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (dev_null < 0) {
        diag("open /dev/null", errno_text(errno));
        return kExitSetupFailed;
      }
      if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        diag("pipe", errno_text(errno));
        return kExitSetupFailed;
      }
    }

    // Signals are taken through a signalfd so that forwarding and child exit share one
    // poll loop with the stream copies; the child gets the original mask back.
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
    ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
    const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
      diag("signalfd", errno_text(errno));
      return kExitSetupFailed;
    }

    const pid_t pid = ::fork();
    if (pid < 0) {
      diag("fork", errno_text(errno));
      return kExitSetupFailed;
    }
    if (pid == 0) {
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      if (stdio) {
        if (::dup2(dev_null, STDIN_FILENO) < 0 || ::dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
            ::dup2(err_pipe[1], STDERR_FILENO) < 0)
          ::_exit(kExitSetupFailed);
      }
      if (opts_.child_role) {
        // The job's environment replaces ours; the child role execs the script with it.
        environ = c_env.data();
        ::_exit(opts_.child_role(join_path(absolute(opts_.job_dir), "script"), opts_.cwd));
      }
      ::execve(self, c_argv.data(), c_env.data());
      const std::string msg =
          std::string("shellctl-runner: start child: ") + errno_text(errno) + "\n";
      write_all(STDERR_FILENO, msg.data(), msg.size());
      ::_exit(kExitSetupFailed);
    }

    capture streams[2] = {{"stdout", out_pipe[0], out_file}, {"stderr", err_pipe[0], err_file}};
    if (stdio) {
      ::close(dev_null);
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
    }
    bool capture_failed = false;
    bool reaped = false;
    int status = 0;
    std::string buf(64 * 1024, '\0');
    while (!reaped || streams[0].pipe_fd >= 0 || streams[1].pipe_fd >= 0) {
      pollfd fds[3];
      nfds_t nfds = 0;
      fds[nfds++] = {sfd, POLLIN, 0};
      int slot[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        if (streams[k].pipe_fd < 0) continue;
        slot[k] = static_cast<int>(nfds);
        fds[nfds++] = {streams[k].pipe_fd, POLLIN, 0};
      }
      if (::poll(fds, nfds, -1) < 0) {
        if (errno == EINTR) continue;
        diag("poll", errno_text(errno));
        capture_failed = true;
        break;  // unreachable in practice; the child is still reaped below
      }
      if (fds[0].revents != 0) handle_signals(sfd, pid, reaped, status);
      for (int k = 0; k < 2; ++k) {
        if (slot[k] < 0 || fds[slot[k]].revents == 0) continue;
        if (!copy_once(streams[k], buf)) capture_failed = true;
      }
    }
    if (!reaped) {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    for (auto& s : streams)
      if (s.pipe_fd >= 0) ::close(s.pipe_fd);
    ::close(sfd);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    const int code = exit_code_of(status);
    return capture_failed ? kExitSetupFailed : code;
  }

 private:
  const parent_options& opts_;
  std::vector<std::string> env_;

  static void handle_signals(int sfd, pid_t pid, bool& reaped, int& status) {
    signalfd_siginfo si{};
    while (::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGCHLD) {
        if (!reaped && ::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
      } else if (!reaped) {
        ::kill(pid, static_cast<int>(si.ssi_signo));
      }
    }
  }

  // One read from the pipe; false on a capture error. Closes the pipe at EOF or error.
  static bool copy_once(capture& s, std::string& buf) {
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
    if (!write_all(s.file_fd, buf.data(), static_cast<std::size_t>(r))) {
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

// Everything between the start gate and the artifacts; returns the code to publish.
int run_job(const parent_options& opts) {
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
  if (opts.mode == job_mode::stdio) {
    std::string err;
    out_file = open_log(join_path(opts.job_dir, "output.log"), err);
    if (out_file < 0) {
      diag("open output.log", err);
      return kExitSetupFailed;
    }
    err_file = open_log(join_path(opts.job_dir, "stderr.log"), err);
    if (err_file < 0) {
      diag("open stderr.log", err);
      close_logs();
      return kExitSetupFailed;
    }
    // Nobody reads the pane in stdio mode: the runner's own diagnostics go to stderr.log
    // too, so a setup failure leaves a trace next to the job's output.
    ::dup2(err_file, STDERR_FILENO);
  }

  std::string text, err;
  bool missing = false;
  env_pairs overlay;
  const std::string env_path = join_path(opts.job_dir, kEnvFileName);
  if (read_file(env_path, text, missing, err)) {
    auto parsed = parse_env_json(text, err);
    if (!parsed) {
      diag("parse " + env_path, err);
      close_logs();
      return kExitSetupFailed;
    }
    overlay = std::move(*parsed);
  } else if (!missing) {
    diag("read " + env_path, err);
    close_logs();
    return kExitSetupFailed;
  }

  child_process child(opts, build_job_env(current_environ(), overlay, opts.cwd));
  int code = child.run(out_file, err_file);
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
  const int fd = ::inotify_init1(IN_CLOEXEC);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
      return poll_for_start_gate(job_dir, gate, err);
    err = "inotify_init1: " + errno_text(errno);
    return false;
  }
  // Watch first, then look: a gate created in between is seen either way.
  if (::inotify_add_watch(fd, job_dir.c_str(),
                          IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) <
      0) {
    const int e = errno;
    ::close(fd);
    if (e == ENOSPC || e == ENOMEM) return poll_for_start_gate(job_dir, gate, err);
    err = "watch " + job_dir + ": " + errno_text(e);
    return false;
  }
  alignas(inotify_event) char buf[4096];
  for (;;) {
    if (::access(gate.c_str(), F_OK) == 0) {
      ::close(fd);
      return true;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = "read inotify: " + errno_text(errno);
      ::close(fd);
      return false;
    }
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
        // The job directory is gone (job deleted): the gate can never appear.
        err = "job directory " + job_dir + " disappeared before the start gate";
        ::close(fd);
        return false;
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

bool write_file_atomic(const std::string& path, const std::string& value, std::string& err) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    err = errno_text(errno);
    return false;
  }
  const std::string content = value + "\n";
  bool ok = ::fchmod(fd, 0644) == 0 && write_all(fd, content.data(), content.size());
  if (!ok) err = errno_text(errno);
  if (::close(fd) != 0 && ok) {
    err = errno_text(errno);
    ok = false;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno_text(errno);
    ok = false;
  }
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

int run_parent(const parent_options& opts) {
  std::string err;
  int code;
  if (!wait_for_start_gate(opts.job_dir, err)) {
    diag("start gate", err);
    code = kExitSetupFailed;
  } else {
    code = run_job(opts);
  }
  // Exit code first, then the end time: a reader that sees runner-ended-at can rely on
  // runner-exit-code being there already.
  const std::pair<const char*, std::string> artifacts[] = {
      {"runner-exit-code", std::to_string(code)},
      {"runner-ended-at", text::utc_now()},
  };
  for (const auto& [name, value] : artifacts) {
    if (!write_file_atomic(join_path(opts.job_dir, name), value, err))
      diag(std::string("write ") + name, err);
  }
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

int run_child(const std::string& script, const std::string& cwd, const sandbox_hook& sandbox) {
  if (::chdir(cwd.c_str()) != 0) {
    child_diag("chdir " + cwd, errno_text(errno));
    return kExitChdirFailed;
  }
  const char* home_env = std::getenv("HOME");
  const std::string home = home_env != nullptr ? home_env : "";
  if (home.empty()) {
    if (sandbox) {
      std::fprintf(stderr,
                   "shellctl-runner: landlock: HOME is empty; refusing to run the job "
                   "without its home directory\n");
      return kExitSetupFailed;
    }
  } else {
    std::string err;
    if (!mkdir_all(home, err)) {
      child_diag("create HOME " + home, err);
      return kExitSetupFailed;
    }
  }

  std::vector<std::string> argv;
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
      argv = {script};
    } else {
      argv = {"sh", script};
    }
  }
  std::string resolved;
  if (!look_path(argv[0], resolved)) {
    child_diag("exec: \"" + argv[0] + "\"", "executable file not found in $PATH");
    return kExitNotFound;
  }

  if (sandbox) {
    char buf[PATH_MAX];
    const std::string abs_cwd = ::getcwd(buf, sizeof buf) != nullptr ? buf : cwd;
    const child_context ctx{home, abs_cwd, dirname_of(absolute(script))};
    std::string err;
    if (!sandbox(ctx, err)) {
      std::fprintf(stderr, "shellctl-runner: landlock: %s\n", err.c_str());
      return kExitSetupFailed;
    }
  }

  auto c_argv = c_strings(argv);
  ::execve(resolved.c_str(), c_argv.data(), environ);
  child_diag("exec " + resolved, errno_text(errno));
  return kExitExecFailed;
}

}  // namespace shellctl::io::proc
