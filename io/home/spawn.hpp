#pragma once
// The server's side of a Home operation's process: shellctl-home (io/home/helper.hpp)
// started with its control socket as fd 0 and its data pipe as fd 1, its stderr the
// server's. The child dies with the thread that started it (PR_SET_PDEATHSIG), and its
// confined process with it; a deadline kills it (kill_helper), so whatever the helper meets
// in Home, the server's thread is free again by then.
//
// Blocking (fork, exec, waitpid): for a detached actor's own thread.
#include <sys/types.h>

#include <string>
#include <vector>

namespace shellctl::io::home {

enum class data_pipe {
  none,         // the file worker: fd 1 is /dev/null
  from_helper,  // save: the helper writes the archive, the server reads `data`
  to_helper,    // restore: the server writes the archive into `data`
};

struct helper_process {
  pid_t pid = -1;
  int control = -1;  // the server's end of the control socket (close-on-exec, blocking)
  int data = -1;     // the server's end of the data pipe, or -1
};

// Starts `binary` with `args` (argv[1..]) and an empty environment. False with `err`.
bool start_helper(const std::string& binary, const std::vector<std::string>& args, data_pipe pipe,
                  helper_process& out, std::string& err);

// SIGKILL (until it is reaped, its pid cannot name anything else).
void kill_helper(const helper_process& p);

// Closes the server's ends and waits for the helper; its wait status (-1 when there is
// none to wait for).
int reap_helper(helper_process& p);

// "exited 3", "killed by signal 9": for messages.
std::string describe_status(int status);

}  // namespace shellctl::io::home
