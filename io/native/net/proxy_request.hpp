#pragma once
// The two small protocols of a scope's network path
// (docs/native-scopes.md "The network broker"), read strictly and kept pure so that they can be
// fuzzed:
//  - what a job sends the worker's proxy at 127.0.0.1:3128: `CONNECT host:port HTTP/1.x`
//    (an opaque tunnel) or an absolute-form `METHOD http://host[:port]/path HTTP/1.x`
//    request, which is forwarded in origin form. The authority must equal one of the
//    scope's targets (host case-insensitively, port exactly); anything else is refused.
//  - what the worker sends the broker per connection: `DIAL <idx>\n`, answered `OK\n` or
//    `ERR <code>\n`.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::native {

inline constexpr std::size_t kProxyHeadMax = 16 * 1024;  // a request head beyond this: 431

struct proxy_target {
  std::string host;
  std::uint16_t port = 0;
};

struct proxy_request {
  enum class kind { connect, http } what = kind::connect;
  std::string host;
  std::uint16_t port = 0;
  // For http: the head to send on, its request line in origin form (the rest unchanged).
  std::string forward_head;
};

struct proxy_refusal {
  int status = 400;  // 400 malformed, 403 not a target, 431 head too large
  std::string reason;
};

// The end of a request head ("\r\n\r\n") in `buf`: its length, or 0 while incomplete.
std::size_t proxy_head_length(std::string_view buf);

// `head` is a complete head (through its blank line). Either the request or why not.
std::optional<proxy_request> parse_proxy_head(std::string_view head, proxy_refusal& why);

// The index of the target `host:port` names, if any.
std::optional<std::size_t> match_target(const std::vector<proxy_target>& targets,
                                        const std::string& host, std::uint16_t port);

// A refusal as the proxy answers it: "HTTP/1.1 <status> <text>\r\n...\r\n\r\n<reason>\n".
std::string proxy_error_response(int status, const std::string& reason);

// "DIAL <idx>\n" (idx a decimal < 16 without leading zeros) → idx.
std::optional<std::size_t> parse_dial_line(std::string_view line);

}  // namespace shellctl::io::native
