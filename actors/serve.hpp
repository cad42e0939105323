#pragma once
// The composition root of `shellctl serve`: prepares the state directory, opens the
// database, starts the actors, recovers the jobs (D8), starts retention and the HTTP
// front, and on SIGTERM/SIGINT shuts down leaving the jobs running in tmux.
#include "io/config/serve_config.hpp"

namespace shellctl::actors {

// Returns the process exit code.
int serve(const io::config::serve_config& cfg);

}  // namespace shellctl::actors
