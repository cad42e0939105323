// The route table (D11), the front's check (D2 bearer), Go's %q quoting used in messages.
#include <doctest/doctest.h>
#include <signal.h>

#include "actors/edge/front.hpp"
#include "actors/edge/requests.hpp"
#include "actors/edge/views.hpp"
#include "io/http/sse.hpp"
#include "actors/protocol/routes.hpp"

using namespace shellctl::actors;
using kind = route_match::kind;

TEST_CASE("the route table (docs/api.md \"Routes\")") {
  struct row {
    const char* method;
    const char* path;
    kind k;
    route id;
    const char* job;
  } rows[] = {
      {"GET", "/healthz", kind::found, route::healthz, ""},
      {"HEAD", "/healthz", kind::found, route::healthz, ""},
      {"POST", "/v1/jobs/run", kind::found, route::run, ""},
      {"GET", "/v1/jobs/run", kind::found, route::status, "run"},
      {"DELETE", "/v1/jobs/run", kind::found, route::remove, "run"},
      {"POST", "/v1/jobs/abc/wait", kind::found, route::wait, "abc"},
      {"GET", "/v1/jobs/abc/log/tail", kind::found, route::tail, "abc"},
      {"GET", "/v1/jobs/abc", kind::found, route::status, "abc"},
      {"DELETE", "/v1/jobs/abc", kind::found, route::remove, "abc"},
      {"GET", "/v1/jobs", kind::found, route::list, ""},
      {"POST", "/v1/jobs/abc/input", kind::found, route::input, "abc"},
      {"POST", "/v1/jobs/abc/terminate", kind::found, route::terminate, "abc"},
      {"POST", "/v1/jobs/abc/signal", kind::found, route::signal, "abc"},
      {"POST", "/v1/jobs/abc/resize", kind::found, route::resize, "abc"},
      {"GET", "/v1/info", kind::found, route::info, ""},
      {"GET", "/v1/jobs/abc/activity", kind::found, route::activity, "abc"},
      {"POST", "/v1/info", kind::method_not_allowed, route::healthz, ""},
      {"GET", "/v1/ports", kind::found, route::ports, ""},
      {"DELETE", "/v1/ports", kind::method_not_allowed, route::healthz, ""},
      {"GET", "/v1/jobs/abc/signal", kind::method_not_allowed, route::healthz, ""},
  };
  for (auto& r : rows) {
    CAPTURE(r.method);
    CAPTURE(r.path);
    auto m = match_route(r.method, r.path);
    CHECK(m.result == r.k);
    CHECK(m.id == r.id);
    CHECK(m.job_id == r.job);
  }
}

TEST_CASE("the route table (OpenAPI's source) and the matcher agree, entry by entry") {
  CHECK(route_table().size() == 26);
  for (const auto& e : route_table()) {
    std::string path = e.pattern;
    const auto at = path.find("{job_id}");
    if (at != std::string::npos) path.replace(at, 8, "0123456789abcdef");
    CAPTURE(path);
    const auto m = match_route(e.method, path);
    CHECK(m.result == kind::found);
    CHECK(m.id == e.id);
    CHECK(m.job_id == (at != std::string::npos ? "0123456789abcdef" : ""));
  }
  // Every route of the enum is in the table exactly once.
  for (int r = 0; r <= static_cast<int>(route::file_move); ++r) {  // file_move is the last
    int n = 0;
    for (const auto& e : route_table()) n += static_cast<int>(e.id) == r;
    CHECK(n == 1);
  }
}

TEST_CASE("segments are unescaped after splitting, like Go's ServeMux") {
  auto m = match_route("GET", "/v1/jobs/%61b%63");
  CHECK(m.result == kind::found);
  CHECK(m.job_id == "abc");
  m = match_route("GET", "/v1/jobs/a%2Fb");
  CHECK(m.result == kind::found);
  CHECK(m.job_id == "a/b");
  CHECK(match_route("GET", "/v1/jobs/%2e%2e").job_id == "..");
  CHECK(match_route("GET", "/%68ealthz").result == kind::found);
  CHECK(match_route("GET", "/v1/jobs/%zz").job_id == "%zz");
}

