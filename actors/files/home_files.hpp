#pragma once
// home_files: owns the confined file worker, the one process that performs the file API's
// operations on the server's Home and granted trees (shellctl-home files,
// io/home/helper.hpp). The server never touches those trees itself: each file_op asks this
// actor for a channel (a socket pair, one end handed to the worker with the doorbell
// frame) and talks to the worker on it.
//
// Detached: starting the worker (fork, exec, its confinement, the state dir's walk) and
// handing it a channel block, on this actor's own thread. The worker is started when first
// asked for and again when it is found gone (its control socket refuses the doorbell); a
// worker that cannot start is said in the answer (file_io_failed) and tried again at the
// next request. On shutdown it is killed and reaped.
#include <caf/all.hpp>

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/settings.hpp"
#include "io/home/spawn.hpp"

namespace shellctl::actors {

struct home_files_state {
  static inline const char* name = "home_files";
  io::home::helper_process worker;  // pid -1: not running
};

struct home_files_settings {
  std::string home;  // the server's $HOME as given (the file API resolves relative paths there)
  home_helper_settings helper;
};

home_files_actor::behavior_type home_files(
    home_files_actor::stateful_pointer<home_files_state> self, home_files_settings cfg);

}  // namespace shellctl::actors
