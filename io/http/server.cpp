// The libuv loop of the HTTP front. Threading model:
//
//   * Everything in this file runs on the loop thread (the one inside server::run()),
//     except responder's methods, server::stop() and the bridge_hub they push to.
//   * bridge_hub (bridge.hpp) is THE ONLY state shared across threads.
//
// The pieces, one reason to change each: bridge.hpp (the cross-thread answers), out_batch.hpp
// (write batching: one uv_write per connection per callback), connection.hpp (one
// connection's state), wire.hpp (the bytes of heads and chunks). This file is the loop:
// listening, reading and parsing, dispatch to the handler, writing in request order,
// timeouts, budgets (G5) and the graceful shutdown.
#include "io/http/server.hpp"
#include "io/json/json.hpp"

#include <uv.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <netdb.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "io/http/bridge.hpp"
#include "io/http/connection.hpp"
#include "io/http/out_batch.hpp"
#include "io/http/request_parser.hpp"
#include "io/http/wire.hpp"

namespace shellctl::io::http {

namespace {

constexpr std::size_t kReadBufferSize = 256u << 10;
constexpr std::size_t kLowWater = 256u << 10;  // on_drain below this many queued bytes
// A streamed request body not yet taken by its handler: reading stops above this.
constexpr std::size_t kBodyWindow = 256u << 10;
constexpr std::size_t kMaxPending = 32;        // pipelined requests in flight per connection
constexpr std::uint64_t kLingerMs = 2000;      // after our FIN, wait this long for theirs
// ...and discard at most this much of a body we refused: a peer that keeps sending gets
// its connection reset, not our CPU.
constexpr std::size_t kLingerMaxBytes = 1u << 20;
constexpr int kBacklog = 1024;
// Connections accepted per loop turn: a quarter of max_connections, at most 32. libuv
// accepts until the queue is empty before it reads any socket, so a burst larger than
// max_connections would push out, as the oldest guests, the connections accepted early in
// it, whose heads (a token holder's) were there to be read (G5). Between two batches the
// turn reads every socket that has bytes.
constexpr std::size_t kMaxAcceptsPerTurn = 32;

void log_line(const char* fmt, const char* a, const char* b = "") {
  std::fprintf(stderr, fmt, a, b);
  std::fputc('\n', stderr);
}

}  // namespace

// The loop side of a request, the cross-thread queue and the responder: bridge.hpp.
// Write batching: out_batch.hpp. One connection's state: connection.hpp. Response heads
// and chunk framing: wire.hpp.

struct server::impl {
  server_config cfg;
  request_handler handler;
  uv_loop_t loop;
  // TCP, or a Unix socket (cfg.unix_path).
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } listener;
  uv_async_t async;
  uv_signal_t sigint, sigterm;
  uv_timer_t grace_timer;
  uv_check_t accept_turn;       // after each poll: the next batch of accepts may begin
  std::size_t accepts_this_turn = 0;
  bool accept_paused = false;   // a connection waits in libuv for the next turn's batch
  bool listening = false;
  bool stopping = false;
  bool loop_closed = false;
  bool signals_started = false;
  bool grace_started = false;
  std::uint16_t bound_port = 0;
  std::shared_ptr<bridge_hub> hub = std::make_shared<bridge_hub>();
  connection* conns = nullptr;
  std::size_t conn_count = 0;
  std::size_t buffered = 0;  // request bytes held (see server_config::max_buffered_bytes)
  int depth = 0;  // nesting of our callbacks; work is settled when the outermost ends
  std::vector<bridge_op> local_ops;  // answers given on the loop thread itself
  std::vector<connection*> dirty;
  std::vector<connection*> resume;
  std::vector<out_batch*> batch_pool;
  char read_buf[kReadBufferSize];
  std::time_t date_time = 0;
  std::string date;
  std::uint64_t last_accept_log = 0;
  std::string access_buf;  // access-log lines of this loop turn, written by settle()

  impl(server_config c, request_handler h) : cfg(std::move(c)), handler(std::move(h)) {
    if (int rc = uv_loop_init(&loop); rc != 0)
      throw std::runtime_error(std::string("uv_loop_init: ") + uv_strerror(rc));
    loop.data = this;
    uv_async_init(&loop, &async, on_async);
    async.data = this;
    hub->async = &async;
    hub->loop_local = &local_ops;
    if (cfg.unix_path.empty())
      uv_tcp_init(&loop, &listener.tcp);
    else
      uv_pipe_init(&loop, &listener.pipe, 0);
    listener.tcp.data = this;  // the common handle prefix
    uv_timer_init(&loop, &grace_timer);
    grace_timer.data = this;
    uv_check_init(&loop, &accept_turn);
    accept_turn.data = this;
    uv_check_start(&accept_turn, on_accept_turn);
    uv_unref(reinterpret_cast<uv_handle_t*>(&accept_turn));  // never what keeps the loop alive
  }

  // ---- callback scope: settle loop-thread answers and flush writes on exit --------------
  struct scope {
    impl* s;
    explicit scope(impl* x) : s(x) { ++s->depth; }
    ~scope() {
      if (--s->depth == 0) s->settle();
    }
  };

  void settle() {
    ++depth;  // work done here must not recurse into settle
    for (;;) {
      if (!local_ops.empty()) {
        std::vector<bridge_op> ops;
        ops.swap(local_ops);
        for (auto& op : ops) apply(op);
        continue;
      }
      if (!resume.empty()) {
        connection* c = resume.back();
        resume.pop_back();
        c->resume_queued = false;
        resume_reading(c);
        continue;
      }
      if (!dirty.empty()) {
        std::vector<connection*> batch_conns;
        batch_conns.swap(dirty);
        for (connection* c : batch_conns) {
          c->dirty = false;
          flush(c);
        }
        continue;
      }
      break;
    }
    write_access_log();
    --depth;
    maybe_finish_shutdown();
  }

