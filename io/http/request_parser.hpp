#pragma once
// The llhttp wrapper: bytes in, complete requests (or one error) out. No sockets, no
// clock, so the server, the unit tests and the fuzzer all drive it the same way.
//
//   request_parser p{limits};
//   while (len > 0) {
//     auto r = p.feed(data, len);
//     data += r.consumed; len -= r.consumed;
//     if (r.ev == event::request) handle(p.take());
//     else if (r.ev == event::head) decide on p.head() before any body byte is read
//                                   (and maybe send "100 Continue" if p.expects_continue()),
//                                   or call p.stream_body() to take the body piecewise
//                                   (take_piece() after each feed) with no size limit;
//     else if (r.ev == event::error) { answer p.error(); close; }
//   }
//
// `feed` stops right after each complete request, so a caller can stop reading when it
// has too many requests in flight and keep the rest of the bytes for later.
#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/http/server.hpp"

namespace shellctl::io::http {

struct parser_limits {
  std::size_t max_body_bytes = 64u << 20;    // 413 above
  std::size_t max_header_bytes = 64u << 10;  // 431 above (whole header block, or trailers)
  std::size_t max_request_line = 16u << 10;  // 414 above
};

// What the front answers when a request cannot be parsed (decision D13 envelope).
struct parse_error {
  int status = 400;
  std::string_view code = "bad_request";
  std::string message;
};

class request_parser {
 public:
  enum class event {
    need_more,  // every byte consumed, no complete request yet
    head,       // a body follows; request line and headers are complete, no body byte
                // consumed yet: see head()
    request,    // a complete request is ready: take() it
    error,      // error() tells what to answer; the parser stays failed
  };
  struct result {
    event ev;
    std::size_t consumed;  // bytes of the input used; feed the rest again
  };

  explicit request_parser(parser_limits limits = {});
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  result feed(const char* data, std::size_t len);
  result feed(std::string_view s) { return feed(s.data(), s.size()); }

  // The request completed by the last feed (call once after event::request).
  request take();
  // After event::head: the request so far (method, target, path, query, headers; no body).
  request& head() { return current_; }
  // After event::head: "Expect: 100-continue" with a body to come.
  bool expects_continue() const { return expect_pending_; }
  // After event::head: the announced Content-Length (0 when none, or chunked).
  std::uint64_t content_length() const { return content_length_; }
  // After event::head: the announced length is above the body limit. Unless the body is
  // streamed, the next feed (even of no bytes) fails with 413.
  bool body_too_large() const { return too_large_; }
  // After event::head: this request's body is not collected into request::body but handed
  // out piece by piece (take_piece), and no body limit applies to it.
  void stream_body() { streaming_ = true; }
  bool streaming_body() const { return streaming_ && in_message_; }
  // The body bytes of a streamed body parsed since the last call.
  std::string take_piece() { return std::move(piece_); }
  // Body bytes of the request in progress received so far.
  std::size_t body_bytes() const { return body_bytes_; }
  // Of the request last reported: may the connection carry another request after it?
  // False for HTTP/1.0 without keep-alive, "Connection: close", and upgrade requests.
  bool keep_alive() const { return keep_alive_; }
  // Of the request last reported: HTTP/1.0 (no chunked responses possible).
  bool http_1_0() const { return http_1_0_; }
  // Some bytes of a request have arrived and it is not complete yet.
  bool in_message() const { return in_message_; }
  // A request has begun and its head (request line and headers) is not complete yet.
  bool in_head() const { return in_message_ && !headers_done_; }
  // After the last request (an upgrade or CONNECT), further bytes are not HTTP: ignored.
  bool finished() const { return finished_; }
  bool failed() const { return failed_; }
  const parse_error& error() const { return error_; }

  struct callbacks;  // the llhttp_settings_t glue (request_parser.cpp)

 private:
  int fail(int status, std::string_view code, std::string message);
  void finish_header();

  llhttp_t parser_;
  parser_limits limits_;
  request current_;
  std::string field_;
  std::string value_;
  std::size_t header_bytes_ = 0;  // header block (or trailer block) so far
  std::size_t head_bytes_ = 0;    // raw bytes fed while the head was incomplete
  std::size_t body_bytes_ = 0;
  bool in_message_ = false;
  bool url_done_ = false;
  bool headers_done_ = false;  // later header callbacks are trailers
  bool have_field_ = false;
  bool ready_ = false;
  bool head_ready_ = false;
  bool expect_pending_ = false;
  std::uint64_t content_length_ = 0;
  bool keep_alive_ = true;
  bool http_1_0_ = false;
  bool too_large_ = false;
  bool streaming_ = false;
  std::string piece_;
  bool failed_ = false;
  bool finished_ = false;
  bool error_set_ = false;
  parse_error error_;
};

// Splits a request-target into path and query; absolute-form targets
// ("http://host/p?q") give their path ("/p"), as Go's server routes them.
void split_target(std::string_view target, std::string& path, std::string& query);

}  // namespace shellctl::io::http
