// bin/dify-agent/environment: the Agent Stub variables and the URL rules (docs/dify-agent.md).
#include <doctest/doctest.h>

#include <cstdlib>

#include "bin/dify-agent/command_tree.hpp"
#include "bin/dify-agent/environment.hpp"

using namespace shellctl::dify_agent;

namespace {

std::string endpoint_or_error(const std::string& url) {
  try {
    return parse_endpoint(url);
  } catch (const cli_error& e) {
    return "error: " + e.message;
  }
}

std::string read_or_error() {
  try {
    auto e = read_environment();
    return e.base_url + " " + e.jwe;
  } catch (const cli_error& e) {
    return "error: " + e.message;
  }
}

}  // namespace

TEST_CASE("URL rules, in the original's order and words") {
  struct row {
    const char* url;
    const char* expect;
  };
  const row rows[] = {
      {"http://localhost:8080", "http://localhost:8080/agent-stub"},
      {"http://localhost:8080/", "http://localhost:8080/agent-stub"},
      {"http://localhost:8080/agent-stub", "http://localhost:8080/agent-stub"},
      {"  https://stub.example/agent-stub//  ", "https://stub.example/agent-stub"},
      {"HTTP://h:1", "http://h:1/agent-stub"},
      {"http://[::1]:9/", "http://[::1]:9/agent-stub"},
      {"http://h?", "http://h/agent-stub"},  // an empty query is no query (Go's ForceQuery)
      {"", "error: agent stub URL must not be empty"},
      {"   ", "error: agent stub URL must not be empty"},
      {"grpc://localhost:9090", "error: agent stub URL must use http or https"},
      {"localhost:8080", "error: agent stub URL must use http or https"},
      {"/agent-stub", "error: agent stub URL must use http or https"},
      {"http:///agent-stub", "error: agent stub URL must include a host"},
      {"http://localhost:8080?foo=bar", "error: agent stub URL must not include a query string or fragment"},
      {"http://localhost:8080#frag", "error: agent stub URL must not include a query string or fragment"},
      {"http://user:pw@localhost:8080", "error: agent stub URL must not include user info"},
      {"http://localhost:8080/other-path", "error: HTTP agent stub API base URL path must be empty or /agent-stub"},
      {"http://h:port", "error: invalid URL: parse \"http://h:port\": invalid port \":port\" after host"},
      {"http://[::1", "error: invalid URL: parse \"http://[::1\": missing ']' in host"},
      {":8080", "error: invalid URL: parse \":8080\": missing protocol scheme"},
      {"http://a b", "error: invalid URL: parse \"http://a b\": invalid character \" \" in host name"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.url);
    CHECK(endpoint_or_error(r.url) == r.expect);
  }
}

TEST_CASE("environment: trimmed values, missing names in order, the variable named in URL errors") {
  ::unsetenv("DIFY_AGENT_STUB_API_BASE_URL");
  ::unsetenv("DIFY_AGENT_STUB_AUTH_JWE");
  CHECK(read_or_error() == "error: missing required Agent Stub environment variables: "
                           "DIFY_AGENT_STUB_API_BASE_URL, DIFY_AGENT_STUB_AUTH_JWE");
  CHECK_FALSE(has_environment());
  ::setenv("DIFY_AGENT_STUB_AUTH_JWE", "  jwe  ", 1);
  CHECK(read_or_error() == "error: missing required Agent Stub environment variables: DIFY_AGENT_STUB_API_BASE_URL");
  ::setenv("DIFY_AGENT_STUB_API_BASE_URL", " ", 1);
  CHECK(has_environment());  // the raw check of pre-dispatch does not trim
  CHECK(read_or_error() == "error: missing required Agent Stub environment variables: DIFY_AGENT_STUB_API_BASE_URL");
  ::setenv("DIFY_AGENT_STUB_API_BASE_URL", "ftp://h", 1);
  CHECK(read_or_error() == "error: invalid DIFY_AGENT_STUB_API_BASE_URL: agent stub URL must use http or https");
  ::setenv("DIFY_AGENT_STUB_API_BASE_URL", " http://127.0.0.1:9/ ", 1);
  CHECK(read_or_error() == "http://127.0.0.1:9/agent-stub jwe");
}
