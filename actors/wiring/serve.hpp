#pragma once
// The composition root of `shellctl serve`: prepares the state directory, opens the
// database, starts the actors, recovers the jobs (D8), starts retention and the HTTP
// front, and on SIGTERM/SIGINT shuts down leaving the jobs running in tmux.
#include "io/config/serve_config.hpp"
#include "io/sandbox/namespaces.hpp"

namespace shellctl::actors {

// A helper binary (shellctl-runner, shellctl-sanitize-pty): next to our own executable
// first, then PATH, then the libexec directory `meson install` uses. "" (or, with
// `bare_fallback`, the bare name) when none is found.
std::string find_helper(const std::string& name, bool bare_fallback);

// What jobs will get on this host, asked once before serving: whether the namespaces can be
// made, and then whether a job's world (the server's HOME, the configured policy, the state
// dir masked) can be built in them. main() calls it before the process makes itself
// non-dumpable and before any thread exists.
io::sandbox::namespace_probe probe_job_sandbox(const io::config::serve_config& cfg);

// Returns the process exit code. `probe` is whether jobs can get their namespaces, asked
// by main() before the process made itself non-dumpable (see namespaces_available).
int serve(const io::config::serve_config& cfg, const io::sandbox::namespace_probe& probe);

}  // namespace shellctl::actors
