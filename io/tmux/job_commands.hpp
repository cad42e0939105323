#pragma once
// The tmux command lines of a job's life (docs/jobs.md "Starting a job"): its session, its
// output pipe, ^C, pasted input, the pane query of recovery and the session's end. Built with
// io/tmux/command.hpp, so no request data becomes tmux syntax; answers read back here.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/fs/job_dir.hpp"

namespace shellctl::io::tmux {

struct job_session {
  std::string name;  // shellctl-<id>
  std::int64_t cols = 200, rows = 50;
  std::vector<std::pair<std::string, std::string>> env;  // -e: the runner's sandbox policy
  // What the pane runs (the runner). Several words are exec'd by tmux as they are, with no
  // shell in between (one process creation less per job); a single word is a shell command.
  std::vector<std::string> argv;
};

// new-session; it prints "<pane_pid> <window_id>", which tmux_server maps to close events.
std::string new_session_line(const job_session& s);
// The pane's pid from new-session's first output line; nullopt when it printed none.
std::optional<long> pane_pid_of(const std::vector<std::string>& new_session_output);

// A native scope's output budget (io/native/worker/output_budget.hpp): the helper that
// reserves bytes, and the catalog it reserves them in.
struct output_budget {
  std::string helper;
  std::string db;
};

// What the pipe program needs besides the job dir.
struct pipe_settings {
  std::string sanitizer;  // shellctl-sanitize-pty
  std::string end_nonce;  // the runner's end marker (empty: no handshake)
  std::optional<output_budget> budget;  // a native scope's worker only
};
// The program pipe-pane runs (docs/jobs.md "The output pipe", the fast path of issue 15):
// `sh -c` execs the sanitizer, which appends to output.log and writes .pipe-drained or
// .pipe-failed itself. No shellctl-runner-exit: the server records the exit from the artifacts
// it watches, and recovery does so for a job that ended while the server was down (the startup
// retention GC waits for recovery's settles). A sanitizer that dies without a marker is seen by
// the server as the close of output.log (IN_CLOSE_WRITE).
std::string pipe_program(const fs::job_dir& dir, const std::string& output_log,
                         const pipe_settings& s);
// pipe-pane, then display-message printing #{pane_pipe}.
std::vector<std::string> attach_pipe_lines(const std::string& pane, const std::string& program);
// The display-message answer of attach_pipe_lines says the pipe is active.
bool pipe_active(const std::vector<std::string>& display_output);

std::string kill_session_line(const std::string& session);
std::string interrupt_line(const std::string& pane);  // send-keys C-c
std::string eof_line(const std::string& pane);        // send-keys C-d: the terminal's EOF
// resize-window to cols x rows (docs/api.md "Job control"): the window's size becomes manual, so
// no client's size changes it back; the pane's program gets SIGWINCH.
std::string resize_line(const std::string& pane, int cols, int rows);
// display-message of the pane's size, and its reading ("cols rows"); nullopt if unreadable.
std::string pane_size_line(const std::string& pane);
std::optional<std::pair<long, long>> read_pane_size(const std::vector<std::string>& out);
// load-buffer from `file`, paste-buffer into the pane, delete-buffer.
std::vector<std::string> paste_lines(const std::string& buffer, const std::string& file,
                                     const std::string& pane);

// Recovery: "<pane_pid> <pane_pipe>" of a pane.
std::string pane_query_line(const std::string& pane);
struct pane_facts {
  long pid = 0;
  bool pipe_active = false;
};
pane_facts read_pane_query(const std::vector<std::string>& output);

}  // namespace shellctl::io::tmux
