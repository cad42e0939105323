// io/http/access_log: which client request ids are kept, and the two line formats.
#include <doctest/doctest.h>

#include <set>

#include "io/http/access_log.hpp"

namespace http = shellctl::io::http;

TEST_CASE("a client's X-Request-Id is kept only as a plain token") {
  CHECK(http::acceptable_request_id("abc-123_x.y:z"));
  CHECK(http::acceptable_request_id(std::string(128, 'a')));
  CHECK_FALSE(http::acceptable_request_id(std::string(129, 'a')));
  CHECK_FALSE(http::acceptable_request_id(""));
  for (const char* bad : {"a b", "a\nb", "a\"b", "a\\b", "ü", "a{b}"}) CHECK_FALSE(http::acceptable_request_id(bad));
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(http::new_request_id());
  CHECK(ids.size() == 1000);
  CHECK(http::acceptable_request_id(*ids.begin()));
}

TEST_CASE("lines: JSON with the fields named, text for a terminal") {
  http::access_entry e{"id-1", "POST", "/v1/jobs/{job_id}/wait", "ab\"c", 200, 1500};
  std::string out;
  http::append_access_line(out, http::log_format::json, e, 1764633600123456);
  CHECK(out ==
        "{\"time\":\"2025-12-02T00:00:00.123Z\",\"level\":\"info\",\"msg\":\"request\","
        "\"request_id\":\"id-1\",\"method\":\"POST\",\"route\":\"/v1/jobs/{job_id}/wait\","
        "\"status\":200,\"duration_ms\":1.500,\"job_id\":\"ab\\\"c\"}\n");
  out.clear();
  http::append_access_line(out, http::log_format::text, e, 1764633600123456);
  CHECK(out == "2025-12-02T00:00:00.123Z request id-1 POST /v1/jobs/{job_id}/wait 200 1.500ms job=\"ab\\\"c\"\n");
  e.job_id.clear();
  out.clear();
  http::append_access_line(out, http::log_format::json, e, 0);
  CHECK(out.find("\"job_id\":") == std::string::npos);
}