TEST_CASE("unknown paths are 404, wrong methods 405 with Allow") {
  for (auto p : {"/", "", "/v1", "/v1/jobs/", "/v1/jobs/a/b", "/v1/jobs/a/log", "/healthz/",
                 "/v1/snapshot/x", "/v1/prepare", "v1/jobs"})
    CHECK(match_route("GET", p).result == kind::not_found);
  auto m = match_route("PUT", "/healthz");
  CHECK(m.result == kind::method_not_allowed);
  CHECK(m.allow == "GET, HEAD");
  m = match_route("PUT", "/v1/jobs/run");
  CHECK(m.result == kind::method_not_allowed);
  CHECK(m.allow == "GET, HEAD, DELETE, POST");
  CHECK(match_route("GET", "/v1/jobs/a/wait").result == kind::method_not_allowed);
  CHECK(match_route("POST", "/v1/jobs").result == kind::method_not_allowed);
}

TEST_CASE("bearer check: exact scheme, one space, exact token") {
  std::string good = "Bearer s3cret";
  CHECK(bearer_matches(&good, "s3cret"));
  CHECK(bearer_matches(nullptr, ""));  // auth disabled
  CHECK_FALSE(bearer_matches(nullptr, "s3cret"));
  for (auto bad : {"bearer s3cret", "Bearer  s3cret", "Bearer s3cret ", "Bearer s3cre",
                   "Bearer s3cretx", "Basic s3cret", "", "s3cret"}) {
    std::string h = bad;
    CAPTURE(h);
    CHECK_FALSE(bearer_matches(&h, "s3cret"));
  }
  std::string spaced = "Bearer  tok ";
  CHECK(bearer_matches(&spaced, " tok "));  // token used unchanged (D2)
}

TEST_CASE("go_quote matches Go's %q for the messages we produce") {
  CHECK(go_quote("A=B") == "\"A=B\"");
  CHECK(go_quote("stdout") == "\"stdout\"");
  CHECK(go_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(go_quote(std::string("x\0y", 3)) == "\"x\\x00y\"");
  CHECK(go_quote("tab\there\n") == "\"tab\\there\\n\"");
  CHECK(go_quote("héllo") == "\"héllo\"");
  CHECK(go_quote("\xff") == "\"\\xff\"");
}

TEST_CASE("the front answers 404, 405, healthz and 401 itself; job routes go on matched") {
  using shellctl::io::http::response;
  shellctl::io::http::request req;
  req.method = "GET";
  req.path = "/nope";
  auto v = check_at_front(req, "tok");
  auto* r = std::get_if<response>(&v);
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(r->body == "{\"error\":{\"code\":\"not_found\",\"message\":\"404 page not found\"}}\n");
  req.path = "/healthz";
  v = check_at_front(req, "tok");
  r = std::get_if<response>(&v);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "{\"status\":\"ok\"}\n");
  req.method = "DELETE";
  v = check_at_front(req, "tok");
  r = std::get_if<response>(&v);
  REQUIRE(r);
  CHECK(r->status == 405);
  req.method = "GET";
  req.path = "/v1/jobs/abc";
  v = check_at_front(req, "tok");
  r = std::get_if<response>(&v);
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(r->body.find("\"unauthorized\"") != std::string::npos);
  req.headers.push_back({"Authorization", "Bearer tok"});
  v = check_at_front(req, "tok");
  auto* m = std::get_if<route_match>(&v);
  REQUIRE(m);  // a job route with a good token goes on, matched once
  CHECK(m->id == route::status);
  CHECK(m->job_id == "abc");
}

TEST_CASE("the stream's start offset: Last-Event-ID wins over ?offset, anything odd is 400") {
  auto req = [](std::string query, const char* last_event_id) {
    shellctl::io::http::request r;
    r.method = "GET";
    r.path = "/v1/jobs/0123456789abcdef/stream";
    r.query = std::move(query);
    if (last_event_id) r.headers.push_back({"Last-Event-ID", last_event_id});
    return r;
  };
  using offset_or_error = std::variant<job_error_view, std::uint64_t>;
  auto offset = [](const offset_or_error& v) { return std::get<std::uint64_t>(v); };
  CHECK(offset(decode_stream_offset(req("", nullptr))) == 0);
  CHECK(offset(decode_stream_offset(req("offset=12", nullptr))) == 12);
  CHECK(offset(decode_stream_offset(req("offset=12", "40"))) == 40);
  for (const char* bad : {"-1", "x", "1.5", "99999999999999999999", " 3"}) {
    CAPTURE(bad);
    CHECK(std::holds_alternative<job_error_view>(decode_stream_offset(req(std::string("offset=") + bad, nullptr))));
    CHECK(std::holds_alternative<job_error_view>(decode_stream_offset(req("", bad))));
  }
}

