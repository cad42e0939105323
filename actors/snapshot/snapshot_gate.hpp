#pragma once
// snapshot_gate: the single-operation gate of home snapshots (docs/api.md "Home snapshots"). A save
// or restore arriving while another runs is answered snapshot_busy at once; otherwise the gate
// spawns its snapshot_op, hands it the request and is free again when the op ends (it monitors the
// op: success, failure, deadline, a client gone, all end it). Mailbox order is the lock: no two
// requests are ever decided at once.
#include <caf/all.hpp>

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/settings.hpp"

namespace shellctl::actors {

struct snapshot_gate_state {
  static inline const char* name = "snapshot_gate";
  caf::actor op;  // the operation running, if any (untyped: a blocking actor)
};

snapshot_gate_actor::behavior_type snapshot_gate(
    snapshot_gate_actor::stateful_pointer<snapshot_gate_state> self, snapshot_settings cfg,
    metrics_registry_actor metrics);

}  // namespace shellctl::actors
