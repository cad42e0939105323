#pragma once
// The HTTP/1.1 front: one libuv loop thread, one llhttp parser per connection.
//
// The loop thread parses requests and hands each complete one to `request_handler`
// (called on the loop thread; it must not block: it forwards to an actor and returns).
// The answer travels back through a `responder`, which any thread may use: it pushes
// onto the one bridge queue and wakes the loop with uv_async_send. This queue is the only
// state shared between the loop thread and the actor threads.
//
// Behaviour: keep-alive; pipelined requests answered in order; Content-Length and chunked
// request bodies; Expect: 100-continue; body limit -> 413, header block limit -> 431,
// request line limit -> 414, parse error -> 400, slow request (headers/body not received
// in time) -> 408; all of these carry the JSON error envelope (decision D13) and close the
// connection. Idle keep-alive connections time out; a request in progress (a long-poll)
// never does. Chunked responses with trailers, with back-pressure through `on_drain`.
// Graceful shutdown on SIGTERM/SIGINT: stop accepting, let in-flight requests finish
// within `shutdown_grace`, then return from run().
#include <any>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/http/access_log.hpp"

namespace shellctl::io::http {

struct header {
  std::string name;
  std::string value;
};

struct request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // raw request-target
  std::string path;    // target before '?', not percent-decoded
  std::string query;   // target after '?', raw ("" when none)
  std::vector<header> headers;
  std::string body;
  // What the head check learned about an accepted head (server_config::head_check), handed
  // on to the request handler so that it is not decided twice. Empty when none ran.
  std::any accepted;
  // Set by the head check: the body is not read in before the handler runs; the handler
  // gets the request at its head and takes the body piece by piece (responder::read_body),
  // with no size limit and at the pace it reads (snapshot restore).
  bool stream_body = false;
  // Case-insensitive header lookup; nullptr when absent.
  const std::string* find_header(std::string_view name) const;
};

struct response {
  int status = 200;
  std::vector<header> headers;  // Content-Length/Date/Connection are added by the server
  // Not sent: the job the answer is about, for the request log when the path names none
  // (a run's new job).
  std::string log_job_id;
  std::string body;
  // A streamed answer (responder::start_stream) of known length: sent with this
  // Content-Length and its bytes as they are, instead of chunked (a file download). The
  // stream must then carry exactly this many bytes; one that ends short is cut off.
  std::optional<std::uint64_t> stream_length;
};

class connection_bridge;  // internal: the loop side of one request

// One piece of a streamed request body.
struct body_piece {
  std::string data;   // the bytes (empty with `end` or `failed`)
  bool end = false;   // the body is complete
  bool failed = false;  // the body will not complete (client gone): `error` says so
  std::string error;
};

// Delivers the answer to one request, from any thread. Copyable; the first `send` or
// `start_stream` wins, later calls are ignored. If it is destroyed without answering,
// the server answers 500 internal_error so that a client never hangs.
class responder {
 public:
  responder() = default;
  explicit responder(std::shared_ptr<connection_bridge> b);

  void send(response r) const;

  // Chunked streaming (snapshot save), or sized with head.stream_length (a file download).
  // `head.body` is ignored. `on_drain` is called on
  // the loop thread once right after the head is written, and after each write of the
  // stream's bytes that leaves the connection's queue below the low-water mark: produce
  // more then. A producer on another thread keeps its bytes in flight bounded with
  // stream_acked(): on_drain is only a wake-up to look again. It is also called when the
  // client goes away (connected() is false by then), so a waiting producer always wakes.
  void start_stream(response head, std::function<void()> on_drain) const;
  void send_chunk(std::string data) const;
  // Bytes of this stream's chunks whose writes have completed (any thread).
  std::uint64_t stream_acked() const;
  // Ends the body with the last chunk and these trailers.
  void end_stream(std::vector<header> trailers) const;
  // Drops the connection without a clean end (no terminating chunk, no trailers).
  void abort() const;

  // A sized body (head.stream_length) the caller sends itself, straight from a file into
  // the connection's socket (sendfile: no byte crosses user space). The loop writes the
  // head; once it is written, `on_socket` is called on the loop thread with a duplicate of
  // the connection's socket (non-blocking, close-on-exec; the caller closes it), or with -1
  // when no body goes (a HEAD request, or the client went away). Until return_socket, the
  // loop writes nothing else to that connection; if the connection must close meanwhile
  // (shutdown, an error), the socket is shut down under the caller, whose next write
  // fails. `sent` short of the length ends the connection (its Content-Length unmet).
  void lend_socket(response head, std::function<void(int fd)> on_socket) const;
  void return_socket(std::uint64_t sent) const;
  // True while the client connection is open.
  bool connected() const;