TEST_CASE("server-sent events: one data line, the id is the offset after the event") {
  CHECK(shellctl::io::http::sse_output_event(0, 7, "a\nb\"\xe2\x98\x83") ==
        "event: output\nid: 7\ndata: {\"offset\":0,\"next_offset\":7,\"output\":\"a\\nb\\\"\xe2\x98\x83\"}\n\n");
  CHECK(shellctl::io::http::sse_exit_event("0123456789abcdef", "exited", 3, 12) ==
        "event: exit\nid: 12\ndata: {\"job_id\":\"0123456789abcdef\",\"status\":\"exited\",\"done\":true,"
        "\"exit_code\":3,\"offset\":12}\n\n");
  CHECK(shellctl::io::http::sse_exit_event("0123456789abcdef", "lost", std::nullopt, 0).find("\"exit_code\":null") != std::string::npos);
}

// ---------------------------------------------------------------- job control, info (docs/api.md)

namespace {
shellctl::io::http::request post(const char* path, std::string body) {
  shellctl::io::http::request r;
  r.method = "POST";
  r.path = path;
  r.body = std::move(body);
  return r;
}
decoded_request decode_post(const char* path, std::string body) {
  auto req = post(path, std::move(body));
  return decode_request(req, match_route(req.method, req.path));
}
job_error_view refusal(const decoded_request& d) {
  REQUIRE(std::holds_alternative<job_error_view>(d));
  return std::get<job_error_view>(d);
}
}  // namespace

TEST_CASE("signal names: with or without SIG, any case, or the number; only the ten the signal route takes") {
  CHECK(parse_job_signal("INT") == SIGINT);
  CHECK(parse_job_signal("SIGINT") == SIGINT);
  CHECK(parse_job_signal("sigterm") == SIGTERM);
  CHECK(parse_job_signal("Winch") == SIGWINCH);
  CHECK(parse_job_signal("9") == SIGKILL);
  CHECK(parse_job_signal("19") == SIGSTOP);
  CHECK(job_signals().size() == 10);
  for (const auto& [name, signo] : job_signals()) {
    CHECK(parse_job_signal(name) == signo);
    CHECK(parse_job_signal("SIG" + std::string(name)) == signo);
    CHECK(parse_job_signal(std::to_string(signo)) == signo);
  }
  for (auto bad : {"", "SIG", "SEGV", "SIGSEGV", "11", "0", "-9", "09", "INT ", " INT", "SIGSIGINT",
                   "KILL\n", "99999999999999999999"})
    CHECK_FALSE(parse_job_signal(bad).has_value());
}

TEST_CASE("POST /signal: the signal decoded; unknown or missing 422, broken JSON 400") {
  auto d = decode_post("/v1/jobs/abc/signal", R"({"signal":"USR1"})");
  REQUIRE(std::holds_alternative<signal_request>(d));
  CHECK(std::get<signal_request>(d).job_id == "abc");
  CHECK(std::get<signal_request>(d).signo == SIGUSR1);
  d = decode_post("/v1/jobs/abc/signal", R"({"signal":15,"other":true})");
  REQUIRE(std::holds_alternative<signal_request>(d));
  CHECK(std::get<signal_request>(d).signo == SIGTERM);
  for (auto body : {R"({"signal":"SEGV"})", R"({"signal":11})", R"({})", R"({"signal":null})",
                    R"({"signal":2.5})", R"({"signal":true})", R"({"signal":["INT"]})"}) {
    CAPTURE(body);
    CHECK(refusal(decode_post("/v1/jobs/abc/signal", body)).code == job_errc::validation_error);
  }
  for (auto body : {"", "not json", "[1]", R"({"signal":)"}) {
    CAPTURE(body);
    CHECK(refusal(decode_post("/v1/jobs/abc/signal", body)).code == job_errc::invalid_request);
  }
}

