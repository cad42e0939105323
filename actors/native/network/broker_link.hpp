#pragma once
// broker_link: one proxied connection through a scope's broker
// (docs/native-scopes.md "The network broker"). It reads `DIAL <idx>\n` from the worker,
// charges one connection unit in the catalog (FULL; refused when the units or the bytes are
// spent), dials the target's pinned addresses in order, answers `OK\n` or `ERR <code>\n`, and
// then relays: before each read(2) it reserves min(64 KiB, what is left) of the scope's byte
// budget in the catalog (S22: nothing is refunded; a short read may overcharge), and a spent
// budget closes both sides. It ends at EOF both ways, at the 60 s cap, or when the stop
// descriptor hangs up, and tells its broker (`link_closed`). Blocking (detached): a socket pair
// and the catalog's answers.
#include <caf/all.hpp>

#include <memory>

#include "actors/native/network/link_acceptor.hpp"
#include "actors/native/interfaces.hpp"
#include "actors/native/network/net_broker.hpp"

namespace shellctl::actors {

// Owns `conn_fd` and `stop_fd` (a dup of the broker's).
void broker_link(caf::blocking_actor* self, std::shared_ptr<const broker_settings> cfg, int conn_fd,
                 int stop_fd, native_catalog_actor catalog, caf::actor broker);

}  // namespace shellctl::actors
