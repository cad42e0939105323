#pragma once
// The composition root of `shellctl serve`: prepares the state directory, opens the
// database, starts the actors, recovers the jobs (D8), starts retention and the HTTP
// front, and on SIGTERM/SIGINT shuts down leaving the jobs running in tmux.
#include "io/config/serve_config.hpp"
#include "io/sandbox/namespaces.hpp"

namespace shellctl::actors {

// Returns the process exit code. `probe` is whether jobs can get their namespaces, asked
// by main() before the process made itself non-dumpable (see namespaces_available).
int serve(const io::config::serve_config& cfg, const io::sandbox::namespace_probe& probe);

}  // namespace shellctl::actors
