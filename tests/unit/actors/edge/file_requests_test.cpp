// The file API's edge codec (actors/edge/file_requests.hpp): routes, query and body decoding, the
// Range rules (RFC 9110, section 14) and the answers' JSON shapes.
#include <doctest/doctest.h>

#include "actors/edge/file_requests.hpp"
#include "actors/edge/views.hpp"

using namespace shellctl::actors;
using span_kind = byte_span::kind;

namespace {

shellctl::io::http::request get(std::string query, std::string body = {}) {
  shellctl::io::http::request r;
  r.method = "GET";
  r.query = std::move(query);
  r.body = std::move(body);
  return r;
}

}  // namespace

TEST_CASE("file routes") {
  CHECK(match_route("GET", "/v1/files/content").id == route::file_read);
  CHECK(match_route("HEAD", "/v1/files/content").id == route::file_read);
  CHECK(match_route("PUT", "/v1/files/content").id == route::file_write);
  CHECK(match_route("GET", "/v1/files/stat").id == route::file_stat);
  CHECK(match_route("GET", "/v1/files/list").id == route::file_list);
  CHECK(match_route("POST", "/v1/files/mkdir").id == route::file_mkdir);
  CHECK(match_route("POST", "/v1/files/move").id == route::file_move);
  CHECK(match_route("DELETE", "/v1/files").id == route::file_delete);
  auto m = match_route("POST", "/v1/files/content");
  CHECK(m.result == route_match::kind::method_not_allowed);
  CHECK(m.allow == "GET, HEAD, PUT");
  CHECK(match_route("GET", "/v1/files/other").result == route_match::kind::not_found);
}

TEST_CASE("file requests decode their query and body") {
  auto st = std::get<file_stat_request>(decode_file_request(get("path=a%2Fb+c"), route::file_stat));
  CHECK(st.path == "a/b c");
  CHECK(std::get<file_stat_request>(decode_file_request(get(""), route::file_stat)).path.empty());
  CHECK(std::get<file_list_request>(decode_file_request(get("path=x"), route::file_list)).limit == 1000);
  CHECK(std::get<file_list_request>(decode_file_request(get("path=x&limit=5"), route::file_list)).limit == 5);
  CHECK(std::get<file_list_request>(decode_file_request(get("path=x&limit=99999"), route::file_list)).limit == 10000);
  CHECK(std::get<file_list_request>(decode_file_request(get("path=x&limit=-3"), route::file_list)).limit == 1000);
  auto w = std::get<file_write_request>(decode_file_request(get("path=f&mode=0755&parents=true"), route::file_write));
  CHECK(w.mode == 0755u);
  CHECK(w.parents);
  CHECK(!std::get<file_write_request>(decode_file_request(get("path=f"), route::file_write)).mode);
  for (const char* bad : {"path=f&mode=4755", "path=f&mode=2755", "path=f&mode=9", "path=f&mode=17777",
                          "path=f&mode=", "path=f&parents=maybe"}) {
    CAPTURE(bad);
    auto d = decode_file_request(get(bad), route::file_write);
    REQUIRE(std::holds_alternative<job_error_view>(d));
    CHECK(std::get<job_error_view>(d).code == job_errc::invalid_request);
  }
  CHECK(std::get<file_delete_request>(decode_file_request(get("path=d&recursive=1"), route::file_delete)).recursive);
  auto mk = std::get<file_mkdir_request>(
      decode_file_request(get("", R"({"path":"d","parents":true,"mode":"0700"})"), route::file_mkdir));
  CHECK(mk.path == "d");
  CHECK(mk.parents);
  CHECK(mk.mode == 0700u);
  CHECK(std::get<file_mkdir_request>(decode_file_request(get("", R"({"path":"d"})"), route::file_mkdir)).mode == 0755u);
  auto mv = std::get<file_move_request>(
      decode_file_request(get("", R"({"from":"a","to":"b","overwrite":true})"), route::file_move));
  CHECK(mv.from == "a");
  CHECK(mv.to == "b");
  CHECK(mv.overwrite);
  for (const char* bad : {"", "[1]", R"({"path":1})", R"({"path":"d","parents":"yes"})", R"({"path":"d","mode":493})"}) {
    CAPTURE(bad);
    auto d = decode_file_request(get("", bad), route::file_mkdir);
    REQUIRE(std::holds_alternative<job_error_view>(d));
    CHECK(error_response(std::get<job_error_view>(d)).status == 400);
  }
}

