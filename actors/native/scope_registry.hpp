#pragma once
// scope_registry: which native test scopes are live, each with its generation and its
// scope_actor (docs/native-scopes.md "The scope service"). Creation never replaces a scope:
// an id with any live record, even lost or quarantined, is 409 scope_exists, and a
// tombstoned generation at or above the request is 409 scope_generation_stale; the id is
// held from the first check on, so two creations of one id cannot both pass. Requests
// about a scope are checked in the documented order — scope (404 scope_not_found, 410
// scope_destroyed for a tombstone of the sent generation), then generation (400/409) — and
// handed to its scope_actor, which checks the token and the state.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "actors/native/interfaces.hpp"
#include "actors/native/scope_actor.hpp"

namespace shellctl::actors {

struct scope_registry_state {
  struct entry {
    std::uint64_t generation = 0;
    scope_actor_type actor;  // null while the creation's checks run
    io::native::scope_limits limits;
  };
  std::map<std::string, entry> scopes;
};

scope_registry_actor::behavior_type scope_registry(
    scope_registry_actor::stateful_pointer<scope_registry_state> self,
    std::shared_ptr<const supervisor_settings> cfg, native_catalog_actor catalog);

}  // namespace shellctl::actors
