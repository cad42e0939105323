#include "io/proc/gate_latch.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace shellctl::io::proc::gate_latch {

namespace {
// One per process (the child is single-threaded): the latch, the held buffer and the real
// stderr. -1: none.
int latch_fd = -1;
int held_fd = -1;
int real_stderr = -1;
bool passed = false;
constexpr char kWord = 'g';

void give_stderr_back(bool with_held) {
  if (real_stderr < 0) return;
  if (with_held && held_fd >= 0) {
    char buf[4096];
    off_t at = 0;
    for (;;) {
      const ssize_t n = ::pread(held_fd, buf, sizeof buf, at);
      if (n <= 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(real_stderr, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += w;
      }
      at += n;
    }
  }
  ::dup2(real_stderr, STDERR_FILENO);
  ::close(real_stderr);
  real_stderr = -1;
  if (held_fd >= 0) ::close(held_fd);
  held_fd = -1;
}
}  // namespace

void enter(int fd) {
  latch_fd = fd;
  passed = false;
  held_fd = ::memfd_create("shellctl-runner-held-stderr", MFD_CLOEXEC);
  if (held_fd < 0) return;  // diagnostics then go straight to stderr: less tidy, not lost
  real_stderr = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (real_stderr < 0 || ::dup2(held_fd, STDERR_FILENO) < 0) {
    if (real_stderr >= 0) ::close(real_stderr);
    real_stderr = -1;
    ::close(held_fd);
    held_fd = -1;
  }
}

bool pass() {
  if (latch_fd < 0 || passed) return true;
  char word = 0;
  ssize_t n;
  do n = ::read(latch_fd, &word, 1);
  while (n < 0 && errno == EINTR);
  ::close(latch_fd);
  latch_fd = -1;
  passed = n == 1 && word == kWord;
  give_stderr_back(passed);
  return passed;
}

int fail(int code) {
  pass();  // whether or not the gate opened, the setup failed: the code is the same
  return code;
}

void hand_over() {
  if (latch_fd >= 0) ::close(latch_fd);
  latch_fd = -1;
  passed = true;  // nothing of PID 1's own waits for the gate any more
  if (real_stderr < 0) return;
  ::dup2(real_stderr, STDERR_FILENO);
  ::close(real_stderr);
  real_stderr = -1;
  ::close(held_fd);
  held_fd = -1;
}

bool open(int fd) { return ::send(fd, &kWord, 1, MSG_NOSIGNAL) == 1; }

}  // namespace shellctl::io::proc::gate_latch
