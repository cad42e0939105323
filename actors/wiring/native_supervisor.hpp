#pragma once
// `shellctl serve --native-test-supervisor` (docs/native-scopes.md "The scope service"): the
// separate instance that serves isolated native test scopes. Its startup: every check of
// io/native/host_checks.hpp runs before anything is bound or written; the first failure
// stops it with `shellctl: native test supervisor: <id>: <detail>`, and `--native-check`
// prints every check as JSON and changes nothing. Then the catalog, the actors
// (native_catalog, scope_registry, one scope_actor per scope, native_edge), the reattach
// of retained scopes (docs/native-scopes.md "The scope worker") and the HTTP front.
#include <memory>
#include <string>

#include "actors/native/scope_actor.hpp"
#include "io/config/serve_config.hpp"
#include "io/native/host_checks.hpp"

namespace shellctl::actors {

// Returns the process exit code.
int serve_native(const io::config::serve_config& cfg);

// What the checks are given, and the settings every scope shares, from the configuration
// and the checks' findings (the capability digest).
io::native::supervisor_setup supervisor_setup_of(const io::config::serve_config& cfg);
supervisor_settings settings_of(const io::config::serve_config& cfg, const io::native::check_report& report);

// The scope service once the checks passed: shared by serve_native (delegated cgroups) and
// the component tests' harness (tests/native/harness, with its group_only cgroups).
// `capabilities` is the canonical capability JSON (io/native/host_checks.hpp).
int run_supervisor(const io::config::serve_config& cfg, std::shared_ptr<supervisor_settings> s,
                   const std::string& capabilities);

}  // namespace shellctl::actors
