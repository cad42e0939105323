#pragma once
// One HTTP exchange of `dify-agent`, through libcurl (TLS included). Bodies may be streamed
// both ways: a request body pulled from a source as curl sends it (chunked, no length) and
// a response body pushed into a sink as it arrives, so a 200 MB upload or a home archive
// is never held in memory. SIGINT/SIGTERM (see cancel_on_signals) abort the exchange at
// once. Never follows redirects: a signed URL or the bearer token must not travel further.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shellctl::dify_agent {

// Installs SIGINT/SIGTERM handlers that make every running and later exchange fail as
// cancelled (async-signal-safe: they only set a flag curl's progress callback reads).
void cancel_on_signals();
bool cancelled();

struct http_request {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent when `source` is empty and method takes a body
  // Streamed body: fills up to `cap` bytes, returns the count, 0 at the end, -1 on failure.
  std::function<std::ptrdiff_t(char* buf, std::size_t cap)> source;
  long timeout_ms = 0;                       // whole exchange; 0: none
  std::size_t max_body = SIZE_MAX;           // response bytes kept; more ends with too_large
  // Streamed response instead of `body` (an answer with status >= 400 still goes to `body`).
  std::function<bool(const char*, std::size_t)> sink;
  std::string progress_label;                // non-empty: progress on a terminal stderr
};

enum class transfer_outcome { ok, transport, timed_out, cancelled, too_large, sink_failed, source_failed };

struct http_response {
  transfer_outcome outcome = transfer_outcome::transport;
  long status = 0;
  std::string body;  // up to max_body bytes (when no sink)
};

http_response perform(const http_request& req);

}  // namespace shellctl::dify_agent