  // A streamed request body (request::stream_body): `on_piece` (called on the loop thread)
  // gets the next piece once it is there; read_body registers it and asks for the first,
  // more_body asks for each next one. Unread, the body holds at most ~256 KiB: the
  // connection stops reading until it is asked for more.
  void read_body(std::function<void(body_piece)> on_piece) const;
  void more_body() const;

 private:
  std::shared_ptr<connection_bridge> bridge_;
};

using request_handler = std::function<void(request&&, responder)>;

struct server_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8765;
  // Listen on this Unix socket (created 0600, a stale one replaced) instead of host:port:
  // a native scope worker's control socket (docs/native-scopes.md "The scope worker").
  std::string unix_path;
  // Unix socket only: decides on each connection by its peer's kernel credentials
  // (SO_PEERCRED) before anything of it is read; false closes it. Loop thread, no blocking.
  std::function<bool(int pid, unsigned uid)> accept_peer;
  // TCP only: decides on each connection by its socket (the HTTP front's caller asks the
  // kernel whose process is at the other end) before anything of it is read; false closes
  // it without an answer. Loop thread; it must not block beyond a bounded kernel query.
  std::function<bool(int fd)> accept_tcp;
  // Connections closed at once, by reason: "full" (503: every connection authenticated),
  // "guest" (an older guest closed to make room), "refused" (accept_tcp said no). Loop thread.
  std::function<void(const char* reason)> on_refused;
  // Decides on a request as soon as its head (request line and headers) is complete, before
  // one body byte is read: an answer here (401, 404, 405) is sent, then the connection is
  // closed without reading the body. Called on the loop thread; must not block.
  // It may leave what it decided in `head.accepted`.
  std::function<std::optional<response>(request& head)> head_check;
  // Memory bounds whoever connects (guarantee G5): connections beyond `max_connections` are
  // answered 503 and closed (after the oldest guest, if there is one, made room: see
  // `authenticates`); request bytes held across all connections (announced or
  // received bodies until their answer is written) beyond `max_buffered_bytes` make the
  // request that would exceed them 503 server_busy.
  std::size_t max_connections = 1024;
  std::size_t max_buffered_bytes = 256u << 20;
  std::size_t max_body_bytes = 64u << 20;      // 413 above
  std::size_t max_header_bytes = 64u << 10;    // 431 above (whole header block)
  std::size_t max_request_line = 16u << 10;    // 414 above
  std::chrono::milliseconds idle_timeout{75000};     // keep-alive connection, no request
  std::chrono::milliseconds request_timeout{60000};  // headers+body must arrive within
  // A request's head (request line and headers) must be complete within this of its first
  // byte, and a connection that has not yet authenticated may idle this long at most.
  std::chrono::milliseconds head_timeout{10000};
  // Whether a complete head carries the caller's credentials (the token). A connection that
  // sent one is authenticated from then on; until then it is a guest: when `max_connections`
  // are open, a new connection closes the oldest guest instead of being refused (G5: peers
  // without the token can never take a token holder's place). Unset: every connection is.
  std::function<bool(const request& head)> authenticates;
  std::chrono::milliseconds shutdown_grace{5000};
  bool handle_signals = true;  // SIGINT/SIGTERM start the graceful shutdown
  // One access-log line per answer on stderr (access_log.hpp), written in one batch per
  // loop turn. `describe` names a request's route pattern and job id for it (loop thread;
  // must not block); without it the route is "-".
  log_format access_log = log_format::off;
  std::function<void(const request&, std::string& route, std::string& job_id)> describe;
  // Observers for /metrics, called on the loop thread (they must not block): each answered
  // request (with or without the access log), and the open-connection count after a
  // connection was accepted (accepted = true) or closed.
  std::function<void(const access_entry&)> on_answered;
  std::function<void(std::size_t open, bool accepted)> on_connections;
};

class server {
 public:
  server(server_config cfg, request_handler handler);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Binds and listens. Throws std::runtime_error with a one-line reason on failure.
  void listen();
  // The bound port (useful with port 0).
  std::uint16_t port() const;
  // Runs the loop on the calling thread until shutdown completes.
  void run();
  // Starts the graceful shutdown; callable from any thread.
  void stop();

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// The JSON error envelope body: {"error":{"code":...,"message":...}}\n
std::string error_body(std::string_view code, std::string_view message);

}  // namespace shellctl::io::http
