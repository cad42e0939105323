#pragma once
// scope_actor: one native test scope generation (docs/native-scopes.md "The scope service",
// "The scope worker"), from its creation to its tombstone. It owns the scope's worker — the
// process, its pidfd and its identity — and the scope's cgroup and storage, and answers who may
// reach the worker. Detached (a thread of its own): spawning a worker, waiting for it to be
// ready, checking it and ending its cgroup all wait on the kernel or the worker. Every state is
// committed through native_catalog before it is acted on, with the catalog's CAS: a crash at
// any point leaves a row that says what may exist.
//
// The worker's setup steps, each answering its documented error code when it fails:
//   refs resolved beneath their roots (openat2, no symlinks)   422 *_ref_invalid
//   targets resolved once and pinned (net_address)             422 network_target_denied
//   (the registry then checks capacity: 503)
//   `creating` committed (fencing again, in the catalog's txn)  409 scope_exists / _stale
//   cgroup, host directory, clone3 into them, setup sent, ready 503 scope_setup_failed
//   the identity committed, the broker listening, then `ready`
// With targets the scope owns a net_broker (actors/native/network/net_broker.hpp): started before `ready`
// and after a re-adoption, stopped — every proxied connection closed — before the scope's
// cgroup is killed (S24).
// A failure after `creating` destroys what was made and tombstones the generation
// (`setup_failed`); a failed clean-up leaves the scope `quarantined`.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/native/interfaces.hpp"
#include "io/native/net/net_address.hpp"
#include "io/native/scope/scope_cgroups.hpp"
#include "io/native/worker/worker_setup.hpp"

namespace shellctl::actors {

// What every scope actor of one supervisor shares (read-only after startup).
struct supervisor_settings {
  std::string token;  // T: the bearer, and the key of scope and worker tokens
  std::string state_dir;
  std::string base_root, input_root, image_root;
  std::string exe;  // our own executable, exec'd as `native-worker`
  std::string capability_digest;
  std::optional<io::native::net_endpoint> mediator;  // the one private IP:port allowed
  std::size_t max_scopes = 16;
  std::int64_t max_deadline_s = 24 * 3600;
  std::shared_ptr<io::native::scope_cgroups> cgroups;
  std::chrono::milliseconds destroy_bound{10000};       // DELETE: populated 0 within 10 s
  std::chrono::milliseconds worker_ready_bound{60000};  // a base copy may take a while
  std::chrono::milliseconds worker_call_bound{5000};    // identity and usage calls
  std::chrono::seconds connection_cap{60};              // S22: each proxied connection

  std::string scopes_dir() const { return state_dir + "/native/scopes"; }
};

// The one scope's state (its actor's alone).
struct scope_actor_state {
  io::native::scope_record record;  // as last committed
  io::native::scope_limits limits;
  std::int64_t deadline_epoch = 0;
  int pidfd = -1;              // the worker, while we hold it
  bool worker_is_child = false;  // spawned by this process: we reap it
  std::string control_token;   // the worker's bearer (the worker control token)
  std::string host_dir;        // <state>/native/scopes/<name>: control.sock
  std::string socket_path;
  bool armed_deadline = false;
  // The worker's counters as last read: a lost worker's spool is gone with it, so the view
  // shows what it last said rather than zeros.
  scope_usage last_usage;
  // Between scope_prepare and scope_begin: the worker's setup with the refs' descriptors
  // (closed with the state or once sent) and the network's pins.
  io::native::worker_setup setup;
  std::vector<int> held_fds;
  io::native::scope_network net;
  // The network broker (with targets only) and the write end of its stop pipe.
  caf::actor broker;
  int broker_stop = -1;
  ~scope_actor_state();
};

scope_actor_type::behavior_type scope_actor(scope_actor_type::stateful_pointer<scope_actor_state> self,
                                            std::shared_ptr<const supervisor_settings> cfg,
                                            native_catalog_actor catalog,
                                            scope_registry_actor registry);

}  // namespace shellctl::actors
