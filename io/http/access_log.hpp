#pragma once
// One line per answered request (issue: operations logs): when, the request id, method,
// route pattern, status, duration and job id, as text for a terminal or as a JSON object
// per line for a log collector. Never the token, never a body: only what is named here.
// The request id is the client's X-Request-Id when it is a plain token, else generated;
// the server echoes it on the answer.
#include <cstdint>
#include <string>
#include <string_view>

#include "io/log/log_line.hpp"

namespace shellctl::io::http {

using log_format = io::log::format;

struct access_entry {
  std::string request_id;
  std::string method;   // "-" when the request line never parsed
  std::string route;    // the pattern ("/v1/jobs/{job_id}/wait"), or "-" for none
  std::string job_id;   // "" when the route has none
  int status = 0;
  std::uint64_t duration_us = 0;
};

// A client's X-Request-Id is kept when it is 1–128 characters of [A-Za-z0-9._:-] (so a
// log line cannot be split or forged through it); anything else is replaced.
bool acceptable_request_id(std::string_view id);

// A fresh id: 16 lower-case hex digits, unique within the process.
std::string new_request_id();

// Appends the entry's line (with its newline) to `out`; `unix_us` is the wall time.
void append_access_line(std::string& out, log_format f, const access_entry& e, std::int64_t unix_us);

}  // namespace shellctl::io::http
