#pragma once
// snapshot_op: one home snapshot save or restore, from its first step to its last, on a
// thread of its own (spawned detached by snapshot_gate). It never touches Home itself: it
// starts the confined helper (shellctl-home save|restore, io/home/helper.hpp), moves the
// archive's bytes between the connection and the helper's pipe (hashing what a save
// sends), and kills the helper at the deadline or when the client goes. Waiting on the pipe
// blocks, and must never hold a scheduler thread. It answers one snapshot request with a
// domain value or error and then ends, which frees the gate.
//
// Flow control is by messages: a save sends a chunk and, with more than its in-flight bound
// unwritten, waits for `stream_drained` (the connection wrote); a restore asks the
// connection for the next body piece and waits for `body_arrived`. Both waits end at the
// operation's deadline, and a connection that goes away wakes them too.
//
// A blocking actor: CAF 0.17 has no typed blocking actors, so its handle is an untyped
// caf::actor, known only to the gate that spawned it.
#include <caf/all.hpp>

#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/settings.hpp"

namespace shellctl::actors {

void snapshot_op(caf::blocking_actor* self, snapshot_settings cfg);

}  // namespace shellctl::actors
