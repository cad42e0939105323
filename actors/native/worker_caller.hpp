#pragma once
// worker_caller: relays one scoped job request to its scope's worker and the worker's answer,
// unchanged, to the client (docs/native-scopes.md "The scope worker"). One per request,
// detached: the exchange blocks for as long as the route's long-poll, and one scope's slow wait
// must not hold another request back. A worker that cannot be reached is answered 502
// scope_worker_unreachable, and its scope_actor is told to check the worker (a dead one makes
// the scope `lost`).
#include "actors/native/interfaces.hpp"

namespace shellctl::actors {

worker_caller_actor::behavior_type worker_caller(worker_caller_actor::pointer self);

}  // namespace shellctl::actors