TEST_CASE("POST /run with an Idempotency-Key: the key checked, the job fields digested") {
  auto keyed = [](std::string body, std::string key) {
    auto req = post("/v1/jobs/run", std::move(body));
    req.headers.push_back({"idempotency-key", std::move(key)});
    return decode_request(req, match_route(req.method, req.path));
  };
  auto run_of = [](const decoded_request& d) {
    REQUIRE(std::holds_alternative<run_request>(d));
    return std::get<run_request>(d);
  };
  auto plain = run_of(decode_post("/v1/jobs/run", R"({"script":"echo"})"));
  CHECK(plain.idempotency_key.empty());
  CHECK(plain.fields_sha256.empty());
  auto a = run_of(keyed(R"({"script":"echo","env":{"A":"1","B":"2"},"timeout":1})", "k-1"));
  CHECK(a.idempotency_key == "k-1");
  CHECK(a.fields_sha256.size() == 64);
  // The wait fields and the env object's order are not part of the job.
  CHECK(run_of(keyed(R"({"env":{"B":"2","A":"1"},"script":"echo","timeout":30,"output_limit":9})",
                     "k-1")).fields_sha256 == a.fields_sha256);
  // Each job field is, and no two requests share an encoding.
  for (auto other : {R"({"script":"echo ","env":{"A":"1","B":"2"}})",
                     R"({"script":"echo","env":{"A":"1","B":"3"}})",
                     R"({"script":"echo","env":{"A":"1"}})",
                     R"({"script":"echo","env":{"A":"1","B":"2"},"cwd":"/tmp"})",
                     R"({"script":"echo","env":{"A":"1","B":"2"},"mode":"stdio"})",
                     R"({"script":"echo","env":{"A":"1","B":"2"},"terminal":{"cols":80,"rows":24}})",
                     R"({"script":"echo","env":{"A":"1B","":"2"}})",
                     R"({"script":"echo","env":{"A":"12","B":""}})"}) {
    CAPTURE(other);
    auto d = keyed(other, "k-1");
    if (std::holds_alternative<run_request>(d)) CHECK(std::get<run_request>(d).fields_sha256 != a.fields_sha256);
  }
  CHECK(run_of(keyed(R"({"script":"echo"})", std::string(255, 'k'))).idempotency_key.size() == 255);
  CHECK(run_of(keyed(R"({"script":"echo"})", "a b!~")).idempotency_key == "a b!~");
  for (std::string bad : {std::string(), std::string(256, 'k'), std::string("caf\xc3\xa9"),
                          std::string("tab\there"), std::string("nul\0", 4), std::string("del\x7f")}) {
    CAPTURE(bad);
    CHECK(refusal(keyed(R"({"script":"echo"})", bad)).code == job_errc::validation_error);
  }
  // A broken body stays 400, whatever the key.
  CHECK(refusal(keyed("not json", "k")).code == job_errc::invalid_request);
}

TEST_CASE("POST /run's stdin and POST /input's eof") {
  auto run_of = [](const decoded_request& d) {
    REQUIRE(std::holds_alternative<run_request>(d));
    return std::get<run_request>(d).spec;
  };
  CHECK_FALSE(run_of(decode_post("/v1/jobs/run", R"({"script":"cat","mode":"stdio"})")).stdin_pipe);
  CHECK_FALSE(run_of(decode_post("/v1/jobs/run", R"({"script":"cat","mode":"stdio","stdin":"null"})")).stdin_pipe);
  CHECK(run_of(decode_post("/v1/jobs/run", R"({"script":"cat","mode":"stdio","stdin":"pipe"})")).stdin_pipe);
  for (auto body : {R"({"script":"cat","stdin":"pipe"})", R"({"script":"cat","mode":"pty","stdin":"pipe"})",
                    R"({"script":"cat","mode":"stdio","stdin":"PIPE"})", R"({"script":"cat","mode":"stdio","stdin":"/dev/tty"})"}) {
    CAPTURE(body);
    CHECK(refusal(decode_post("/v1/jobs/run", body)).code == job_errc::validation_error);
  }
  CHECK(refusal(decode_post("/v1/jobs/run", R"({"script":"cat","mode":"stdio","stdin":true})")).code ==
        job_errc::invalid_request);
  auto in = decode_post("/v1/jobs/abc/input", R"({"text":"x","eof":true})");
  REQUIRE(std::holds_alternative<input_request>(in));
  CHECK(std::get<input_request>(in).eof);
  in = decode_post("/v1/jobs/abc/input", R"({"text":"x"})");
  REQUIRE(std::holds_alternative<input_request>(in));
  CHECK_FALSE(std::get<input_request>(in).eof);
  CHECK(refusal(decode_post("/v1/jobs/abc/input", R"({"text":"x","eof":"yes"})")).code == job_errc::invalid_request);
}

