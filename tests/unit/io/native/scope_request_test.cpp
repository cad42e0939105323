// The create body's strict reading (docs/native-scopes.md "The scope service", unit tier): exactly
// the table's keys, each of its type and rule; bad JSON 400, everything else 422; the pinned
// limits and refs round-trip through the catalog's text.
#include <doctest/doctest.h>

#include <string>

#include "io/native/scope/scope_request.hpp"

namespace native = shellctl::io::native;

namespace {

constexpr std::int64_t kNow = 1796342400;  // 2026-12-04T00:00:00Z
constexpr std::int64_t kHorizon = 24 * 3600;

const char* kLimits =
    R"({"cpu_millicores":1000,"memory_bytes":536870912,"swap_bytes":0,"pids":256,"disk_bytes":67108864,)"
    R"("input_bytes":1048576,"output_bytes":4194304,"max_jobs":8,"job_wall_seconds":600,"open_files":256,)"
    R"("file_bytes":16777216,"network_bytes":0,"network_connections":0})";

std::string body(const std::string& replace_from = "", const std::string& replace_to = "") {
  std::string b = std::string(R"({"scope_id":"s-1","generation":3,"binding_ref":"bind","base_snapshot_ref":"a/b",)") +
                  R"("input_file_refs":["x.txt","d/y"],"capability_digest":"sha256:ab","deadline":"2026-12-04T12:00:00Z",)" +
                  R"("network_targets":[],"limits":)" + kLimits + "}";
  if (!replace_from.empty()) {
    const auto at = b.find(replace_from);
    REQUIRE(at != std::string::npos);
    b.replace(at, replace_from.size(), replace_to);
  }
  return b;
}

native::request_problem problem(const std::string& b) {
  auto r = native::parse_create_request(b, kNow, kHorizon);
  REQUIRE(std::holds_alternative<native::request_problem>(r));
  return std::get<native::request_problem>(r);
}

}  // namespace

TEST_CASE("a complete body is read into its fields") {
  auto r = native::parse_create_request(body(), kNow, kHorizon);
  REQUIRE(std::holds_alternative<native::create_request>(r));
  const auto& c = std::get<native::create_request>(r);
  CHECK(c.scope_id == "s-1");
  CHECK(c.generation == 3);
  CHECK(c.base_snapshot_ref == "a/b");
  CHECK(c.input_file_refs == std::vector<std::string>{"x.txt", "d/y"});
  CHECK(c.deadline_epoch == kNow + 12 * 3600);
  CHECK(c.limits.max_jobs == 8);
  CHECK(c.limits.memory_bytes == 536870912u);
  CHECK(native::limits_json(c.limits) == kLimits);
  CHECK(native::limits_from_json(kLimits).has_value());
  CHECK(native::refs_from_json(native::refs_json(c.input_file_refs)) == c.input_file_refs);
}

TEST_CASE("bad JSON is 400, anything else wrong is 422 validation_error") {
  for (const char* raw : {"", "{", "[1]", "null", "\"x\"", "{\"scope_id\":}"}) {
    auto p = problem(raw);
    CHECK_MESSAGE(p.status == 400, raw);
    CHECK(p.code == "invalid_request");
  }
  const std::pair<const char*, const char*> cases[] = {
      {"\"scope_id\":\"s-1\"", "\"scope_id\":\"S-1\""},
      {"\"scope_id\":\"s-1\"", "\"scope_id\":\"-s\""},
      {"\"scope_id\":\"s-1\"", "\"scope_id\":\"s-1\",\"extra\":1"},
      {"\"scope_id\":\"s-1\",", ""},
      {"\"scope_id\":\"s-1\"", "\"scope_id\":\"s-1\",\"scope_id\":\"s-2\""},
      {"\"scope_id\":\"s-1\"", "\"Scope_Id\":\"s-1\""},
      {"\"generation\":3", "\"generation\":0"},
      {"\"generation\":3", "\"generation\":9007199254740992"},
      {"\"generation\":3", "\"generation\":3.0"},
      {"\"generation\":3", "\"generation\":\"3\""},
      {"\"binding_ref\":\"bind\"", "\"binding_ref\":\"\""},
      {"\"binding_ref\":\"bind\"", "\"binding_ref\":null"},
      {"\"base_snapshot_ref\":\"a/b\"", "\"base_snapshot_ref\":\"a/../b\""},
      {"\"base_snapshot_ref\":\"a/b\"", "\"base_snapshot_ref\":\"/a\""},
      {"[\"x.txt\",\"d/y\"]", "[\"x.txt\",\"x.txt\"]"},
      {"[\"x.txt\",\"d/y\"]", "[\"x.txt\",7]"},
      {"\"2026-12-04T12:00:00Z\"", "\"2026-12-03T23:59:59Z\""},   // past
      {"\"2026-12-04T12:00:00Z\"", "\"2026-12-05T00:00:01Z\""},   // beyond the horizon
      {"\"2026-12-04T12:00:00Z\"", "\"2026-12-04 12:00:00\""},
      {"\"network_targets\":[]", "\"network_targets\":[{\"host\":\"h\"}]"},
      {"\"network_targets\":[]", "\"network_targets\":[\"h:1\"]"},
      {"\"network_targets\":[]", "\"network_targets\":{}"},
      {"\"max_jobs\":8", "\"max_jobs\":65"},
      {"\"max_jobs\":8", "\"max_jobs\":-1"},
      {"\"pids\":256,", ""},
      {"\"pids\":256", "\"pids\":256,\"more\":1"},
      {"\"disk_bytes\":67108864", "\"disk_bytes\":0"},
      {"\"memory_bytes\":536870912", "\"memory_bytes\":100000000"},
      {"\"network_bytes\":0", "\"network_bytes\":5"},
  };
  for (const auto& c : cases) {
    // Named copies: clang does not let doctest's message lambda capture structured bindings.
    const std::string from = c.first, to = c.second;
    auto p = problem(body(from, to));
    CHECK_MESSAGE(p.status == 422, (from + " -> " + to + ": " + p.message));
    CHECK(p.code == "validation_error");
  }
}

TEST_CASE("network targets: each host and port, none twice, network limits then required") {
  const std::string with = body("\"network_targets\":[]", R"("network_targets":[{"host":"a.example","port":443}])");
  CHECK(problem(with).message.find("network") != std::string::npos);  // limits still 0
  std::string ok = with;
  ok.replace(ok.find("\"network_bytes\":0"), 17, "\"network_bytes\":5");
  ok.replace(ok.find("\"network_connections\":0"), 23, "\"network_connections\":1");
  auto r = native::parse_create_request(ok, kNow, kHorizon);
  REQUIRE(std::holds_alternative<native::create_request>(r));
  CHECK(std::get<native::create_request>(r).network_targets.size() == 1);
  CHECK(std::get<native::create_request>(r).network_targets[0].port == 443);
  std::string twice = ok;
  twice.replace(twice.find("}]"), 2, R"(},{"host":"a.example","port":443}])");
  CHECK(problem(twice).code == "validation_error");
  std::string port0 = ok;
  port0.replace(port0.find("443"), 3, "0");
  CHECK(problem(port0).code == "validation_error");
}
