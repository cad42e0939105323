#pragma once
// One long-lived tmux control-mode client (`tmux -C`), so that a tmux command costs a
// line on a pipe instead of a fork/exec. The client is attached to a dedicated idle
// session (`shellctl-control`) that also keeps the tmux server alive.
//
// Protocol (tmux(1) CONTROL MODE): each command line gets one output block
// `%begin <time> <n> <flags>` ... `%end|%error <time> <n> <flags>`; notifications such as
// `%sessions-changed` appear only between blocks. The reader thread only splits stdout
// into lines and hands them to `sink` (the tmux_server actor parses them); writes come
// from the owner's thread. Nothing else is shared.
#include <sys/types.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace shellctl::io::tmux {

inline constexpr const char* control_session = "shellctl-control";

class control_client {
 public:
  using line_sink = std::function<void(std::vector<std::string> lines)>;
  using exit_sink = std::function<void()>;

  // Starts `tmux -S <socket> -f /dev/null -C new-session -A -s shellctl-control ...`
  // with exactly `env` as environment (the tmux server inherits it when this starts it).
  // Throws std::runtime_error when tmux cannot be spawned.
  control_client(const std::string& socket, const std::vector<std::string>& env,
                 line_sink lines, exit_sink on_exit);
  ~control_client();
  control_client(const control_client&) = delete;
  control_client& operator=(const control_client&) = delete;

  // Writes one command line (a '\n' is appended). False when the client is gone.
  bool send(const std::string& line);

 private:
  void read_loop();
  pid_t pid_ = -1;
  int in_fd_ = -1;   // our end of tmux's stdin
  int out_fd_ = -1;  // our end of tmux's stdout
  line_sink lines_;
  exit_sink on_exit_;
  std::thread reader_;
};

// Does tmux's error text mean "the target is missing" (can't find pane or session, no server)?
bool is_target_missing(const std::string& error_text);

}  // namespace shellctl::io::tmux

namespace shellctl::io::tmux {
// SIGKILLs the process group a pane's process leads (tmux makes each pane's process a
// session and group leader; the runner and the script stay in that group). Best effort.
// If the leader still lives, its command line must contain `owner` (the job dir): a pid
// can be reused. A dead leader's pid is never reused while its group has members.
void kill_pane_process_group(long pane_pid, const std::string& owner);
// When the pane's pid is unknown (the session vanished while shellctl was down): kill the
// process groups of processes whose command line names `owner` (the runner's does).
void kill_process_groups_naming(const std::string& owner);
// SIGKILLs each process (not its group) whose command line contains `text`: the pipe
// finalizer of a pane whose tmux server died lives on in that server's old group.
void kill_processes_naming(const std::string& text);
}  // namespace shellctl::io::tmux
