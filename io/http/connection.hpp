#pragma once
// One client connection of the HTTP front: its socket and timer, its parser, the requests
// in flight (answered in order) and its read/write/close state. Loop-thread only.
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "io/http/bridge.hpp"
#include "io/http/out_batch.hpp"
#include "io/http/request_parser.hpp"
#include "io/http/server.hpp"

namespace shellctl::io::http {

struct connection {
  server::impl* srv = nullptr;
  // The socket: TCP, or a Unix socket (server_config::unix_path); both are streams.
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } sock;
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&sock); }
  uv_handle_t* handle() { return reinterpret_cast<uv_handle_t*>(&sock); }
  uv_timer_t timer;
  request_parser parser;
  std::deque<std::shared_ptr<slot>> pending;  // in request order; front answers first
  std::string stash;  // bytes read but not parsed while too many requests are in flight
  out_batch* out = nullptr;  // being filled during this callback
  std::size_t queued = 0;    // bytes handed to uv_write, not yet completed
  std::size_t reserved = 0;  // budget held by the request being received
  std::size_t lingered = 0;  // bytes discarded after our FIN
  // The request whose body is being streamed to its handler (request::stream_body), and
  // whether reading stopped because that handler has not taken what arrived.
  std::shared_ptr<slot> body_slot;
  bool body_paused = false;
  std::uint64_t idle_since = 0;
  std::uint64_t accepted_at = 0;
  bool authenticated = false;  // a head with the caller's credentials came on it
  std::uint64_t request_start = 0;
  std::uint64_t timer_due = 0;
  int open_handles = 0;
  bool reading = false;
  bool read_paused = false;   // too many requests in flight
  bool stop_reading = false;  // no further requests on this connection
  bool close_after_write = false;
  bool shutting_down = false;  // FIN sent, lingering
  bool closing = false;
  bool continue_wanted = false;
  bool dirty = false;
  bool resume_queued = false;
  bool eof = false;
  connection* prev = nullptr;  // all live connections, for shutdown
  connection* next = nullptr;

  explicit connection(parser_limits lim) : parser(lim) {}
};

}  // namespace shellctl::io::http
