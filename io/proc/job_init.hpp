#pragma once
// PID 1 of a job's PID namespace (the role tini plays in a container). The runner's parent
// starts it; it starts the job's main process and then:
// * forwards the signals the runner sends it (SIGINT, SIGTERM, SIGHUP) to the main
//   process. Signals from the terminal (Ctrl-C, window changes, hangup) already reach the
//   main process, which stays in the pane's foreground process group, so they are not
//   forwarded again: job control and the PTY's foreground group work as without it;
// * reports the main process's wait status once, on `status_fd`;
// * reaps every orphan of the namespace.
// Until the main process ends it dies with the runner (PR_SET_PDEATHSIG), and with it
// every process of the namespace (a terminate, a lost pane). When the main process ends
// and the job has a cgroup of its own (`outlive_runner`), it stops dying with the runner:
// what the job left running that survives the terminal's hangup (a nohup'd or setsid
// daemon, as in the original: a dev server started by one tool call and used by the next)
// keeps running in the namespace, and init with it, reaping, until the last of them ends
// or the server ends the job's cgroup (terminate, delete, retention, lost). Without a
// cgroup nothing could end them later, so they go with the runner as before.
#include <sys/types.h>

#include "io/proc/signals.hpp"

namespace shellctl::io::proc {

// The init loop; never returns. `job` is the main process, already started.
[[noreturn]] void run_init(pid_t job, int status_fd, bool outlive_runner);

}  // namespace shellctl::io::proc
