#include "io/http/request_parser.hpp"

#include <algorithm>

#include "io/http/wire.hpp"

namespace shellctl::io::http {

const std::string* request::find_header(std::string_view name) const {
  for (const auto& h : headers)
    if (wire::iequals(h.name, name)) return &h.value;
  return nullptr;
}

void split_target(std::string_view target, std::string& path, std::string& query) {
  std::string_view t = target;
  auto q = t.find('?');
  std::string_view before = t.substr(0, q);
  query.assign(q == std::string_view::npos ? std::string_view{} : t.substr(q + 1));
  // Absolute-form (RFC 9112 3.2.2): route by the path part, as Go does.
  auto scheme = before.find("://");
  if (scheme != std::string_view::npos && before.substr(0, 1) != "/") {
    auto slash = before.find('/', scheme + 3);
    before = slash == std::string_view::npos ? std::string_view{"/"} : before.substr(slash);
  }
  path.assign(before);
}

namespace {

request_parser& self(llhttp_t* p) { return *static_cast<request_parser*>(p->data); }

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return v;
}

}  // namespace

// Static member functions so they may touch the parser's private state.
struct request_parser::callbacks {
  static int on_message_begin(llhttp_t* p) {
    auto& s = self(p);
    s.current_ = request{};
    s.field_.clear();
    s.value_.clear();
    s.header_bytes_ = 0;
    s.head_bytes_ = 0;
    s.body_bytes_ = 0;
    s.content_length_ = 0;
    s.in_message_ = true;
    s.url_done_ = false;
    s.headers_done_ = false;
    s.have_field_ = false;
    s.expect_pending_ = false;
    s.too_large_ = false;
    s.streaming_ = false;
    return 0;
  }

  static int on_url(llhttp_t* p, const char* at, std::size_t len) {
    auto& s = self(p);
    if (s.current_.target.size() + len > s.limits_.max_request_line)
      return s.fail(414, "uri_too_long", "request line too long");
    s.current_.target.append(at, len);
    return 0;
  }

  static int on_url_complete(llhttp_t* p) {
    self(p).url_done_ = true;
    return 0;
  }

  static int on_header_field(llhttp_t* p, const char* at, std::size_t len) {
    auto& s = self(p);
    s.header_bytes_ += len;
    if (s.header_bytes_ > s.limits_.max_header_bytes)
      return s.fail(431, "headers_too_large", "request header fields too large");
    s.field_.append(at, len);
    return 0;
  }

  static int on_header_field_complete(llhttp_t* p) {
    self(p).have_field_ = true;
    return 0;
  }

  static int on_header_value(llhttp_t* p, const char* at, std::size_t len) {
    auto& s = self(p);
    s.header_bytes_ += len;
    if (s.header_bytes_ > s.limits_.max_header_bytes)
      return s.fail(431, "headers_too_large", "request header fields too large");
    s.value_.append(at, len);
    return 0;
  }

  static int on_header_value_complete(llhttp_t* p) {
    auto& s = self(p);
    // ": " and CRLF count towards the block as they do on the wire.
    s.header_bytes_ += 4;
    if (s.header_bytes_ > s.limits_.max_header_bytes)
      return s.fail(431, "headers_too_large", "request header fields too large");
    s.finish_header();
    return 0;
  }

  static int on_headers_complete(llhttp_t* p) {
    auto& s = self(p);
    auto& r = s.current_;
    if (s.have_field_) s.finish_header();
    s.headers_done_ = true;
    s.header_bytes_ = 0;  // trailers get their own budget
    r.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
    split_target(r.target, r.path, r.query);
    s.http_1_0_ = p->http_major == 1 && p->http_minor == 0;
    s.keep_alive_ = llhttp_should_keep_alive(p) != 0 && !p->upgrade;
    bool chunked = (p->flags & F_CHUNKED) != 0;
    bool has_length = (p->flags & F_CONTENT_LENGTH) != 0;
    // Too large for a collected body: decided after the head (a streamed body has no limit).
    s.too_large_ = has_length && p->content_length > s.limits_.max_body_bytes;
    s.content_length_ = has_length ? p->content_length : 0;
    const std::string* expect = r.find_header("Expect");
    s.expect_pending_ = expect != nullptr && wire::iequals(trim_ows(*expect), "100-continue") &&
                        (chunked || (has_length && p->content_length > 0));
    // Stop before a body: the caller decides (auth, route, budget) before one body byte is
    // buffered (guarantee G5). A request without one completes right away instead.
    if (!chunked && !(has_length && p->content_length > 0)) return 0;
    s.head_ready_ = true;
    return HPE_PAUSED;
  }

