#pragma once
// The Agent Stub connection settings of `dify-agent` (docs/dify-agent.md): the base URL and
// the bearer JWE from the environment, checked when a command runs, never while help is
// shown. The URL rules and their messages are the original's (Go's net/url semantics).
#include <string>

namespace shellctl::dify_agent {

struct environment {
  std::string base_url;  // normalized: <scheme>://<host[:port]>/agent-stub
  std::string jwe;
};

// Both variables set and non-empty, untrimmed (pre-dispatch's check before printing help).
bool has_environment();

// Reads, trims and validates; throws cli_error with the original's message.
environment read_environment();

// Whether Go's url.Parse accepts `url` (what http.NewRequest refuses a signed URL for).
bool go_url_parses(const std::string& url);

// `raw` validated and normalized; throws cli_error("<reason>") without the variable name.
std::string parse_endpoint(const std::string& raw);

}  // namespace shellctl::dify_agent