TEST_CASE("POST /resize: cols and rows, whole numbers 1..4096 each") {
  auto d = decode_post("/v1/jobs/abc/resize", R"({"cols":120,"rows":40})");
  REQUIRE(std::holds_alternative<resize_request>(d));
  CHECK(std::get<resize_request>(d).job_id == "abc");
  CHECK(std::get<resize_request>(d).cols == 120);
  CHECK(std::get<resize_request>(d).rows == 40);
  d = decode_post("/v1/jobs/abc/resize", R"({"cols":4096,"rows":1})");
  REQUIRE(std::holds_alternative<resize_request>(d));
  for (auto body : {R"({"cols":0,"rows":40})", R"({"cols":4097,"rows":40})", R"({"cols":80})",
                    R"({"rows":24})", R"({"cols":-1,"rows":24})", R"({"cols":80,"rows":1000000000})"}) {
    CAPTURE(body);
    CHECK(refusal(decode_post("/v1/jobs/abc/resize", body)).code == job_errc::validation_error);
  }
  // The wrong type (a fraction for a whole number, a string for a number) is a decode
  // failure, as on every other route.
  // 1e9 too: Go's decoder takes no exponent for an int.
  for (auto body : {"{", R"({"cols":80.5,"rows":24})", R"({"cols":"80","rows":24})", R"({"cols":80,"rows":true})",
                    R"({"cols":80,"rows":1e9})"}) {
    CAPTURE(body);
    const auto r = refusal(decode_post("/v1/jobs/abc/resize", body));
    CHECK(r.code == job_errc::invalid_request);
    CHECK(r.text == "Invalid JSON body");
  }
}

TEST_CASE("GET /activity: the idle flush from the query, 0.5 by default, negative 422") {
  auto get = [](const char* target) {
    shellctl::io::http::request r;
    r.method = "GET";
    std::string t = target;
    r.path = t.substr(0, t.find('?'));
    r.query = t.find('?') == std::string::npos ? "" : t.substr(t.find('?') + 1);
    return decode_request(r, match_route(r.method, r.path));
  };
  auto d = get("/v1/jobs/abc/activity");
  REQUIRE(std::holds_alternative<activity_request>(d));
  CHECK(std::get<activity_request>(d).job_id == "abc");
  CHECK(std::get<activity_request>(d).idle_flush_s == 0.5);
  d = get("/v1/jobs/abc/activity?idle_flush_seconds=2.5");
  REQUIRE(std::holds_alternative<activity_request>(d));
  CHECK(std::get<activity_request>(d).idle_flush_s == 2.5);
  CHECK(refusal(get("/v1/jobs/abc/activity?idle_flush_seconds=-1")).code == job_errc::validation_error);
}

