#pragma once
// The native test supervisor's actors (docs/native-scopes.md "The scope service") and the typed
// messages between them. Nothing here knows HTTP: the edge (actors/native/native_edge.hpp) turns
// requests into these messages and answers into JSON.
//
//   loop ─native_call→ native_edge ─create/inspect/destroy/scoped_job→ scope_registry
//   scope_registry ─(checks scope and generation)→ scope_actor (one per generation)
//   scope_actor ─catalog_*→ native_catalog (the catalog's only writer)
//   scope_actor ─spawns, stops→ net_broker (one per generation with targets)
//   net_broker ─spawns→ broker_link (one per proxied connection) ─catalog_net_*→ native_catalog
//   native_edge ─(a scoped job: the worker's socket and control token)→ worker_caller
//   worker_caller ─HTTP over the control socket→ the scope's worker (its own process)
#include <caf/all.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/protocol/domain.hpp"
#include "actors/protocol/routes.hpp"
#include "io/http/bridge.hpp"
#include "io/native/scope/catalog.hpp"
#include "io/native/scope/scope_request.hpp"
#include "io/native/worker/worker_budget.hpp"

namespace shellctl::actors {

// ---------------------------------------------------------------- domain errors

// Every refusal of the scope service by its documented code (docs/native-scopes.md "The
// scope service"): a caf::error of the category `native` with the message as its text.
// The edge maps each to its status (native_edge.cpp); the request's own malformations
// (invalid_request, validation_error) are refused at the edge before any actor is asked.
enum class native_errc : std::uint8_t {
  scope_generation_required = 1,  // 400
  scope_token_required,           // 401
  scope_token_invalid,            // 403
  scope_not_found,                // 404
  scope_exists,                   // 409
  scope_generation_stale,         // 409
  scope_generation_mismatch,      // 409
  scope_not_ready,                // 409
  scope_worker_lost,              // 409
  scope_quarantined,              // 409
  scope_destroyed,                // 410
  capability_digest_mismatch,     // 412
  base_snapshot_ref_invalid,      // 422
  input_file_ref_invalid,         // 422
  network_target_denied,          // 422
  scope_cleanup_failed,           // 500
  scope_worker_unreachable,       // 502
  scope_capacity_unavailable,     // 503
  scope_setup_failed,             // 503
  storage_unavailable,            // 503: the catalog cannot be read or written
};
inline constexpr caf::atom_value native_error_category = caf::atom("native");
caf::error make_native_error(native_errc code, std::string message);
bool is_native_error(const caf::error& e, native_errc code);
struct native_error_view {
  native_errc code;
  std::string message;
};
// The code and message of a native error; any other error (CAF's: an actor that is gone)
// as `otherwise` with CAF's rendering.
native_error_view read_native_error(const caf::error& e, native_errc otherwise);
std::string_view native_code_text(native_errc code);
int native_status(native_errc code);

// ---------------------------------------------------------------- domain values

struct scope_usage {
  std::uint64_t input_bytes = 0, output_bytes = 0, jobs_admitted = 0;
  std::uint64_t network_bytes = 0, network_connections = 0;
};

struct scope_transport {
  std::string base_path;    // /v1/test-scopes/<id>
  std::string scope_token;  // fresh on every answer
  std::string expires_at;   // the scope's deadline
};

// What create and inspect answer (the scope's view, docs/native-scopes.md "The scope service").
struct scope_view {
  io::native::scope_record record;
  std::vector<io::native::pinned_target> targets;  // with their pinned addresses
  scope_usage usage;
  std::optional<scope_transport> transport;  // only while ready
};

// Create and inspect's answer. A create that failed is its error; when the failure was its
// setup (scope_setup_failed), the scope's own end tells the registry whether its id is
// free (scope_buried) or still held (quarantined).
struct scope_answer {
  scope_view view;
};

struct scope_gone {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::string reason;  // the tombstone's
};

// Where a scoped job request goes once every check passed.
struct worker_route {
  std::string socket_path;
  std::string control_token;
  caf::actor_addr scope;  // its scope_actor: told when the worker cannot be reached
};

// ---------------------------------------------------------------- the edge's input

struct native_call {
  io::http::request req;
  io::http::responder resp;
};

// ---------------------------------------------------------------- scope_registry

struct create_scope {
  io::native::create_request req;
};
// Inspect, destroy and scoped jobs name the scope and send X-Scope-Generation (as sent:
// the registry checks it after the scope, in the documented order of checks).
struct inspect_scope {
  std::string scope_id;
  std::optional<std::string> generation;
};
struct destroy_scope {
  std::string scope_id;
  std::optional<std::string> generation;
};
struct scoped_job {
  std::string scope_id;
  std::optional<std::string> generation;
  std::optional<std::string> token;  // X-Scope-Token
};
// A scope actor's generation is gone (buried): the registry forgets it.
struct scope_buried {
  std::string scope_id;
  std::uint64_t generation = 0;
};
// At startup: every retained scope is adopted (or found lost) before requests are served.
struct adopt_retained {};
struct adopted {
  std::size_t scopes = 0;
};
struct native_shutdown {};

// ---------------------------------------------------------------- scope_actor

// Create, first steps: the refs opened beneath their roots and the targets resolved and
// pinned (both held by the actor for scope_begin). Then the registry checks capacity.
struct scope_prepare {
  io::native::create_request req;
};
struct scope_prepared {};
struct scope_begin {  // create: commit, worker, `ready`; after scope_prepare and the capacity check
  io::native::create_request req;
};
struct scope_adopt {  // a retained row after a restart (reattach)
  io::native::scope_record record;
};
struct scope_inspect {};
struct scope_destroy {
  std::string reason;  // deleted | deadline
};
struct scope_job_access {
  std::optional<std::string> token;
};
struct scope_deadline {};          // internal: the deadline passed
struct scope_worker_unreachable {};  // from the edge: a forward failed; check the worker

// ---------------------------------------------------------------- native_catalog

struct catalog_begin {
  io::native::scope_record record;
  io::native::scope_network net;  // pins and budget, in the same transaction
};
// The catalog's answers; a catalog that failed answers storage_unavailable with SQLite's
// message instead.
struct catalog_begun {
  io::native::create_outcome outcome = io::native::create_outcome::created;
};
struct catalog_record_worker {
  io::native::scope_record record;  // scope_id, generation and the worker's identity
};
struct catalog_transition {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::vector<io::native::scope_state> from;
  io::native::scope_state to = io::native::scope_state::ready;
  std::string reason;
};
struct catalog_bury {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::string reason;
};
struct catalog_done {
  bool changed = false;  // the change was made (a CAS that matched)
};
struct catalog_find {
  std::string scope_id;
};
struct catalog_found {
  std::optional<io::native::scope_record> record;
  std::optional<io::native::tombstone> tomb;
};
struct catalog_retained {};
// The network budget (S22): a connection unit per dial, bytes reserved before each read.
struct catalog_net_dial {
  std::string scope_id;
};
struct catalog_net_reserve {
  std::string scope_id;
  std::uint64_t max = 0;
};
struct catalog_net_grant {
  // dial: network_connections_exhausted | network_bytes_exhausted, the broker's wire word
  std::string refusal;
  std::uint64_t granted = 0;  // dial: 1 when charged; reserve: the bytes
};
struct catalog_net_read {
  std::string scope_id;
};
struct catalog_net_state {
  std::vector<io::native::pinned_target> pins;
  std::optional<io::native::net_usage> budget;
};
struct catalog_rows {
  std::vector<io::native::scope_record> rows;
};

// ---------------------------------------------------------------- worker_caller

struct forward_job {
  native_call call;
  std::string target;  // the ordinary path (and query) the worker serves
  worker_route route;
};

}  // namespace shellctl::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::native_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_gone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::worker_route)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::create_scope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::inspect_scope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::destroy_scope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scoped_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_buried)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::adopt_retained)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::adopted)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::native_shutdown)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_prepare)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_prepared)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_begin)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_adopt)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_inspect)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_destroy)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_job_access)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::scope_worker_unreachable)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_begin)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_begun)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_record_worker)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_transition)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_bury)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_find)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_found)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_retained)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_rows)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_net_dial)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_net_reserve)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_net_grant)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_net_read)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::catalog_net_state)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::forward_job)

