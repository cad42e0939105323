#pragma once
// `shellctl native-worker --setup-fd N` (docs/native-scopes.md "The scope worker"): a native
// scope's worker, PID 1 of the scope's user, mount, PID and network namespaces, started by its
// supervisor. It reads its setup (io/native/worker/worker_setup.hpp), leaves the supervisor's
// session, brings its loopback up, mounts its storage under /run/dify-native
// (io/native/scope/scope_storage.hpp: the spool, the payload with Home copied from the base), binds
// the inputs read-only at /run/dify-native/inputs and the scope's host directory at
// /run/dify-native/host (its control socket), records its identity and budgets in the spool's
// catalog, and then is the ordinary job server (actors/wiring/serve.hpp in worker mode): the
// ordinary job routes on the control socket for its supervisor's uid and control token alone,
// admission and output charged to the scope's budgets, 1 h retention, every job in the scoped
// sandbox (io/world/scoped_world.hpp) and in its own cgroup below the scope's.
namespace shellctl::actors {

// Returns the process exit code. `argv[0]` is "native-worker".
int native_worker_main(int argc, char** argv);

// `shellctl native-budget --db PATH`: the output copiers' reservations (one per line on
// stdin, the grant on stdout) against a worker's budget (io/native/worker/output_budget.hpp).
int native_budget_main(int argc, char** argv);

}  // namespace shellctl::actors
