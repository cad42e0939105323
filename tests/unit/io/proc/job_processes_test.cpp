// What is left of a job, and what its terminal's hangup would still race
// (io/proc/job_processes.hpp), on real processes of this test: children that run, sleep,
// ignore, block or catch SIGHUP, that left our process group, and one that exited unreaped.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "io/proc/job_processes.hpp"

namespace proc = shellctl::io::proc;

namespace {

enum class kind { spin, spin_ignoring_hup, spin_blocking_hup, spin_catching_hup, spin_own_group, sleep, exit_now };

void on_hup(int) {}

pid_t child(kind k) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid != 0) return pid;
  // The defaults first: a test run may ignore SIGHUP (CI's stress pass does).
  ::signal(SIGHUP, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  switch (k) {
    case kind::spin_ignoring_hup: ::signal(SIGHUP, SIG_IGN); break;
    case kind::spin_blocking_hup: {
      sigset_t s;
      sigemptyset(&s);
      sigaddset(&s, SIGHUP);
      ::sigprocmask(SIG_BLOCK, &s, nullptr);
      break;
    }
    case kind::spin_catching_hup: ::signal(SIGHUP, on_hup); break;
    case kind::spin_own_group: ::setpgid(0, 0); break;
    case kind::sleep: ::pause(); ::_exit(0);
    case kind::exit_now: ::_exit(0);
    default: break;
  }
  for (volatile unsigned long i = 0;; ++i) {
  }
}

char state_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

// Until the child shows `state` (it was scheduled and got where it goes).
void await_state(pid_t pid, char state) {
  for (int i = 0; i < 5000 && state_of(pid) != state; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(state_of(pid) == state);
}

bool has(const std::vector<pid_t>& v, pid_t p) { return std::find(v.begin(), v.end(), p) != v.end(); }

void end(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) ::kill(p, SIGKILL);
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
}

}  // namespace

TEST_CASE("the hangup waits only for running children of the group that it would end") {
  const pid_t spin = child(kind::spin);
  const pid_t ignoring = child(kind::spin_ignoring_hup);
  const pid_t blocking = child(kind::spin_blocking_hup);
  const pid_t catching = child(kind::spin_catching_hup);
  const pid_t own_group = child(kind::spin_own_group);
  const pid_t sleeping = child(kind::sleep);
  const std::vector<pid_t> all = {spin, ignoring, blocking, catching, own_group, sleeping};
  await_state(sleeping, 'S');
  // The spinners' dispositions are set before they spin; give each a moment to get there.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto unsettled = proc::unsettled_before_hangup(all, ::getpgrp());
  CHECK(has(unsettled, spin));
  CHECK_FALSE(has(unsettled, ignoring));
  CHECK_FALSE(has(unsettled, blocking));
  CHECK_FALSE(has(unsettled, catching));
  CHECK_FALSE(has(unsettled, own_group));
  CHECK_FALSE(has(unsettled, sleeping));
  // A pid that is gone is no one.
  end(all);
  CHECK(proc::unsettled_before_hangup(all, ::getpgrp()).empty());
}

TEST_CASE("what is left: live processes, neither the job's init nor one already exiting") {
  const pid_t sleeping = child(kind::sleep);
  const pid_t zombie = child(kind::exit_now);
  await_state(sleeping, 'S');
  await_state(zombie, 'Z');
  // This process is in our own PID namespace (not PID 1 of one below): it counts.
  const auto left = proc::leftover_processes({sleeping, zombie, ::getpid(), 999999999});
  CHECK(has(left, sleeping));
  CHECK(has(left, ::getpid()));
  CHECK_FALSE(has(left, zombie));
  CHECK(left.size() == 2);
  end({sleeping, zombie});
}