  static int on_body(llhttp_t* p, const char* at, std::size_t len) {
    auto& s = self(p);
    s.body_bytes_ += len;
    if (s.streaming_) {
      s.piece_.append(at, len);
      return 0;
    }
    if (s.body_bytes_ > s.limits_.max_body_bytes)
      return s.fail(413, "payload_too_large", "request body too large");
    if (s.current_.body.empty() && s.content_length_ > 0)
      s.current_.body.reserve(std::min<std::uint64_t>(s.content_length_, 1u << 20));
    s.current_.body.append(at, len);
    return 0;
  }

  static int on_message_complete(llhttp_t* p) {
    auto& s = self(p);
    s.in_message_ = false;
    s.ready_ = true;
    // Stop after each request: the caller decides whether to read on.
    return HPE_PAUSED;
  }

  static const llhttp_settings_t* settings() {
    static const llhttp_settings_t st = [] {
      llhttp_settings_t x;
      llhttp_settings_init(&x);
      x.on_message_begin = on_message_begin;
      x.on_url = on_url;
      x.on_url_complete = on_url_complete;
      x.on_header_field = on_header_field;
      x.on_header_field_complete = on_header_field_complete;
      x.on_header_value = on_header_value;
      x.on_header_value_complete = on_header_value_complete;
      x.on_headers_complete = on_headers_complete;
      x.on_body = on_body;
      x.on_message_complete = on_message_complete;
      return x;
    }();
    return &st;
  }
};

request_parser::request_parser(parser_limits limits) : limits_(limits) {
  llhttp_init(&parser_, HTTP_REQUEST, callbacks::settings());
  parser_.data = this;
}

int request_parser::fail(int status, std::string_view code, std::string message) {
  if (!error_set_) {
    error_set_ = true;
    error_.status = status;
    error_.code = code;
    error_.message = std::move(message);
  }
  return HPE_USER;
}

void request_parser::finish_header() {
  if (!headers_done_) {
    header h;
    h.name = std::move(field_);
    h.value.assign(trim_ows(value_));
    current_.headers.push_back(std::move(h));
  }
  // Trailers are parsed and counted against the limit, then dropped: a request has no
  // trailer field, and merging them into the headers would let a body smuggle headers.
  field_.clear();
  value_.clear();
  have_field_ = false;
}

request request_parser::take() { return std::move(current_); }

request_parser::result request_parser::feed(const char* data, std::size_t len) {
  if (failed_) return {event::error, 0};
  if (too_large_ && !streaming_ && in_message_) {
    failed_ = true;
    in_message_ = false;
    fail(413, "payload_too_large", "request body too large");
    return {event::error, 0};
  }
  if (finished_ || len == 0) return {event::need_more, len};
  llhttp_errno_t err = llhttp_execute(&parser_, data, len);
  switch (err) {
    case HPE_OK:
      if (in_message_ && !headers_done_) {
        // Counted per feed so that bytes no callback reports (whitespace, a request line
        // that never ends) still hit a limit.
        head_bytes_ += len;
        if (!url_done_ && head_bytes_ > limits_.max_request_line + 32) {
          failed_ = true;
          fail(414, "uri_too_long", "request line too long");
          return {event::error, len};
        }
        if (head_bytes_ > limits_.max_request_line + limits_.max_header_bytes + 32) {
          failed_ = true;
          fail(431, "headers_too_large", "request header fields too large");
          return {event::error, len};
        }
      }
      return {event::need_more, len};
    case HPE_PAUSED: {
      std::size_t used = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
      llhttp_resume(&parser_);
      if (ready_) {
        ready_ = false;
        head_ready_ = false;
        return {event::request, used};
      }
      if (head_ready_) {
        head_ready_ = false;
        return {event::head, used};
      }
      return {event::need_more, used};
    }
    case HPE_PAUSED_UPGRADE: {
      // CONNECT or "Upgrade:": answered as a plain request; the connection then ends.
      std::size_t used = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
      finished_ = true;
      keep_alive_ = false;
      in_message_ = false;
      if (ready_) {
        ready_ = false;
        return {event::request, used};
      }
      return {event::need_more, len};
    }
    default:
      failed_ = true;
      in_message_ = false;
      if (!error_set_) {
        const char* reason = llhttp_get_error_reason(&parser_);
        fail(400, "bad_request",
             std::string("malformed request: ") + (reason != nullptr ? reason : "parse error"));
      }
      return {event::error, len};
  }
}

}  // namespace shellctl::io::http
