#pragma once
// file_op: one file API request (docs/api.md "Files") on a thread of its own, spawned
// detached by the api_edge for that request. It never touches Home or a granted tree
// itself: it asks home_files for a channel to the confined file worker (io/home/helper.hpp)
// and sends the request there. What comes back is a domain value or error, and for a
// download or an upload an open descriptor: the file the worker opened for reading, or the
// temporary file it created for the upload. The op streams the bytes from or into that
// descriptor, then (an upload) asks the worker to rename it over the target.
//
// A download's bytes go by sendfile into the connection's socket, which the loop lends the
// op once the head is written (`socket_lent`); an upload asks the connection for the next
// body piece and waits for `body_arrived`. A peer that stops for `idle` (no room in the
// socket, no body piece) ends the transfer; one that goes away ends it at once.
//
// A blocking actor: CAF 0.17 has no typed blocking actors, so its handle is an untyped
// caf::actor, known only to the edge that spawned it.
#include <caf/all.hpp>

#include <chrono>

#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

struct file_settings {
  home_files_actor worker;  // hands out channels to the confined file worker
  std::chrono::milliseconds idle{60000};
};

void file_op(caf::blocking_actor* self, file_settings cfg);

}  // namespace shellctl::actors
