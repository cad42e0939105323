#pragma once
// PID 1 of a job's PID namespace (the role tini plays in a container). The runner's parent
// starts it; it starts the job's main process and then:
// * forwards the signals the runner sends it (SIGINT, SIGTERM, SIGHUP) to the main
//   process. Signals from the terminal (Ctrl-C, window changes, hangup) already reach the
//   main process, which stays in the pane's foreground process group, so they are not
//   forwarded again: job control and the PTY's foreground group work as without it;
// * reports the main process's wait status once, on `status_fd`;
// * reaps every orphan of the namespace.
// It dies with the runner (PR_SET_PDEATHSIG), and with it every process left in the
// namespace: setsid/nohup daemons and SIGHUP-ignoring children included.
#include <sys/types.h>

#include "io/proc/signals.hpp"

namespace shellctl::io::proc {

// The init loop; never returns. `job` is the main process, already started.
[[noreturn]] void run_init(pid_t job, int status_fd);

}  // namespace shellctl::io::proc