TEST_CASE("the activity document: nulls without a pane, numbers as numbers") {
  job_activity a;
  a.row.job_id = "0123456789abcdef";
  a.row.status = shellctl::io::store::job_status::running;
  a.offset = 12;
  a.idle_seconds = 4.25;
  CHECK(job_activity_json(a) ==
        R"({"job_id":"0123456789abcdef","status":"running","done":false,"offset":12,"waiting_for_input":false,)"
        R"("idle_seconds":4.2,"foreground":null,"terminal":null,"processes":0,"ended":null})" "\n");
  a.ended = job_activity::end_reason{"signal", 9, {}};
  CHECK(job_activity_json(a).find(R"("ended":{"by":"signal","signal":"KILL","limits_hit":[]}})") != std::string::npos);
  a.ended = job_activity::end_reason{"exit", 0, {}};
  CHECK(job_activity_json(a).find(R"("ended":{"by":"exit","signal":null,"limits_hit":[]}})") != std::string::npos);
  a.ended = job_activity::end_reason{"limit", 9, {"memory_bytes", "cpu"}};
  CHECK(job_activity_json(a).find(R"("ended":{"by":"limit","signal":"KILL","limits_hit":["memory_bytes","cpu"]}})") !=
        std::string::npos);
  a.ended.reset();
  a.waiting_for_input = true;
  a.foreground = job_activity::foreground_process{7, "sudo"};
  a.terminal = job_activity::terminal_size{200, 50};
  a.processes = 3;
  CHECK(job_activity_json(a).find(R"("waiting_for_input":true,"idle_seconds":4.2,"foreground":{"pid":7,"command":"sudo"},)"
                                  R"("terminal":{"cols":200,"rows":50},"processes":3,"ended":null})") != std::string::npos);
}

TEST_CASE("GET /v1/info is answered by the front with the document it was given, after auth") {
  shellctl::io::http::request req;
  req.method = "GET";
  req.path = "/v1/info";
  auto v = check_at_front(req, "tok", R"({"version":"x"})");
  REQUIRE(std::holds_alternative<shellctl::io::http::response>(v));
  CHECK(std::get<shellctl::io::http::response>(v).status == 401);
  req.headers.push_back({"authorization", "Bearer tok"});
  v = check_at_front(req, "tok", R"({"version":"x"})");
  REQUIRE(std::holds_alternative<shellctl::io::http::response>(v));
  CHECK(std::get<shellctl::io::http::response>(v).status == 200);
  CHECK(std::get<shellctl::io::http::response>(v).body == R"({"version":"x"})");
}

TEST_CASE("the /v1/info document: every field it documents, nothing this build does not serve") {
  const shellctl::io::sandbox::cgroups::job_controllers none{}, all{true, true, true};
  CHECK(server_info_json({"1.2.3", 7, false, std::nullopt, false, std::nullopt, 0, none, {}, ""}) ==
        R"({"version":"1.2.3","api":["jobs","snapshot","files","stream","resize","signal","activity","ports"],)"
        R"("isolation":{"landlock_abi":7,"cgroup":"none","cgroup_nsdelegate":null,"api_refuses_jobs":false,)"
        R"("oom_score_adj":{"server":null,"jobs":0},"job_sandbox":{"ok":true,"problem":null}},)"
        R"("limits":{"timeout_max":600,"output_limit_max":524288},)"
        R"("job_limits":{"available":[],"ceilings":{"memory_bytes":null,"pids":null,"cpu":null}}})" "\n");
  CHECK(server_info_json({"1.2.3", 7, true, true, true, -800, 800, none, {}, ""})
            .find(R"("oom_score_adj":{"server":-800,"jobs":800})") != std::string::npos);
  CHECK(server_info_json({"1.2.3", std::nullopt, true, false, true, std::nullopt, 0, none, {}, ""})
            .find(R"("landlock_abi":null,"cgroup":"v2","cgroup_nsdelegate":false)") != std::string::npos);
  CHECK(server_info_json({"1.2.3", std::nullopt, true, true, true, std::nullopt, 0, none, {}, ""})
            .find(R"("cgroup_nsdelegate":true)") != std::string::npos);
  // What the startup probe found that fails every job: said, not hidden.
  CHECK(server_info_json({"1.2.3", 7, true, true, true, -800, 800, none, {}, "make private /: Invalid argument"})
            .find(R"("job_sandbox":{"ok":false,"problem":"make private /: Invalid argument"})") != std::string::npos);
  // What a run may ask for, and the server's limits as its ceilings.
  CHECK(server_info_json({"1.2.3", 7, true, true, true, -800, 800, all, {"1G", "max", "50000 100000"}, ""})
            .find(R"("job_limits":{"available":["memory_bytes","pids","cpu"],)"
                  R"("ceilings":{"memory_bytes":1073741824,"pids":null,"cpu":0.50}})") != std::string::npos);
}
