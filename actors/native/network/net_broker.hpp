#pragma once
// net_broker: one scope generation's network broker
// (docs/native-scopes.md "The network broker", S21-S24), in the supervisor. It listens on
// broker.sock in the scope's host directory — a directory only the scope's worker has bound
// (never a job's root, S14) — and admits a connection only from the worker process itself: the
// kernel's SO_PEERCRED must name the worker's PID (in our PID namespace) and the dedicated UID.
// Each admitted connection becomes a broker_link; at most four live at once (a fifth is
// answered `ERR connection_cap`). The broker and its links end when the stop descriptor hangs
// up (the scope actor closes its write end when the scope is destroyed or the supervisor
// stops): links close both their sockets at once, the broker waits for every link, removes its
// socket and quits. Blocking (detached): accept and poll.
#include <sys/types.h>

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/native/interfaces.hpp"
#include "io/native/net/net_address.hpp"

namespace shellctl::actors {

struct broker_settings {
  std::string scope_id;
  std::string socket_path;  // <state>/native/scopes/<id>.g<gen>/broker.sock
  pid_t worker_pid = 0;
  uid_t worker_uid = 0;
  std::vector<io::native::pinned_target> pins;  // by target index
  std::size_t max_concurrent = 4;
  std::chrono::seconds connection_cap{60};
  std::chrono::milliseconds dial_bound{5000};     // per pinned address
  std::chrono::milliseconds request_bound{5000};  // the DIAL line
};

// `listen_fd` (from io::native::listen_unix) and `stop_fd` (a pipe's read end) become the
// broker's: it closes them when it ends.
void net_broker(caf::blocking_actor* self, std::shared_ptr<const broker_settings> cfg, int listen_fd,
                int stop_fd, native_catalog_actor catalog);

}  // namespace shellctl::actors
