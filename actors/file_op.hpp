#pragma once
// file_op: one file API request (extensions.md §E1) on a thread of its own, spawned
// detached by the api_edge for that request: every file operation blocks on the disk and
// must never hold a scheduler thread or the loop thread. It owns the request's descriptors
// (the open file of a download, the temporary file of an upload), answers with a domain
// value or error, and ends.
//
// Transfers are flow-controlled by messages, as a snapshot is: a download sends a chunk and,
// with more than its in-flight bound unwritten, waits for `stream_drained`; an upload asks
// the connection for the next body piece and waits for `body_arrived`. A peer that stops
// for `idle` (no drain, no body piece) ends the transfer; one that goes away wakes it.
//
// A blocking actor: CAF 0.17 has no typed blocking actors, so its handle is an untyped
// caf::actor, known only to the edge that spawned it.
#include <caf/all.hpp>

#include <chrono>
#include <memory>

#include "actors/interfaces.hpp"
#include "io/fs/file_roots.hpp"

namespace shellctl::actors {

struct file_settings {
  // Immutable after startup (the roots' descriptors are only read): shared by every op.
  std::shared_ptr<const io::fs::file_roots> roots;
  std::chrono::milliseconds idle{60000};
};

void file_op(caf::blocking_actor* self, file_settings cfg);

}  // namespace shellctl::actors