  // The turn's access-log lines in one write. stderr is the operator's (a terminal, a
  // journal, a pipe a collector drains): a blocking write of a few lines per turn.
  void write_access_log() {
    std::size_t off = 0;
    while (off < access_buf.size()) {
      const ssize_t n = ::write(STDERR_FILENO, access_buf.data() + off, access_buf.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr gone: the lines are dropped, the answers are not
      off += static_cast<std::size_t>(n);
    }
    access_buf.clear();
  }

  // The request id (the client's, if acceptable, else a new one), method, route and job
  // id of a slot's request; `req` is null for a request that never parsed.
  void tag(slot& sl, const request* req) {
    sl.started_ns = uv_hrtime();
    if (req == nullptr) {
      sl.request_id = new_request_id();
      return;
    }
    const std::string* given = req->find_header("x-request-id");
    sl.request_id = given && acceptable_request_id(*given) ? *given : new_request_id();
    sl.method = req->method;
    if (cfg.describe) cfg.describe(*req, sl.route, sl.job_id);
  }

  void log_answer(slot* sl, int status) {
    if (sl->request_id.empty()) sl->request_id = new_request_id();
    if (cfg.access_log == log_format::off && !cfg.on_answered) return;
    access_entry e{sl->request_id, sl->method, sl->route, sl->job_id, status,
                   sl->started_ns ? (uv_hrtime() - sl->started_ns) / 1000 : 0};
    if (cfg.on_answered) cfg.on_answered(e);
    if (cfg.access_log == log_format::off) return;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    append_access_line(access_buf, cfg.access_log, e,
                       std::chrono::duration_cast<std::chrono::microseconds>(now).count());
  }

  // ---- listening ---------------------------------------------------------------------------
  void listen() {
    if (!cfg.unix_path.empty()) return listen_unix();
    std::string host = cfg.host;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    std::string shown = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                        std::to_string(cfg.port);
    auto fail = [&](const std::string& why) {
      throw std::runtime_error("listen tcp " + shown + ": " + why);
    };
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    std::string port = std::to_string(cfg.port);
    int gai = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
    if (gai != 0) fail(gai_strerror(gai));
    // Prefer IPv4 for names like "localhost", as Go's listener does.
    const addrinfo* pick = res;
    for (const addrinfo* a = res; a != nullptr; a = a->ai_next)
      if (a->ai_family == AF_INET) {
        pick = a;
        break;
      }
    int rc = uv_tcp_bind(&listener.tcp, pick->ai_addr, 0);
    freeaddrinfo(res);
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener), kBacklog, on_accept);
    if (rc != 0) fail(uv_strerror(rc));
    sockaddr_storage ss{};
    int len = sizeof ss;
    uv_tcp_getsockname(&listener.tcp, reinterpret_cast<sockaddr*>(&ss), &len);
    bound_port = ntohs(ss.ss_family == AF_INET6
                           ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    listening = true;
  }

