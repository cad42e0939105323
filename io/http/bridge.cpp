#include "io/http/bridge.hpp"

namespace shellctl::io::http {

responder::responder(std::shared_ptr<connection_bridge> b) : bridge_(std::move(b)) {}

void responder::send(response r) const {
  if (bridge_ && bridge_->claim(connection_bridge::kUnanswered, connection_bridge::kSent))
    bridge_->push(op_kind::send, std::move(r));
}

void responder::start_stream(response head, std::function<void()> on_drain) const {
  if (bridge_ && bridge_->claim(connection_bridge::kUnanswered, connection_bridge::kStreaming))
    bridge_->push(op_kind::start_stream, std::move(head), std::move(on_drain));
}

void responder::send_chunk(std::string data) const {
  // An empty chunk would read as the terminating one.
  if (bridge_ && !data.empty() && bridge_->streaming())
    bridge_->push(op_kind::chunk, {}, {}, std::move(data));
}

void responder::end_stream(std::vector<header> trailers) const {
  if (bridge_ && bridge_->claim(connection_bridge::kStreaming, connection_bridge::kFinished))
    bridge_->push(op_kind::end_stream, {}, {}, {}, std::move(trailers));
}

void responder::abort() const {
  if (!bridge_) return;
  int prev = bridge_->state().exchange(connection_bridge::kFinished);
  if (prev != connection_bridge::kFinished && prev != connection_bridge::kSent)
    bridge_->push(op_kind::abort);
}

void responder::lend_socket(response head, std::function<void(int)> on_socket) const {
  if (bridge_ && bridge_->claim(connection_bridge::kUnanswered, connection_bridge::kStreaming))
    bridge_->push_lend(std::move(head), std::move(on_socket));
}

void responder::return_socket(std::uint64_t sent) const {
  if (bridge_ && bridge_->claim(connection_bridge::kStreaming, connection_bridge::kFinished))
    bridge_->push_lend_end(sent);
}

bool responder::connected() const { return bridge_ && bridge_->connected(); }

std::uint64_t responder::stream_acked() const { return bridge_ ? bridge_->acked() : 0; }

void responder::read_body(std::function<void(body_piece)> on_piece) const {
  if (bridge_) bridge_->push_body(op_kind::read_body, std::move(on_piece));
}

void responder::more_body() const {
  if (bridge_) bridge_->push_body(op_kind::more_body);
}

void bridge_hub::push(bridge_op op) {
  std::lock_guard<std::mutex> lk(mu);
  if (async == nullptr) return;  // the loop is gone: the answer has nobody to go to
  if (std::this_thread::get_id() == loop_thread) {
    // On the loop thread (inside the handler, on_drain, ...): no need to wake ourselves;
    // the callback scope settles these before it returns.
    loop_local->push_back(std::move(op));
    return;
  }
  bool wake = ops.empty();       // a non-empty queue already has a wake-up on its way
  ops.push_back(std::move(op));
  if (wake) uv_async_send(async);
}

}  // namespace shellctl::io::http
