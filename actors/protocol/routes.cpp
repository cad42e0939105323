#include "actors/protocol/routes.hpp"

#include <vector>

#include "io/text/percent.hpp"

namespace shellctl::actors {
namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> segs;
  if (path.empty() || path[0] != '/') return segs;
  size_t i = 1;
  while (true) {
    size_t j = path.find('/', i);
    // Like Go's ServeMux: split on the raw '/', then unescape each segment, so that %2F
    // stays inside its segment and %XX-spelled ids name the same job.
    auto seg = path.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    segs.push_back(io::text::percent_decode(seg, false));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return segs;
}

struct candidate {
  std::string_view method;
  route id;
};

}  // namespace

const std::vector<route_entry>& route_table() {
  static const std::vector<route_entry> table = {
      {route::healthz, "GET", "/healthz"},
      {route::openapi, "GET", "/openapi.json"},
      {route::metrics, "GET", "/metrics"},
      {route::run, "POST", "/v1/jobs/run"},
      {route::list, "GET", "/v1/jobs"},
      {route::status, "GET", "/v1/jobs/{job_id}"},
      {route::remove, "DELETE", "/v1/jobs/{job_id}"},
      {route::wait, "POST", "/v1/jobs/{job_id}/wait"},
      {route::input, "POST", "/v1/jobs/{job_id}/input"},
      {route::terminate, "POST", "/v1/jobs/{job_id}/terminate"},
      {route::tail, "GET", "/v1/jobs/{job_id}/log/tail"},
      {route::stream, "GET", "/v1/jobs/{job_id}/stream"},
      {route::resize, "POST", "/v1/jobs/{job_id}/resize"},
      {route::signal, "POST", "/v1/jobs/{job_id}/signal"},
      {route::activity, "GET", "/v1/jobs/{job_id}/activity"},
      {route::info, "GET", "/v1/info"},
      {route::ports, "GET", "/v1/ports"},
      {route::snapshot_save, "POST", "/v1/snapshot/save"},
      {route::snapshot_restore, "POST", "/v1/snapshot/restore"},
      {route::file_read, "GET", "/v1/files/content"},
      {route::file_write, "PUT", "/v1/files/content"},
      {route::file_stat, "GET", "/v1/files/stat"},
      {route::file_list, "GET", "/v1/files/list"},
      {route::file_mkdir, "POST", "/v1/files/mkdir"},
      {route::file_move, "POST", "/v1/files/move"},
      {route::file_delete, "DELETE", "/v1/files"},
  };
  return table;
}

const char* route_pattern(route r) {
  for (const auto& e : route_table())
    if (e.id == r) return e.pattern;
  return "-";
}

route_match match_route(std::string_view method, std::string_view path) {
  // HEAD is served by GET routes, as Go's mux does.
  std::string_view m = method == "HEAD" ? std::string_view("GET") : method;
  auto segs = split_path(path);
  // At most three methods share a path; a fixed array keeps this allocation-free.
  candidate cands[3];
  size_t n = 0;
  auto add = [&](std::string_view meth, route id) { cands[n++] = candidate{meth, id}; };
  std::string job_id;
  auto is = [&](size_t i, std::string_view s) { return segs.size() > i && segs[i] == s; };
  if (segs.size() == 1 && segs[0] == "healthz") {
    add("GET", route::healthz);
  } else if (segs.size() == 1 && segs[0] == "openapi.json") {
    add("GET", route::openapi);
  } else if (segs.size() == 1 && segs[0] == "metrics") {
    add("GET", route::metrics);
  } else if (segs.size() == 2 && is(0, "v1") && is(1, "info")) {
    add("GET", route::info);
  } else if (segs.size() == 2 && is(0, "v1") && is(1, "ports")) {
    add("GET", route::ports);
  } else if (segs.size() == 3 && is(0, "v1") && is(1, "snapshot") && is(2, "save")) {
    add("POST", route::snapshot_save);
  } else if (segs.size() == 3 && is(0, "v1") && is(1, "snapshot") && is(2, "restore")) {
    add("POST", route::snapshot_restore);
  } else if (segs.size() == 2 && is(0, "v1") && is(1, "files")) {
    add("DELETE", route::file_delete);
  } else if (segs.size() == 3 && is(0, "v1") && is(1, "files")) {
    if (segs[2] == "content") {
      add("GET", route::file_read);
      add("PUT", route::file_write);
    } else if (segs[2] == "stat") {
      add("GET", route::file_stat);
    } else if (segs[2] == "list") {
      add("GET", route::file_list);
    } else if (segs[2] == "mkdir") {
      add("POST", route::file_mkdir);
    } else if (segs[2] == "move") {
      add("POST", route::file_move);
    }
  } else if (segs.size() >= 2 && is(0, "v1") && is(1, "jobs")) {
    if (segs.size() == 2) {
      add("GET", route::list);
    } else if (!segs[2].empty()) {
      job_id = segs[2];
      if (segs.size() == 3) {
        add("GET", route::status);
        add("DELETE", route::remove);
        // POST /v1/jobs/run is its own route; other methods on it fall to {job_id}.
        if (segs[2] == "run") add("POST", route::run);
      } else if (segs.size() == 4 && segs[3] == "wait") {
        add("POST", route::wait);
      } else if (segs.size() == 4 && segs[3] == "input") {
        add("POST", route::input);
      } else if (segs.size() == 4 && segs[3] == "terminate") {
        add("POST", route::terminate);
      } else if (segs.size() == 4 && segs[3] == "stream") {
        add("GET", route::stream);
      } else if (segs.size() == 4 && segs[3] == "resize") {
        add("POST", route::resize);
      } else if (segs.size() == 4 && segs[3] == "signal") {
        add("POST", route::signal);
      } else if (segs.size() == 4 && segs[3] == "activity") {
        add("GET", route::activity);
      } else if (segs.size() == 5 && segs[3] == "log" && segs[4] == "tail") {
        add("GET", route::tail);
      }
    }
  }
  route_match r;
  if (n == 0) return r;
  for (size_t i = 0; i < n; ++i) {
    auto& c = cands[i];
    if (c.method == m) {
      r.result = route_match::kind::found;
      r.id = c.id;
      if (c.id != route::run) r.job_id = job_id;
      return r;
    }
  }
  r.result = route_match::kind::method_not_allowed;
  for (size_t i = 0; i < n; ++i) {
    auto& c = cands[i];
    if (!r.allow.empty()) r.allow += ", ";
    r.allow += c.method;
    if (c.method == "GET") r.allow += ", HEAD";
  }
  return r;
}

}  // namespace shellctl::actors
