#pragma once
// tmux_server: owns the one tmux control-mode client. Serialises command lines, matches
// the %begin/%end blocks to the requests in FIFO order, and turns tmux's window-close
// notifications into `session_gone` notices for the job that owns the session (events
// instead of per-job probes, D12).
// When the tmux server dies the client's stdout closes: every known session is reported
// gone and a new client (and tmux server) is started. From tmux's %exit until the new
// client is up, commands wait here and go to the new server: a command is only ever lost
// with the server it was already sent to.
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/protocol/interfaces.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/control_parser.hpp"

namespace shellctl::actors {

struct tmux_server_state {
  static inline const char* name = "tmux_server";

  struct pending_command {
    std::size_t remaining;  // blocks still expected
    tmux_output out;
    caf::error failure;  // the first failing line's (none: all ran)
    std::string creates_session;
    session_owner owner;  // of creates_session
    std::function<void(tmux_result)> done;
    std::vector<std::string> lines;  // kept only while waiting for a client
  };

  std::string socket;
  std::vector<std::string> env;  // environment for the tmux server (D10)
  std::map<std::string, session_owner> owners;  // session name → the job told of its end
  std::unique_ptr<io::tmux::control_client> client;
  bool accepting = false;  // a client is up and has not announced %exit
  std::uint64_t generation = 0;
  std::deque<pending_command> pending;  // sent, in order
  std::deque<pending_command> waiting;  // not sent yet: no client (restarting)
  int restart_failures = 0;
  io::tmux::control_parser parser;  // the client's lines → blocks and notifications
  // Session tracking. A job session has one window, and tmux announces the end of a
  // window not shown to this client with %unlinked-window-close @id: mapping window ids
  // to sessions makes each session end an O(1) event instead of a listing of all sessions.
  std::set<std::string> known;
  std::map<std::string, std::string> window_session;  // "@12" -> "shellctl-<id>"
  bool list_in_flight = false;
  bool list_again = false;
  std::vector<std::function<void(const caf::expected<session_list>&)>> list_waiters;
  // The last sign of life while commands were owed: a line from tmux, or the moment the
  // first owed command was queued. Its age is tmux's silence (tmux_silence_query).
  std::chrono::steady_clock::time_point last_heard{};
};

tmux_server_actor::behavior_type tmux_server(
    tmux_server_actor::stateful_pointer<tmux_server_state> self, std::string socket,
    std::vector<std::string> env);

}  // namespace shellctl::actors
