#pragma once
// Whether a PTY job waits for its terminal (docs/api.md "Prompts"), read from the kernel's view
// of the job's processes: the pane's foreground process group (the terminal's tpgid) and,
// for each of its members, the system call it sleeps in (/proc/<pid>/syscall; when that is
// not readable, as for a server that may not ptrace the job, the kernel's wait channel).
// A `read -r x`, `input()`, `cat`, a password prompt reading /dev/tty: asleep in a read of
// the terminal. A REPL's select/poll with the terminal as its stdin counts too.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace shellctl::io::proc {

struct terminal_facts {
  bool has_terminal = false;  // the runner's stdin is a terminal (a PTY job's pane)
  // The foreground process the facts are about: one blocked on the terminal if any, else
  // the youngest of the foreground group. Its pid as the job sees it (innermost PID
  // namespace).
  struct process {
    long pid = 0;
    std::string command;  // /proc/<pid>/comm
  };
  std::optional<process> foreground;
  bool blocked_on_terminal = false;
};

// `job` are the job's processes (job_processes()), `runner` its pane's process.
terminal_facts read_terminal_facts(pid_t runner, const std::vector<pid_t>& job);

}  // namespace shellctl::io::proc
