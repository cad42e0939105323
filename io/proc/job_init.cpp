#include "io/proc/job_init.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::proc {

[[noreturn]] void run_init(pid_t job, int status_fd, bool outlive_runner) {
  // Nothing of the runner's stays open here but the report channel.
  if (status_fd > 3) ::close_range(3, static_cast<unsigned>(status_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(status_fd) + 1, ~0U, 0);
  sigset_t all;
  sigfillset(&all);
  const int sfd = ::signalfd(-1, &all, SFD_CLOEXEC);
  // PID 1 holds none of the job's streams: a stdio job ends when its own processes close
  // them, not when init does.
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0)
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null_fd, fd);
  bool job_alive = true;
  // The main process's status, once. First, when the job has a cgroup, init stops dying
  // with the runner: the runner exits once it has read this, and what is left of the job
  // lives on (see job_init.hpp).
  auto report = [&](int status) {
    if (outlive_runner) ::prctl(PR_SET_PDEATHSIG, 0);
    (void)!::write(status_fd, &status, sizeof status);
    ::close(status_fd);
  };
  for (;;) {
    signalfd_siginfo si{};
    if (sfd < 0 || ::read(sfd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) {
      if (sfd >= 0 && errno == EINTR) continue;
      // No signalfd: fall back to plain waiting (nothing is forwarded then).
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (pid == job && job_alive) {
        job_alive = false;
        report(status);
      }
      if (pid < 0 && errno == ECHILD) ::_exit(0);
      continue;
    }
    if (si.ssi_signo == SIGCHLD) {
      for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid == 0) break;
        if (pid < 0) {
          if (errno == EINTR) continue;
          if (!job_alive) ::_exit(0);  // nothing of the job is left
          break;
        }
        if (pid == job && job_alive) {
          job_alive = false;
          report(status);
        }
      }
      continue;
    }
    // Sent by a process (the runner forwarding), not by the kernel for the terminal.
    if (job_alive && si.ssi_code <= 0) ::kill(job, static_cast<int>(si.ssi_signo));
  }
}

}  // namespace shellctl::io::proc