TEST_CASE("one Range, as RFC 9110 reads it") {
  const std::string h[] = {"bytes=0-9", "bytes=10-", "bytes=-5", "bytes=95-200", "bytes=100-", "bytes=-0",
                           "bytes=0-1,3-4", "bytes=9-1", "lines=0-1", "bytes=x-", "bytes = 2-3", "BYTES=1-1"};
  struct expect {
    span_kind k;
    std::uint64_t offset, length;
  } e[] = {{span_kind::partial, 0, 10},  {span_kind::partial, 10, 90},        {span_kind::partial, 95, 5},
           {span_kind::partial, 95, 5},  {span_kind::unsatisfiable, 0, 0},    {span_kind::unsatisfiable, 0, 0},
           {span_kind::whole, 0, 100},   {span_kind::whole, 0, 100},          {span_kind::whole, 0, 100},
           {span_kind::whole, 0, 100},   {span_kind::whole, 0, 100},          {span_kind::partial, 1, 1}};
  for (std::size_t i = 0; i < std::size(h); ++i) {
    CAPTURE(h[i]);
    const auto s = pick_range(&h[i], 100);
    CHECK(s.k == e[i].k);
    CHECK(s.offset == e[i].offset);
    CHECK(s.length == e[i].length);
  }
  CHECK(pick_range(nullptr, 7).length == 7);
  const std::string suffix = "bytes=-500";
  CHECK(pick_range(&suffix, 100).offset == 0);
  CHECK(pick_range(&suffix, 100).length == 100);
  CHECK(pick_range(&suffix, 0).k == span_kind::unsatisfiable);
}

TEST_CASE("file answers") {
  file_opened f{"/h/a", {}};
  f.meta.size = 100;
  f.meta.mode = 0640;
  f.meta.mtime = 0;
  auto head = file_content_head(f, {span_kind::partial, 10, 5});
  CHECK(head.status == 206);
  CHECK(head.stream_length == 5u);
  auto has = [&](const char* name, const char* value) {
    for (auto& x : head.headers)
      if (x.name == name) return x.value == value;
    return false;
  };
  CHECK(has("Content-Range", "bytes 10-14/100"));
  CHECK(has("X-File-Mode", "0640"));
  CHECK(has("X-File-Size", "100"));
  CHECK(has("Last-Modified", "Thu, 01 Jan 1970 00:00:00 GMT"));
  CHECK(file_content_head(f, {span_kind::whole, 0, 100}).status == 200);
  auto refused = range_refused(f);
  CHECK(refused.status == 416);
  CHECK(refused.body.find("range_not_satisfiable") != std::string::npos);
  file_stat s{"/h/l", {}};
  s.meta.type = shellctl::io::fs::entry_type::symlink;
  s.meta.size = 3;
  s.meta.mode = 0777;
  s.meta.target = "x<y";
  CHECK(file_stat_json(s) ==
        "{\"path\":\"/h/l\",\"type\":\"symlink\",\"size\":3,\"mode\":\"0777\",\"mtime\":\"1970-01-01T00:00:00Z\","
        "\"target\":\"x\\u003cy\"}\n");
  CHECK(file_done_json({"/h/d", true}) == "{\"path\":\"/h/d\",\"deleted\":true}\n");
  CHECK(file_done_json({"/h/d", false}) == "{\"path\":\"/h/d\"}\n");
  CHECK(file_written_json({"/h/f", 2, "ab"}) == "{\"path\":\"/h/f\",\"size\":2,\"sha256\":\"ab\"}\n");
  file_listing l{"/h", {}, true};
  l.entries.push_back({});
  l.entries.back().name = "n";
  CHECK(file_listing_json(l) ==
        "{\"path\":\"/h\",\"entries\":[{\"name\":\"n\",\"type\":\"other\",\"size\":0,\"mode\":\"0000\","
        "\"mtime\":\"1970-01-01T00:00:00Z\"}],\"truncated\":true}\n");
}
