#include "io/proc/terminal_wait.hpp"

#include "io/proc/proc_file.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace shellctl::io::proc {
namespace {

std::string proc_file(long pid, const char* what) { return read_proc_file(pid, what).value_or(""); }

// The fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [2] pgrp,
// [3] session, [4] tty_nr, [5] tpgid, ..., [19] starttime.
std::vector<std::string> stat_fields(long pid) {
  const std::string text = proc_file(pid, "stat");
  const auto close = text.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream rest(text.substr(close + 1));
  std::string f;
  while (out.size() < 20 && rest >> f) out.push_back(f);
  return out;
}

std::optional<dev_t> char_device_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return std::nullopt;
  return st.st_rdev;
}

// An fd of `pid` that is the job's terminal: the pane's pty itself, or /dev/tty (5:0),
// which a process opens to reach its controlling terminal (a password prompt does).
bool fd_is_terminal(long pid, long fd, dev_t tty) {
  const auto dev = char_device_of("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd));
  return dev && (*dev == tty || *dev == makedev(5, 0));
}

bool stdin_is_terminal(long pid, dev_t tty) { return fd_is_terminal(pid, 0, tty); }

// x86-64 system call numbers: the reads, and the waits a line editor sleeps in.
constexpr long sys_read = 0, sys_pread64 = 17, sys_readv = 19;
constexpr long sys_poll = 7, sys_select = 23, sys_pselect6 = 270, sys_ppoll = 271;

// nullopt: the syscall file is not readable (no ptrace access) or names no syscall.
std::optional<bool> blocked_by_syscall(long pid, dev_t tty) {
  std::istringstream in(proc_file(pid, "syscall"));
  std::string nr_text, arg0_text;
  if (!(in >> nr_text >> arg0_text)) return std::nullopt;  // empty, "running", or unreadable
  char* end = nullptr;
  const long nr = std::strtol(nr_text.c_str(), &end, 10);
  if (*end || nr < 0) return std::nullopt;
#if defined(__x86_64__)
  if (nr == sys_read || nr == sys_pread64 || nr == sys_readv) {
    const long fd = std::strtol(arg0_text.c_str(), nullptr, 16);
    return fd_is_terminal(pid, fd, tty);
  }
  if (nr == sys_poll || nr == sys_select || nr == sys_pselect6 || nr == sys_ppoll)
    return stdin_is_terminal(pid, tty);
  return false;
#else
  (void)tty;
  return std::nullopt;
#endif
}

// Without the syscall: where the kernel has it sleep. A tty read sleeps in wait_woken
// (n_tty_read); poll and select in poll_schedule_timeout / do_select.
bool blocked_by_wait_channel(long pid, dev_t tty) {
  const std::string wchan = proc_file(pid, "wchan");
  if (wchan == "wait_woken" || wchan.rfind("n_tty_read", 0) == 0 || wchan.rfind("poll_schedule_timeout", 0) == 0 ||
      wchan == "do_select" || wchan == "do_sys_poll")
    return stdin_is_terminal(pid, tty);
  return false;
}

// The pid in the innermost PID namespace (the last of NSpid), as the job's own `$$` says.
long pid_as_the_job_sees_it(long pid) {
  std::istringstream in(proc_file(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream ids(line.substr(6));
    long id = pid, last = pid;
    while (ids >> id) last = id;
    return last;
  }
  return pid;
}

std::string command_of(long pid) {
  std::string comm = proc_file(pid, "comm");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  return comm;
}

}  // namespace

terminal_facts read_terminal_facts(pid_t runner, const std::vector<pid_t>& job) {
  terminal_facts facts;
  const auto tty = char_device_of("/proc/" + std::to_string(runner) + "/fd/0");
  if (!tty) return facts;
  facts.has_terminal = true;
  const auto runner_stat = stat_fields(runner);
  if (runner_stat.size() < 6) return facts;
  const long tpgid = std::strtol(runner_stat[5].c_str(), nullptr, 10);
  // The process shown: one blocked on the terminal, else the youngest of the foreground
  // group (what the job runs now: `sleep` rather than the shell that waits for it).
  std::optional<long> youngest, blocked;
  unsigned long long youngest_start = 0;
  for (pid_t pid : job) {
    const auto f = stat_fields(pid);
    if (f.size() < 20 || std::strtol(f[2].c_str(), nullptr, 10) != tpgid) continue;
    const unsigned long long start = std::strtoull(f[19].c_str(), nullptr, 10);
    if (!youngest || start >= youngest_start) {
      youngest = pid;
      youngest_start = start;
    }
    if (blocked || f[0] != "S") continue;
    const auto by_syscall = blocked_by_syscall(pid, *tty);
    if (by_syscall ? *by_syscall : blocked_by_wait_channel(pid, *tty)) blocked = pid;
  }
  const auto chosen = blocked ? blocked : youngest;
  if (chosen) facts.foreground = terminal_facts::process{pid_as_the_job_sees_it(*chosen), command_of(*chosen)};
  facts.blocked_on_terminal = blocked.has_value();
  return facts;
}

}  // namespace shellctl::io::proc
