#pragma once
// The supervisor's calls to a scope's worker over its control socket
// (docs/native-scopes.md "The scope worker"): one HTTP/1.1 exchange over the worker's unix
// socket through libcurl, with the worker control token as bearer. Blocking (for a detached
// actor or a thread of its own). The answer is relayed as it came: status, content type and
// body.
#include <string>

namespace shellctl::io::native {

struct worker_call {
  std::string socket_path;
  std::string control_token;
  std::string method = "GET";
  std::string target;  // "/v1/jobs/run?x=y": path and query as the worker serves them
  std::string body;    // sent with POST (and when non-empty)
  long timeout_ms = 10000;
};

struct worker_answer {
  bool reached = false;  // false: no connection, or it broke before a whole answer
  std::string error;     // why not reached
  long status = 0;
  std::string content_type;
  std::string body;
};

worker_answer call_worker(const worker_call& c);

}  // namespace shellctl::io::native