namespace shellctl::actors {

using caf::reacts_to;
using caf::replies_to;

// native_catalog: the catalog's one connection (detached: every commit is an fsync).
using native_catalog_actor = caf::typed_actor<
    replies_to<catalog_begin>::with<catalog_begun>,        // fencing + insert in `creating`
    replies_to<catalog_record_worker>::with<catalog_done>,  // the identity, while creating
    replies_to<catalog_transition>::with<catalog_done>,     // a CAS between states
    replies_to<catalog_bury>::with<catalog_done>,           // row gone, generation tombstoned
    replies_to<catalog_find>::with<catalog_found>,
    replies_to<catalog_retained>::with<catalog_rows>,
    replies_to<catalog_net_dial>::with<catalog_net_grant>,     // one connection unit
    replies_to<catalog_net_reserve>::with<catalog_net_grant>,  // bytes before a read
    replies_to<catalog_net_read>::with<catalog_net_state>,     // pins and counters
    reacts_to<native_shutdown>>;

// scope_actor: one per scope generation; owns its worker (detached: spawning, ending and
// checking a worker wait on the kernel and on the worker).
using scope_actor_type = caf::typed_actor<
    replies_to<scope_prepare>::with<scope_prepared>,
    replies_to<scope_begin>::with<scope_answer>,
    replies_to<scope_adopt>::with<scope_answer>,
    replies_to<scope_inspect>::with<scope_answer>,
    replies_to<scope_destroy>::with<scope_gone>,
    replies_to<scope_job_access>::with<worker_route>,
    reacts_to<scope_deadline>, reacts_to<scope_worker_unreachable>, reacts_to<native_shutdown>>;

// scope_registry: which scope ids are live, with which generation and actor; fencing.
using scope_registry_actor = caf::typed_actor<
    replies_to<create_scope>::with<scope_answer>,
    replies_to<inspect_scope>::with<scope_answer>,
    replies_to<destroy_scope>::with<scope_gone>,
    replies_to<scoped_job>::with<worker_route>,
    replies_to<adopt_retained>::with<adopted>,
    reacts_to<scope_buried>, reacts_to<native_shutdown>>;

// worker_caller: one scoped job request's exchange with its worker (detached: the call
// blocks for as long as the job route's long-poll; one per request).
using worker_caller_actor = caf::typed_actor<reacts_to<forward_job>>;

// native_edge: the supervisor's HTTP edge.
using native_edge_actor = caf::typed_actor<reacts_to<native_call>, reacts_to<native_shutdown>>;

}  // namespace shellctl::actors
