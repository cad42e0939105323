// The supervisor's routes and front check (docs/native-scopes.md "The scope service", unit tier):
// /healthz without a bearer, then the bearer before anything else, then the route: the scope
// routes, the eight ordinary job routes under a scope (and nothing else there), 404 for the
// rest, 405 with Allow for a known path's other methods; each refusal code's status.
#include <doctest/doctest.h>

#include "actors/native/native_edge.hpp"

using namespace shellctl::actors;

namespace {

shellctl::io::http::request req(const std::string& method, const std::string& path, const char* bearer = "t") {
  shellctl::io::http::request r;
  r.method = method;
  r.path = path;
  if (bearer) r.headers.push_back({"Authorization", std::string("Bearer ") + bearer});
  return r;
}

int status_of(const std::variant<shellctl::io::http::response, native_match>& v) {
  if (auto* r = std::get_if<shellctl::io::http::response>(&v)) return r->status;
  return 0;  // handed on
}

}  // namespace

TEST_CASE("the scope routes and the scoped job routes") {
  auto m = match_native("POST", "/v1/test-scopes");
  CHECK((m.result == route_match::kind::found && m.id == native_route::create));
  m = match_native("GET", "/v1/test-scopes/s-1");
  CHECK((m.id == native_route::inspect && m.scope_id == "s-1"));
  m = match_native("DELETE", "/v1/test-scopes/s-1");
  CHECK(m.id == native_route::destroy);
  const std::pair<const char*, const char*> jobs[] = {
      {"POST", "/v1/jobs/run"}, {"GET", "/v1/jobs"}, {"GET", "/v1/jobs/abc"}, {"DELETE", "/v1/jobs/abc"},
      {"POST", "/v1/jobs/abc/wait"}, {"POST", "/v1/jobs/abc/input"}, {"POST", "/v1/jobs/abc/terminate"},
      {"GET", "/v1/jobs/abc/log/tail"}};
  for (const auto& job : jobs) {
    const char* method = job.first;
    const std::string path = job.second;  // clang: doctest's messages cannot capture bindings
    m = match_native(method, "/v1/test-scopes/s-1" + path.substr(3));  // S1: .../jobs/...
    CHECK_MESSAGE(m.result == route_match::kind::found, path);
    CHECK(m.id == native_route::scoped_job);
    CHECK(m.scope_id == "s-1");
    CHECK(m.job_path == path);
  }
  for (const char* path : {"/v1/test-scopes/s/jobs/abc/stream", "/v1/test-scopes/s/snapshot/save",
                           "/v1/test-scopes/s/v1/jobs", "/v1/test-scopes/s/v1/jobs/run",
                           "/v1/test-scopes/s/info", "/v1/test-scopes/s/files/stat", "/v1/test-scopes/s/jobsx",
                           "/v1/test-scopes//jobs", "/v1/test-scopes/", "/v1/jobs", "/v1/jobs/run",
                           "/v1/snapshot/save", "/metrics", "/openapi.json", "/v1/test-scopesx"})
    CHECK_MESSAGE(match_native("GET", path).result == route_match::kind::not_found, path);
  m = match_native("PUT", "/v1/test-scopes/s");
  CHECK(m.result == route_match::kind::method_not_allowed);
  CHECK(m.allow == "DELETE, GET, HEAD");
  CHECK(match_native("GET", "/v1/test-scopes").result == route_match::kind::method_not_allowed);
  m = match_native("PUT", "/v1/test-scopes/s/jobs/abc/wait");
  CHECK(m.result == route_match::kind::method_not_allowed);
  CHECK(m.allow == "POST");
}

TEST_CASE("healthz, then the bearer, then the route") {
  CHECK(status_of(check_at_native_front(req("GET", "/healthz", nullptr), "t", "{}")) == 200);
  CHECK(status_of(check_at_native_front(req("GET", "/nope", nullptr), "t", "{}")) == 401);
  CHECK(status_of(check_at_native_front(req("GET", "/nope", "wrong"), "t", "{}")) == 401);
  CHECK(status_of(check_at_native_front(req("GET", "/nope"), "t", "{}")) == 404);
  CHECK(status_of(check_at_native_front(req("PATCH", "/v1/test-scopes"), "t", "{}")) == 405);
  auto caps = check_at_native_front(req("GET", "/v1/native-test/capabilities"), "t", "{\"x\":1}\n");
  REQUIRE(std::holds_alternative<shellctl::io::http::response>(caps));
  CHECK(std::get<shellctl::io::http::response>(caps).body == "{\"x\":1}\n");
  CHECK(status_of(check_at_native_front(req("GET", "/v1/test-scopes/s"), "t", "{}")) == 0);
}

TEST_CASE("each refusal code has its status and its documented spelling") {
  using shellctl::actors::native_errc;
  using shellctl::actors::native_code_text;
  CHECK(native_status(native_errc::scope_not_found) == 404);
  CHECK(native_status(native_errc::scope_destroyed) == 410);
  CHECK(native_status(native_errc::scope_generation_required) == 400);
  CHECK(native_status(native_errc::scope_generation_mismatch) == 409);
  CHECK(native_status(native_errc::scope_token_required) == 401);
  CHECK(native_status(native_errc::scope_token_invalid) == 403);
  CHECK(native_status(native_errc::capability_digest_mismatch) == 412);
  CHECK(native_status(native_errc::scope_capacity_unavailable) == 503);
  CHECK(native_status(native_errc::scope_cleanup_failed) == 500);
  CHECK(native_status(native_errc::scope_worker_unreachable) == 502);
  CHECK(native_status(native_errc::network_target_denied) == 422);
  CHECK(native_code_text(native_errc::scope_generation_stale) == "scope_generation_stale");
  CHECK(native_code_text(native_errc::storage_unavailable) == "storage_unavailable");
}

TEST_CASE("a refusal travels as a caf::error and reads back; other errors take the fallback") {
  using namespace shellctl::actors;
  const auto e = make_native_error(native_errc::scope_exists, "scope s exists");
  CHECK(is_native_error(e, native_errc::scope_exists));
  CHECK_FALSE(is_native_error(e, native_errc::scope_not_found));
  const auto v = read_native_error(e, native_errc::storage_unavailable);
  CHECK(v.code == native_errc::scope_exists);
  CHECK(v.message == "scope s exists");
  const auto other = read_native_error(caf::make_error(caf::sec::request_receiver_down), native_errc::storage_unavailable);
  CHECK(other.code == native_errc::storage_unavailable);
  const auto r = native_error_response(e, native_errc::storage_unavailable);
  CHECK(r.status == 409);
  CHECK(r.body.find("\"code\":\"scope_exists\"") != std::string::npos);
}