  // A Unix socket, created 0600 (the umask is set around bind: the socket is never
  // connectable by others, not even for an instant). A stale socket file is replaced.
  void listen_unix() {
    auto fail = [&](const std::string& why) {
      throw std::runtime_error("listen unix " + cfg.unix_path + ": " + why);
    };
    struct stat st {};
    if (::lstat(cfg.unix_path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) fail("exists and is not a socket");
      ::unlink(cfg.unix_path.c_str());
    }
    const mode_t old = ::umask(0177);
    int rc = uv_pipe_bind(&listener.pipe, cfg.unix_path.c_str());
    ::umask(old);
    if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener), kBacklog, on_accept);
    if (rc != 0) fail(uv_strerror(rc));
    listening = true;
  }

  static void on_accept(uv_stream_t* l, int status) {
    auto* s = static_cast<impl*>(l->data);
    scope sc(s);
    if (status < 0) {
      s->log_accept_error(status);
      return;
    }
    if (s->accepts_this_turn >= std::clamp<std::size_t>(s->cfg.max_connections / 4, 1, kMaxAcceptsPerTurn)) {
      // Not taken now: libuv keeps it and stops watching the listener until uv_accept.
      s->accept_paused = true;
      return;
    }
    ++s->accepts_this_turn;
    auto* c = new connection(
        parser_limits{s->cfg.max_body_bytes, s->cfg.max_header_bytes, s->cfg.max_request_line});
    c->srv = s;
    const bool unix_socket = !s->cfg.unix_path.empty();
    if (unix_socket)
      uv_pipe_init(&s->loop, &c->sock.pipe, 0);
    else
      uv_tcp_init(&s->loop, &c->sock.tcp);
    c->sock.tcp.data = c;  // the common handle prefix
    c->open_handles = 1;
    int rc = uv_accept(l, c->stream());
    // A Unix peer is decided by its credentials before one byte of it is read.
    if (rc == 0 && unix_socket && s->cfg.accept_peer) {
      uv_os_fd_t fd = -1;
      ucred cred{};
      socklen_t len = sizeof cred;
      const bool known = uv_fileno(c->handle(), &fd) == 0 &&
                         ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
      if (!known || !s->cfg.accept_peer(cred.pid, cred.uid)) rc = UV_EACCES;
    }
    // A TCP peer that may not call us (a job, by its socket's cgroup) is closed unread.
    if (rc == 0 && !unix_socket && s->cfg.accept_tcp) {
      uv_os_fd_t fd = -1;
      if (uv_fileno(c->handle(), &fd) == 0 && !s->cfg.accept_tcp(fd)) {
        if (s->cfg.on_refused) s->cfg.on_refused("refused");
        uv_close(c->handle(), [](uv_handle_t* h) { delete static_cast<connection*>(h->data); });
        return;
      }
    }
    if (rc < 0) {
      // EMFILE and friends: log, drop this one, keep serving the others.
      s->log_accept_error(rc);
      uv_close(c->handle(),
               [](uv_handle_t* h) { delete static_cast<connection*>(h->data); });
      return;
    }
    if (s->conn_count >= s->cfg.max_connections) {
      // Full: the oldest guest (no head with credentials yet) makes room, so that peers
      // without the token can never keep a token holder out (G5).
      if (connection* guest = s->oldest_guest()) {
        s->close_conn(guest);
        if (s->cfg.on_refused) s->cfg.on_refused("guest");
      }
    }
    if (s->conn_count >= s->cfg.max_connections) {
      // Full of authenticated connections: one best-effort answer, then the socket goes
      // (nothing is buffered for it).
      static const std::string busy = [] {
        std::string body = error_body("server_busy", "too many open connections");
        return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
               "Connection: close\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
      }();
      uv_buf_t b = uv_buf_init(const_cast<char*>(busy.data()), static_cast<unsigned>(busy.size()));
      uv_try_write(c->stream(), &b, 1);
      s->log_refused();
      if (s->cfg.on_refused) s->cfg.on_refused("full");
      uv_close(c->handle(),
               [](uv_handle_t* h) { delete static_cast<connection*>(h->data); });
      return;
    }
    uv_timer_init(&s->loop, &c->timer);
    c->timer.data = c;
    c->open_handles = 2;
    if (!unix_socket) uv_tcp_nodelay(&c->sock.tcp, 1);
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    ++s->conn_count;
    if (s->cfg.on_connections) s->cfg.on_connections(s->conn_count, true);
    c->idle_since = c->accepted_at = uv_now(&s->loop);
    c->authenticated = !s->cfg.authenticates;
    s->arm_timer(c, c->idle_since + s->idle_limit(c));
    s->start_reading(c);
  }

  // The poll phase is over: the sockets of this turn were read. The next batch begins with
  // the connection libuv holds (which starts the listener's watch again).
  static void on_accept_turn(uv_check_t* h) {
    auto* s = static_cast<impl*>(h->data);
    s->accepts_this_turn = 0;
    if (!s->accept_paused || !s->listening) return;
    s->accept_paused = false;
    on_accept(reinterpret_cast<uv_stream_t*>(&s->listener), 0);
  }

  // How long a connection with nothing in flight may stay open: a guest only as long as a
  // head may take.
  std::uint64_t idle_limit(const connection* c) const {
    return static_cast<std::uint64_t>(c->authenticated ? cfg.idle_timeout.count() : cfg.head_timeout.count());
  }

  // The guest that has been open longest (the list holds the newest first), or nullptr.
  connection* oldest_guest() {
    connection* found = nullptr;
    for (connection* c = conns; c != nullptr; c = c->next)
      if (!c->authenticated && !c->closing) found = c;
    return found;
  }

  // A complete head: does it make its connection authenticated?
  void note_head(connection* c, const request& head) {
    if (!c->authenticated && cfg.authenticates && cfg.authenticates(head)) c->authenticated = true;
  }

  std::uint64_t last_refused_log = 0;
  void log_refused() {
    std::uint64_t now = uv_now(&loop);
    if (last_refused_log == 0 || now - last_refused_log >= 1000) {
      last_refused_log = now;
      log_line("shellctl: http: connection refused: %s open connections (limit)%s",
               std::to_string(conn_count).c_str());
    }
  }

  // ---- the request-byte budget (guarantee G5) ---------------------------------------------
  // Grows the connection's reservation to `bytes`; false when the budget cannot hold it.
  bool reserve(connection* c, std::size_t bytes) {
    if (bytes <= c->reserved) return true;
    const std::size_t more = bytes - c->reserved;
    if (buffered + more > cfg.max_buffered_bytes) return false;
    buffered += more;
    c->reserved = bytes;
    return true;
  }
  void release(std::size_t& bytes) {
    buffered -= std::min(buffered, bytes);
    bytes = 0;
  }

  void log_accept_error(int rc) {
    std::uint64_t now = uv_now(&loop);
    // One line per second at most: an fd shortage can fail thousands of accepts.
    if (last_accept_log == 0 || now - last_accept_log >= 1000) {
      last_accept_log = now;
      log_line("shellctl: http: accept failed: %s%s", uv_strerror(rc),
               rc == UV_EMFILE || rc == UV_ENFILE ? " (still serving)" : "");
    }
  }

  // ---- reading -----------------------------------------------------------------------------
  void start_reading(connection* c) {
    if (c->reading || c->closing) return;
    c->reading = true;
    uv_read_start(c->stream(), on_alloc, on_read);
  }

  void stop_read(connection* c) {
    if (!c->reading) return;
    c->reading = false;
    uv_read_stop(c->stream());
  }

  static void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
    // One buffer for all connections: on_read consumes (or stashes) it synchronously.
    auto* c = static_cast<connection*>(h->data);
    *buf = uv_buf_init(c->srv->read_buf, sizeof c->srv->read_buf);
  }

  static void on_read(uv_stream_t* st, ssize_t n, const uv_buf_t* buf) {
    auto* c = static_cast<connection*>(st->data);
    impl* s = c->srv;
    scope sc(s);
    if (c->shutting_down) {
      // Lingering after our FIN: discard until the peer closes (or has sent too much).
      if (n > 0) c->lingered += static_cast<std::size_t>(n);
      if (n < 0 || c->lingered > kLingerMaxBytes) s->close_conn(c);
      return;
    }
    if (n < 0) {
      if (n == UV_EOF && !c->pending.empty()) {
        // Half-closed: still answer what was asked (like Go), but tell long-polls.
        c->eof = true;
        s->end_body(c, true, "the client closed the connection before the body ended");
        for (auto& sl : c->pending) {
          sl->open.store(false);
          if (sl->st == slot::state::streaming && sl->on_drain) sl->on_drain();
        }
        s->stop_read(c);
        c->stop_reading = true;
        c->close_after_write = true;
        return;
      }
      s->close_conn(c);
      return;
    }
    if (n == 0) return;
    s->process(c, buf->base, static_cast<std::size_t>(n));
  }

  // Parses bytes and dispatches complete requests, in order.
  void process(connection* c, const char* data, std::size_t len) {
    std::uint64_t now = uv_now(&loop);
    while (len > 0 && !c->closing && !c->stop_reading) {
      if (!c->parser.in_message()) c->request_start = now;
      auto r = c->parser.feed(data, len);
      data += r.consumed;
      len -= r.consumed;
      switch (r.ev) {
        case request_parser::event::need_more:
          if (r.consumed == 0) len = 0;
          break;
        case request_parser::event::head:
          if (!admit_head(c)) len = 0;
          break;
        case request_parser::event::request:
          c->continue_wanted = false;
          if (c->body_slot) {
            // A streamed body is complete: its request was handed on at its head.
            take_body(c);
            c->parser.take();
            end_body(c, false, {});
            break;
          }
          dispatch(c);
          if (!c->stop_reading && c->pending.size() >= kMaxPending && len > 0) {
            c->stash.assign(data, len);
            len = 0;
            c->read_paused = true;
            stop_read(c);
          }
          break;
        case request_parser::event::error: {
          const parse_error& e = c->parser.error();
          queue_error(c, e.status, e.code, e.message);
          len = 0;
          break;
        }
      }
    }
    if (c->closing) return;
    if (c->body_slot) take_body(c);
    // A chunked body announces nothing: it is counted as it arrives. (A streamed one is
    // bounded by its window instead.)
    if (c->parser.in_message() && !c->stop_reading && !c->parser.streaming_body() &&
        !reserve(c, c->parser.body_bytes())) {
      queue_error(c, 503, "server_busy", "too many request bytes buffered; retry later");
      return;
    }
    if (c->pending.size() >= kMaxPending && !c->read_paused && !c->stop_reading) {
      c->read_paused = true;
      stop_read(c);
    }
    if (c->continue_wanted && c->parser.in_message() && c->pending.empty()) send_continue(c);
    // A request started and still incomplete: its deadline may be sooner than the timer's.
    if (c->parser.in_message() && c->pending.empty())
      arm_timer(c, c->request_start + (c->parser.in_head() ? cfg.head_timeout.count() : cfg.request_timeout.count()));
  }

  // A request's head is in and no body byte was read: reject it now (auth, unknown route,
  // budget), or let the body come. False when the connection ends here.
  bool admit_head(connection* c) {
    note_head(c, c->parser.head());
    if (cfg.head_check) {
      std::optional<response> early;
      try {
        early = cfg.head_check(c->parser.head());
      } catch (const std::exception&) {
        early.reset();  // the handler will see the request and answer it
      }
      if (early) {
        queue_answer_and_close(c, std::move(*early), &c->parser.head());
        return false;
      }
    }
    if (c->parser.head().stream_body) {
      // Handed on now; its body follows piece by piece, at the handler's pace.
      c->parser.stream_body();
      if (c->parser.expects_continue()) c->continue_wanted = true;
      request req = std::move(c->parser.head());
      auto sl = dispatch_request(c, std::move(req), true);
      if (sl->conn == c && !c->closing) c->body_slot = sl;
      return true;
    }
    if (c->parser.body_too_large()) {
      queue_error(c, 413, "payload_too_large", "request body too large");
      return false;
    }
    if (!reserve(c, static_cast<std::size_t>(std::min<std::uint64_t>(
                        c->parser.content_length(), cfg.max_buffered_bytes + 1)))) {
      queue_error(c, 503, "server_busy", "too many request bytes buffered; retry later");
      return false;
    }
    if (c->parser.expects_continue()) c->continue_wanted = true;
    return true;
  }

  void send_continue(connection* c) {
    // Never into a lent socket: the lender's bytes are on the wire (lend_end sends it).
    if (!c->pending.empty() && c->pending.front()->lend_wanted && !c->pending.front()->ended) return;
    c->continue_wanted = false;
    batch(c).append_small("HTTP/1.1 100 Continue\r\n\r\n");
  }

  void dispatch(connection* c) {
    request req = c->parser.take();
    note_head(c, req);  // a request without a body: its head is complete only now
    dispatch_request(c, std::move(req), false);
  }

  std::shared_ptr<slot> dispatch_request(connection* c, request req, bool body_streamed) {
    auto sl = std::make_shared<slot>();
    sl->conn = c;
    sl->keep_alive = c->parser.keep_alive() && !stopping;
    sl->http_1_0 = c->parser.http_1_0();
    sl->body_streamed = body_streamed;
    sl->head_request = req.method == "HEAD";
    // The body now lives with the handler until the answer is written.
    sl->reserved = c->reserved;
    c->reserved = 0;
    if (!sl->keep_alive) {
      c->stop_reading = true;
      stop_read(c);
    }
    tag(*sl, &req);
    c->pending.push_back(sl);
    responder resp(std::make_shared<connection_bridge>(hub, sl));
    try {
      handler(std::move(req), std::move(resp));
    } catch (const std::exception& e) {
      respond_internal(sl, e.what());
    } catch (...) {
      respond_internal(sl, "request handler failed");
    }
    return sl;
  }

  // ---- streamed request bodies ---------------------------------------------------------------
  // What the parser has of the streamed body goes to its slot's queue; reading stops while
  // the handler has not taken a window's worth.
  void take_body(connection* c) {
    auto sl = c->body_slot;
    std::string piece = c->parser.take_piece();
    if (sl->body_queue.empty())
      sl->body_queue.swap(piece);  // the common case: nothing queued, no copy
    else
      sl->body_queue.append(piece);
    deliver_body(sl.get());
    if (c->body_slot && sl->body_queue.size() >= kBodyWindow && c->reading) {
      c->body_paused = true;
      stop_read(c);
    }
  }

  // The streamed body is complete, or will never be.
  void end_body(connection* c, bool failed, std::string why) {
    auto sl = std::move(c->body_slot);
    c->body_slot.reset();
    // Reading stopped for the body's window; the body is complete now, so what follows it
    // (the next request on this connection) must be read again.
    const bool was_paused = c->body_paused;
    c->body_paused = false;
    if (was_paused && !failed && !c->read_paused && !c->stop_reading) start_reading(c);
    if (!sl) return;
    if (failed) {
      sl->body_failed = true;
      sl->body_error = std::move(why);
    } else {
      sl->body_ended = true;
    }
    deliver_body(sl.get());
  }

  // Hands the next piece to the handler if it asked for one and there is something to say.
  void deliver_body(slot* sl) {
    if (!sl->body_wanted || !sl->on_body) return;
    connection* c = sl->conn;
    const bool current = c && c->body_slot.get() == sl;
    if (current && c->continue_wanted) send_continue(c);  // the handler reads: let it come
    body_piece p;
    if (!sl->body_queue.empty()) {
      p.data.swap(sl->body_queue);
    } else if (sl->body_failed) {
      p.failed = true;
      p.error = sl->body_error;
    } else if (sl->body_ended) {
      p.end = true;
    } else {
      return;
    }
    sl->body_wanted = false;
    if (current && c->body_paused && !c->read_paused && !c->stop_reading) {
      c->body_paused = false;
      start_reading(c);
    }
    auto cb = sl->on_body;
    cb(std::move(p));
  }

  // The handler threw: answer 500 unless it already answered.
  void respond_internal(const std::shared_ptr<slot>& sl, const char* what) {
    if (sl->st != slot::state::waiting) return;
    response r;
    r.status = 500;
    r.headers.push_back({"Content-Type", "application/json"});
    r.body = error_body("internal_error", what);
    sl->resp = std::move(r);
    sl->st = slot::state::ready;
    if (sl->conn) advance(sl->conn);
  }

  // A front error (D13): answered in order after what is in flight, then the connection ends.
  void queue_error(connection* c, int status, std::string_view code, std::string_view msg) {
    response r;
    r.status = status;
    r.headers.push_back({"Content-Type", "application/json"});
    r.body = error_body(code, msg);
    queue_answer_and_close(c, std::move(r));
  }

  void queue_answer_and_close(connection* c, response r, const request* req = nullptr) {
    auto sl = std::make_shared<slot>();
    tag(*sl, req);
    sl->conn = c;
    sl->keep_alive = false;
    sl->close_after = true;
    sl->resp = std::move(r);
    sl->st = slot::state::ready;
    c->stop_reading = true;
    c->continue_wanted = false;
    stop_read(c);
    release(c->reserved);
    c->pending.push_back(std::move(sl));
    advance(c);
  }

  void resume_reading(connection* c) {
    if (c->closing || c->stop_reading) return;
    c->read_paused = false;
    if (!c->stash.empty()) {
      std::string bytes;
      bytes.swap(c->stash);
      process(c, bytes.data(), bytes.size());
    }
    if (!c->closing && !c->read_paused && !c->stop_reading) start_reading(c);
  }

  // ---- answers -----------------------------------------------------------------------------
  static void on_async(uv_async_t* a) {
    auto* s = static_cast<impl*>(a->data);
    scope sc(s);
    std::vector<bridge_op> ops;
    {
      std::lock_guard<std::mutex> lk(s->hub->mu);
      ops.swap(s->hub->ops);
    }
    for (auto& op : ops) s->apply(op);
  }

  void apply(bridge_op& op) {
    if (op.kind == op_kind::stop) {
      begin_shutdown();
      return;
    }
    slot* sl = op.target.get();
    connection* c = sl->conn;
    switch (op.kind) {
      case op_kind::send:
        if (sl->st != slot::state::waiting) return;
        sl->resp = std::move(op.resp);
        sl->st = slot::state::ready;
        break;
      case op_kind::dropped:
        if (sl->st != slot::state::waiting) return;
        sl->resp.status = 500;
        sl->resp.headers.push_back({"Content-Type", "application/json"});
        sl->resp.body = error_body("internal_error", "request was dropped without an answer");
        sl->st = slot::state::ready;
        break;
      case op_kind::start_stream:
        if (sl->st != slot::state::waiting) return;
        sl->resp = std::move(op.resp);
        sl->sized = sl->resp.stream_length;
        sl->on_drain = std::move(op.on_drain);
        sl->st = slot::state::streaming;
        break;
      case op_kind::chunk:
        if (sl->st != slot::state::streaming || sl->ended || sl->aborted) return;
        if (c && sl->head_written) {
          write_chunk(c, sl, std::move(op.data));
          return;
        }
        sl->chunks.push_back(std::move(op.data));
        return;
      case op_kind::end_stream:
        if (sl->st != slot::state::streaming || sl->ended || sl->aborted) return;
        sl->ended = true;
        sl->trailers = std::move(op.trailers);
        break;
      case op_kind::abort:
        if (sl->st == slot::state::done) return;
        sl->aborted = true;
        if (sl->st == slot::state::waiting) sl->st = slot::state::streaming;
        break;
      case op_kind::lend:
        if (sl->st != slot::state::waiting) return;
        sl->resp = std::move(op.resp);
        sl->sized = sl->resp.stream_length.value_or(0);
        sl->on_socket = std::move(op.on_socket);
        sl->lend_wanted = true;
        sl->st = slot::state::streaming;
        break;
      case op_kind::lend_end:
        if (sl->st != slot::state::streaming || sl->ended || sl->aborted) return;
        sl->lent = false;
        sl->ended = true;
        sl->sized_queued = op.count;
        if (c) {
          advance(c);
          // A request behind this one that waits for 100 Continue gets it now.
          if (!c->closing && c->continue_wanted && c->body_slot && !c->pending.empty() &&
              c->pending.front() == c->body_slot)
            send_continue(c);
        }
        return;
      case op_kind::read_body:
        if (!sl->body_streamed) return;
        sl->on_body = std::move(op.on_body);
        sl->body_wanted = true;
        deliver_body(sl);
        return;
      case op_kind::more_body:
        if (!sl->body_streamed) return;
        sl->body_wanted = true;
        deliver_body(sl);
        return;
      case op_kind::stop:
        break;
    }
    if (c) advance(c);
  }

  // Writes whatever the front of the queue allows, in order.
  void advance(connection* c) {
    while (!c->closing && !c->pending.empty()) {
      slot* sl = c->pending.front().get();
      if (sl->st == slot::state::waiting) break;
      if (sl->aborted) {
        // Cut off: no terminating chunk. What was already written is dropped too.
        close_conn(c);
        return;
      }
      // An answer given before its streamed body ended: the rest of the body cannot be
      // told from a next request, so the connection ends with the answer.
      const bool body_unread = c->body_slot.get() == sl;
      bool closes = !sl->keep_alive || sl->close_after || c->close_after_write || stopping ||
                    body_unread;
      if (body_unread) end_body(c, true, "the request was answered before its body ended");
      if (sl->st == slot::state::ready) {
        write_response(c, sl, closes);
        finish_front(c, closes);
        continue;
      }
      // streaming
      if (!sl->head_written) {
        write_stream_head(c, sl, closes);
        sl->head_written = true;
        sl->drain_armed = true;  // on_drain once the head is out
        for (auto& ch : sl->chunks) write_chunk(c, sl, std::move(ch));
        sl->chunks.clear();
        if (sl->head_request) {
          // HEAD: the head is the whole answer; later chunks go nowhere (connected() false),
          // and a lender gets no socket.
          sl->open.store(false);
          if (auto lend = std::move(sl->on_socket)) lend(-1);
          sl->on_socket = nullptr;
          finish_front(c, closes || sl->http_1_0);
          continue;
        }
      }
      if (!sl->ended) break;
      if (sl->sized && sl->sized_queued != *sl->sized && !sl->head_request) {
        // Short (or long) of its Content-Length: the client must not wait for the rest.
        close_conn(c);
        return;
      }
      write_stream_end(c, sl);
      // HTTP/1.0 streams end with the connection.
      finish_front(c, closes || sl->http_1_0);
    }
    if (!c->closing && c->pending.empty()) {
      if (c->close_after_write) {
        if (c->queued == 0 && (c->out == nullptr || c->out->empty())) finish_conn(c);
        return;
      }
      if (stopping) {
        c->close_after_write = true;
        if (c->queued == 0 && (c->out == nullptr || c->out->empty())) finish_conn(c);
        return;
      }
      c->idle_since = uv_now(&loop);
      if (c->continue_wanted && c->parser.in_message()) send_continue(c);
      if (c->parser.in_message())
        arm_timer(c, c->request_start + (c->parser.in_head() ? cfg.head_timeout.count() : cfg.request_timeout.count()));
      if (c->read_paused && !c->resume_queued) {
        c->resume_queued = true;
        resume.push_back(c);
      }
    } else if (!c->closing && c->read_paused && c->pending.size() < kMaxPending / 2 &&
               !c->resume_queued) {
      c->resume_queued = true;
      resume.push_back(c);
    }
  }

  void finish_front(connection* c, bool closes) {
    auto sl = std::move(c->pending.front());
    c->pending.pop_front();
    release(sl->reserved);
    sl->st = slot::state::done;
    sl->conn = nullptr;
    sl->on_drain = nullptr;
    if (closes) {
      c->close_after_write = true;
      c->stop_reading = true;
      stop_read(c);
      // Anything after a closing answer is never answered.
      for (auto& rest : c->pending) {
        rest->conn = nullptr;
        rest->open.store(false);
        if (auto lend = std::move(rest->on_socket)) lend(-1);
        rest->on_socket = nullptr;
        release(rest->reserved);
      }
      c->pending.clear();
    }
  }

  const std::string& date_value() {
    std::time_t t = std::time(nullptr);
    if (t != date_time) {
      date_time = t;
      date = wire::http_date(t);
    }
    return date;
  }

  // The bytes come from wire.hpp; here they are only queued on the connection's batch.
  void write_response(connection* c, slot* sl, bool closes) {
    out_batch& b = batch(c);
    response& r = sl->resp;
    if (sl->job_id.empty()) sl->job_id = r.log_job_id;
    log_answer(sl, r.status);
    r.headers.push_back({"X-Request-Id", sl->request_id});
    std::size_t start = b.inline_buf.size();
    wire::append_response_head(b.inline_buf, r, date_value(), closes, sl->http_1_0);
    b.note_inline(start);
    if (!wire::has_no_body(r.status) && !sl->head_request) b.append_owned(std::move(r.body));
    r = response{};
  }

  void write_stream_head(connection* c, slot* sl, bool closes) {
    out_batch& b = batch(c);
    log_answer(sl, sl->resp.status);
    sl->resp.headers.push_back({"X-Request-Id", sl->request_id});
    std::size_t start = b.inline_buf.size();
    wire::append_stream_head(b.inline_buf, sl->resp, date_value(), closes, sl->http_1_0);
    b.note_inline(start);
    sl->resp = response{};
  }

  void write_chunk(connection* c, slot* sl, std::string data) {
    sl->drain_armed = true;
    if (sl->head_request) return;
    out_batch& b = batch(c);
    if (!b.stream) b.stream = c->pending.front();
    if (sl->sized) {  // sized by Content-Length: the bytes as they are, never beyond it
      const std::uint64_t room = *sl->sized - std::min(*sl->sized, sl->sized_queued);
      if (data.size() > room) data.resize(static_cast<std::size_t>(room));
      sl->sized_queued += data.size();
      b.stream_bytes += data.size();
      if (!data.empty()) b.append_owned(std::move(data));
      return;
    }
    b.stream_bytes += data.size();
    if (sl->http_1_0) {  // close-delimited: the bytes as they are
      b.append_owned(std::move(data));
      return;
    }
    b.append_small(wire::chunk_size_line(data.size()));
    b.append_owned(std::move(data));
    b.append_small("\r\n");
  }

  void write_stream_end(connection* c, slot* sl) {
    if (sl->head_request || sl->http_1_0 || sl->sized) return;
    batch(c).append_small(wire::last_chunk(sl->trailers));
  }

  out_batch& batch(connection* c) {
    if (c->out == nullptr) {
      if (batch_pool.empty()) {
        c->out = new out_batch;
      } else {
        c->out = batch_pool.back();
        batch_pool.pop_back();
      }
      c->out->conn = c;
    }
    if (!c->dirty) {
      c->dirty = true;
      dirty.push_back(c);
    }
    return *c->out;
  }

  void recycle(out_batch* b) {
    b->reset();
    // Keep a few warm batches; a huge inline buffer is not worth keeping.
    if (batch_pool.size() < 64 && b->inline_buf.capacity() <= (64u << 10))
      batch_pool.push_back(b);
    else
      delete b;
  }

  void flush(connection* c) {
    out_batch* b = c->out;
    if (b == nullptr || c->closing) return;
    c->out = nullptr;
    if (b->empty()) {
      recycle(b);
      return;
    }
    b->bufs.clear();
    for (const auto& sg : b->segments) {
      if (sg.owned_index == SIZE_MAX)
        b->bufs.push_back(uv_buf_init(b->inline_buf.data() + sg.offset,
                                      static_cast<unsigned>(sg.len)));
      else
        b->bufs.push_back(uv_buf_init(b->owned[sg.owned_index].data(),
                                      static_cast<unsigned>(sg.len)));
    }
    b->req.data = b;
    c->queued += b->bytes;
    int rc = uv_write(&b->req, c->stream(), b->bufs.data(),
                      static_cast<unsigned>(b->bufs.size()), on_write);
    if (rc < 0) {
      c->queued -= b->bytes;
      recycle(b);
      close_conn(c);
    }
  }

  static void on_write(uv_write_t* req, int status) {
    auto* b = static_cast<out_batch*>(req->data);
    connection* c = b->conn;
    impl* s = c->srv;
    scope sc(s);
    c->queued -= b->bytes;
    const bool wrote_stream = b->stream != nullptr && status >= 0;
    if (wrote_stream) b->stream->acked.fetch_add(b->stream_bytes);
    s->recycle(b);
    if (c->closing) return;
    if (status < 0) {
      s->close_conn(c);
      return;
    }
    // A lent socket is handed over once its head is out and nothing else is queued.
    if (!c->pending.empty() && c->queued == 0) {
      auto sl = c->pending.front();
      if (sl->lend_wanted && sl->head_written && !sl->lent && sl->on_socket && !sl->ended && !sl->aborted)
        s->lend(c, sl.get());
    }
    // Back-pressure: the stream at the front may produce more now.
    if (!c->pending.empty() && c->queued < kLowWater) {
      auto sl = c->pending.front();
      if (sl->st == slot::state::streaming && sl->head_written &&
          (sl->drain_armed || wrote_stream) &&
          !sl->ended && !sl->aborted && sl->on_drain) {
        sl->drain_armed = false;
        try {
          sl->on_drain();
        } catch (...) {
          sl->aborted = true;
          s->advance(c);
        }
      }
    }
    if (c->close_after_write && c->pending.empty() && c->queued == 0 &&
        (c->out == nullptr || c->out->empty()))
      s->finish_conn(c);
  }

  // The connection's socket, duplicated, to the slot's lender (responder::lend_socket).
  void lend(connection* c, slot* sl) {
    auto cb = std::move(sl->on_socket);
    sl->on_socket = nullptr;
    uv_os_fd_t fd = -1;
    const int dup = uv_fileno(c->handle(), &fd) == 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (dup < 0) {
      sl->aborted = true;
      cb(-1);
      advance(c);
      return;
    }
    sl->lent = true;
    cb(dup);
  }

  // ---- closing -----------------------------------------------------------------------------
  // After the last answer: send FIN, then linger reading (and discarding) so the peer gets
  // the answer even if it was still sending a body we refused (no RST on unread data).
  void finish_conn(connection* c) {
    if (c->closing || c->shutting_down) return;
    if (c->out != nullptr && !c->out->empty()) return;  // flush first; on_write comes back
    c->shutting_down = true;
    auto* req = new uv_shutdown_t;
    req->data = c;
    int rc = uv_shutdown(req, c->stream(), [](uv_shutdown_t* r, int st) {
      auto* cc = static_cast<connection*>(r->data);
      delete r;
      if (cc->closing) return;
      impl* s = cc->srv;
      scope sc(s);
      if (st < 0 || cc->eof) {
        s->close_conn(cc);
        return;
      }
      s->start_reading(cc);
    });
    if (rc < 0) {
      delete req;
      close_conn(c);
      return;
    }
    arm_timer(c, uv_now(&loop) + kLingerMs, true);
  }

  void close_conn(connection* c) {
    if (c->closing) return;
    c->closing = true;
    release(c->reserved);
    end_body(c, true, "the client closed the connection before the body ended");
    for (auto& sl : c->pending) {
      sl->conn = nullptr;
      sl->open.store(false);
      // A producer waiting for room learns that there is nobody to write to.
      if (auto wake = std::move(sl->on_drain)) wake();
      sl->on_drain = nullptr;
      // A lender waiting for the socket gets none; one holding it finds it shut down (its
      // duplicate keeps the socket open, so closing ours alone would not stop it).
      if (auto lend = std::move(sl->on_socket)) lend(-1);
      sl->on_socket = nullptr;
      if (sl->lent) {
        uv_os_fd_t fd = -1;
        if (uv_fileno(c->handle(), &fd) == 0) ::shutdown(fd, SHUT_RDWR);
      }
      release(sl->reserved);
    }
    c->pending.clear();
    if (c->out != nullptr) {
      recycle(c->out);
      c->out = nullptr;
    }
    if (c->prev) c->prev->next = c->next;
    else conns = c->next;
    if (c->next) c->next->prev = c->prev;
    --conn_count;
    if (cfg.on_connections) cfg.on_connections(conn_count, false);
    auto closed = [](uv_handle_t* h) {
      auto* cc = static_cast<connection*>(h->data);
      if (--cc->open_handles == 0) delete cc;
    };
    uv_close(c->handle(), closed);
    uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), closed);
  }

  // ---- timers --------------------------------------------------------------------------------
  // One timer per connection, re-armed lazily: moving a deadline later costs nothing (the
  // callback re-checks and re-arms); only an earlier deadline restarts the timer.
  void arm_timer(connection* c, std::uint64_t due, bool force = false) {
    if (c->closing) return;
    if (!force && c->timer_due != 0 && c->timer_due <= due) return;
    c->timer_due = due;
    std::uint64_t now = uv_now(&loop);
    uv_timer_start(&c->timer, on_timer, due > now ? due - now : 0, 0);
  }

  static void on_timer(uv_timer_t* t) {
    auto* c = static_cast<connection*>(t->data);
    impl* s = c->srv;
    scope sc(s);
    c->timer_due = 0;
    std::uint64_t now = uv_now(&s->loop);
    if (c->shutting_down) {
      s->close_conn(c);
      return;
    }
    if (!c->pending.empty() || c->close_after_write || c->stop_reading) {
      // A request in the handler's hands (or an answer being written) never times out.
      s->arm_timer(c, now + s->cfg.idle_timeout.count());
      return;
    }
    if (c->parser.in_message()) {
      std::uint64_t due = c->request_start + (c->parser.in_head() ? s->cfg.head_timeout.count()
                                                                   : s->cfg.request_timeout.count());
      if (now >= due) {
        s->queue_error(c, 408, "request_timeout", "request not received in time");
        s->arm_timer(c, now + s->cfg.idle_timeout.count());
        return;
      }
      s->arm_timer(c, due);
      return;
    }
    std::uint64_t due = c->idle_since + s->idle_limit(c);
    if (now >= due) {
      s->close_conn(c);
      return;
    }
    s->arm_timer(c, due);
  }

  // ---- shutdown ------------------------------------------------------------------------------
  static void on_signal(uv_signal_t* h, int) {
    auto* s = static_cast<impl*>(h->data);
    scope sc(s);
    s->begin_shutdown();
  }

  void begin_shutdown() {
    if (stopping) return;
    stopping = true;
    if (listening) {
      listening = false;
      uv_close(reinterpret_cast<uv_handle_t*>(&listener), nullptr);
    }
    for (connection* c = conns; c != nullptr;) {
      connection* next = c->next;
      if (c->pending.empty() && !c->close_after_write) {
        close_conn(c);  // idle, or a request only partly received
      } else {
        c->stop_reading = true;
        stop_read(c);
        c->close_after_write = true;
      }
      c = next;
    }
    grace_started = true;
    uv_timer_start(&grace_timer, on_grace, static_cast<std::uint64_t>(cfg.shutdown_grace.count()), 0);
  }

  static void on_grace(uv_timer_t* t) {
    auto* s = static_cast<impl*>(t->data);
    scope sc(s);
    for (connection* c = s->conns; c != nullptr;) {
      connection* next = c->next;
      s->close_conn(c);
      c = next;
    }
  }

  void maybe_finish_shutdown() {
    if (!stopping || conn_count != 0 || loop_closed) return;
    loop_closed = true;
    uv_timer_stop(&grace_timer);
    uv_close(reinterpret_cast<uv_handle_t*>(&grace_timer), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&accept_turn), nullptr);
    if (signals_started) {
      uv_close(reinterpret_cast<uv_handle_t*>(&sigint), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&sigterm), nullptr);
    }
    {
      std::lock_guard<std::mutex> lk(hub->mu);
      hub->async = nullptr;
      hub->ops.clear();
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&async), nullptr);
  }

  void run() {
    {
      std::lock_guard<std::mutex> lk(hub->mu);
      hub->loop_thread = std::this_thread::get_id();
    }
    if (cfg.handle_signals) {
      uv_signal_init(&loop, &sigint);
      uv_signal_init(&loop, &sigterm);
      sigint.data = sigterm.data = this;
      uv_signal_start(&sigint, on_signal, SIGINT);
      uv_signal_start(&sigterm, on_signal, SIGTERM);
      signals_started = true;
    }
    // A stop() before run() already woke the async handle: it is handled on the first turn.
    uv_run(&loop, UV_RUN_DEFAULT);
  }

  ~impl() {
    if (!loop_closed) {
      // run() never ran (or never finished): close what is open and let the loop settle.
      stopping = true;
      for (connection* c = conns; c != nullptr;) {
        connection* next = c->next;
        close_conn(c);
        c = next;
      }
      if (listening || !uv_is_closing(reinterpret_cast<uv_handle_t*>(&listener)))
        uv_close(reinterpret_cast<uv_handle_t*>(&listener), nullptr);
      maybe_finish_shutdown();
      uv_run(&loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&loop);
    for (auto* b : batch_pool) delete b;
  }
};

server::server(server_config cfg, request_handler handler)
    : impl_(std::make_unique<impl>(std::move(cfg), std::move(handler))) {}

server::~server() = default;

void server::listen() { impl_->listen(); }

std::uint16_t server::port() const { return impl_->bound_port; }

void server::run() { impl_->run(); }

void server::stop() { impl_->hub->push(bridge_op{op_kind::stop, nullptr, {}, {}, {}, {}, {}}); }

}  // namespace shellctl::io::http
