#pragma once
// `shellctl serve --native-test-supervisor` (native-scopes.md): the separate instance that
// will serve isolated native test scopes. What exists so far is its startup (§3): every
// check of io/native/host_checks.hpp runs before anything is bound or written; the first
// failure stops it with `shellctl: native test supervisor: <id>: <detail>`, and
// `--native-check` prints every check as JSON and changes nothing. The scope service
// itself (registry, scope actors, workers) is not built yet: a host that passes every check
// is told so and the supervisor exits 1 rather than pretend to serve.
#include "io/config/serve_config.hpp"

namespace shellctl::actors {

// Returns the process exit code.
int serve_native(const io::config::serve_config& cfg);

}  // namespace shellctl::actors
