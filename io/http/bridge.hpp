#pragma once
// The libuv↔CAF bridge: the one piece of state shared across threads in the HTTP front.
//
//   * bridge_hub is a mutex-guarded vector of operations plus a uv_async_t. Any thread
//     pushes and wakes the loop; the loop swaps the whole vector out on every wake-up
//     (uv_async_send coalesces wake-ups, so one wake-up may carry many operations). Once
//     the loop has finished, the hub is marked closed and later pushes are dropped; the
//     hub itself is kept alive by shared_ptr from every outstanding responder, so a late
//     answer never touches freed memory.
//   * The per-request `slot` is owned by shared_ptr from the connection's queue and from
//     the responder; its fields are touched only on the loop thread, except `open`
//     (atomic, read by responder::connected()). When a connection closes it clears
//     slot->conn, so answers for it are discarded.
//   * connection_bridge is what a responder holds: it claims the one answer (first send or
//     start_stream wins) and, destroyed unanswered, answers 500 itself.
// Internal to io/http (server.cpp and bridge.cpp).
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/http/server.hpp"

namespace shellctl::io::http {

struct connection;

// The loop side of one request. Loop-thread only, except `open`.
struct slot {
  enum class state { waiting, ready, streaming, done };
  connection* conn = nullptr;  // nullptr once the connection is gone
  std::atomic<bool> open{true};
  state st = state::waiting;
  bool head_request = false;  // HEAD: answer without body
  bool keep_alive = true;
  bool http_1_0 = false;
  bool close_after = false;  // answer is a front error: close after it
  bool aborted = false;
  std::size_t reserved = 0;  // request bytes counted against the buffer budget until answered
  // For the answer's X-Request-Id and the access log (access_log.hpp); loop thread only.
  std::string request_id, method = "-", route = "-", job_id;
  std::uint64_t started_ns = 0;  // uv_hrtime() when the request was dispatched
  response resp;  // ready: the answer; streaming: the head until written
  // Streaming state.
  bool head_written = false;
  // A sized stream (response::stream_length): its length, and the bytes queued so far.
  std::optional<std::uint64_t> sized;
  std::uint64_t sized_queued = 0;
  bool ended = false;
  bool drain_armed = false;
  std::function<void()> on_drain;
  // A lent socket (responder::lend_socket): asked for, handed over (until the body's end).
  std::function<void(int)> on_socket;
  bool lend_wanted = false;
  bool lent = false;
  std::vector<std::string> chunks;  // arrived before this slot reached the front
  std::vector<header> trailers;
  std::atomic<std::uint64_t> acked{0};  // stream bytes whose writes completed (any thread reads)
  // A streamed request body (request::stream_body).
  bool body_streamed = false;
  bool body_wanted = false;  // the consumer asked for the next piece
  bool body_ended = false;
  bool body_failed = false;
  std::string body_queue;  // received, not yet handed out
  std::string body_error;
  std::function<void(body_piece)> on_body;
};

enum class op_kind { send, start_stream, chunk, end_stream, abort, dropped, stop, read_body, more_body,
                     lend, lend_end };

struct bridge_op {
  op_kind kind;
  std::shared_ptr<slot> target;
  response resp;
  std::function<void()> on_drain;
  std::string data;
  std::vector<header> trailers;
  std::function<void(body_piece)> on_body;
  std::function<void(int)> on_socket = {};
  std::uint64_t count = 0;
};

// The one cross-thread queue (see the comment at the top of this file).
struct bridge_hub {
  std::mutex mu;
  std::vector<bridge_op> ops;  // guarded by mu
  uv_async_t* async = nullptr;  // guarded by mu; nullptr once the loop is gone
  std::thread::id loop_thread;  // guarded by mu; the thread inside run()
  // Loop-thread use only: where answers given on the loop thread itself go (the local
  // fast path; no wake-up needed).
  std::vector<bridge_op>* loop_local = nullptr;

  void push(bridge_op op);
};

class connection_bridge {
 public:
  connection_bridge(std::shared_ptr<bridge_hub> hub, std::shared_ptr<slot> s)
      : hub_(std::move(hub)), slot_(std::move(s)) {}
  ~connection_bridge() {
    // Dropped without an answer: the client must not hang (500), and a stream that never
    // ended is cut off rather than left open.
    int st = state_.load();
    if (st == kUnanswered) push(op_kind::dropped);
    else if (st == kStreaming) push(op_kind::abort);
  }

  static constexpr int kUnanswered = 0, kSent = 1, kStreaming = 2, kFinished = 3;

  bool claim(int from, int to) { return state_.compare_exchange_strong(from, to); }
  bool streaming() const { return state_.load() == kStreaming; }
  bool connected() const { return slot_->open.load(std::memory_order_relaxed); }
  std::uint64_t acked() const { return slot_->acked.load(); }
  void push(op_kind k, response r = {}, std::function<void()> drain = {}, std::string data = {},
            std::vector<header> trailers = {}) {
    hub_->push(bridge_op{k, slot_, std::move(r), std::move(drain), std::move(data),
                         std::move(trailers), {}});
  }
  void push_body(op_kind k, std::function<void(body_piece)> on_piece = {}) {
    bridge_op op{k, slot_, {}, {}, {}, {}, std::move(on_piece)};
    hub_->push(std::move(op));
  }
  void push_lend(response head, std::function<void(int)> on_socket) {
    bridge_op op{op_kind::lend, slot_, std::move(head), {}, {}, {}, {}};
    op.on_socket = std::move(on_socket);
    hub_->push(std::move(op));
  }
  void push_lend_end(std::uint64_t sent) {
    bridge_op op{op_kind::lend_end, slot_, {}, {}, {}, {}, {}};
    op.count = sent;
    hub_->push(std::move(op));
  }
  std::atomic<int>& state() { return state_; }

 private:
  std::shared_ptr<bridge_hub> hub_;
  std::shared_ptr<slot> slot_;
  std::atomic<int> state_{kUnanswered};
};

}  // namespace shellctl::io::http
