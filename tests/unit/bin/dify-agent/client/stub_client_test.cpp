// bin/dify-agent/stub_client: the structured and legacy error decoding (docs/dify-agent.md).
#include <doctest/doctest.h>

#include "bin/dify-agent/local/mime_types.hpp"
#include "bin/dify-agent/client/stub_client.hpp"

using namespace shellctl::dify_agent;

TEST_CASE("structured errors") {
  CHECK(structured_error(500, "plain text") == "HTTP 500: plain text");
  CHECK(structured_error(404, "{\"detail\":\"not found\"}") == "HTTP 404: not found");
  CHECK(structured_error(409, "{\"detail\":{\"code\":\"busy\",\"message\":\"try later\"}}") == "HTTP 409: try later");
  CHECK(structured_error(409, "{\"detail\":{\"code\":\"busy\"}}") == "HTTP 409: {\"code\":\"busy\"}");
  CHECK(structured_error(422, "{\"detail\":[1,2]}") == "HTTP 422: {\"detail\":[1,2]}");
  CHECK(structured_error(500, "{\"detail\":null}") == "HTTP 500: ");
  CHECK(structured_error(401, "{\"detail\":{\"code\":\"agent_stub_authorization_expired\",\"message\":\"x\"}}") ==
        "HTTP 401: Agent Stub authorization expired after 5 minutes; the authorization in this "
        "process will not refresh automatically; start a new shell tool call and retry the command");
}

TEST_CASE("legacy errors") {
  CHECK(legacy_error("drive commit", 400, "{\"detail\":\"bad key\"}") ==
        "agent stub drive commit failed (HTTP 400): bad key");
  CHECK(legacy_error("drive commit", 400, "{\"detail\":{\"b\":1,\"a\":\"x\"}}") ==
        "agent stub drive commit failed (HTTP 400): map[a:x b:1]");
  CHECK(legacy_error("drive commit", 502, "gateway") == "agent stub drive commit failed (HTTP 502): gateway");
}

TEST_CASE("MIME guesses as Go's mime package makes them, parameters removed") {
  CHECK(guess_mime_type("report.pdf") == "application/pdf");
  CHECK(guess_mime_type("page.HTML") == "text/html");
  CHECK(guess_mime_type("data.json") == "application/json");
  CHECK(guess_mime_type("noext") == "application/octet-stream");
  CHECK(guess_mime_type("x.unknownext") == "application/octet-stream");
  CHECK(guess_mime_type("notes.txt") == "text/plain");  // from the system's database
}
