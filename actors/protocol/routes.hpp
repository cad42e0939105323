#pragma once
// The route table (docs/api.md "Routes") as a pure function, so the router actor, its unit
// tests and the HTTP fuzzer share one definition. Decision D11: unknown paths are 404
// not_found, a known path with the wrong method is 405 method_not_allowed.
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::actors {

enum class route {
  healthz, run, wait, tail, status, list, input, terminate, remove,
  snapshot_save, snapshot_restore,  // docs/api.md "Home snapshots"
  openapi, metrics,                 // docs/api.md "OpenAPI", "Metrics"
  stream,                           // docs/api.md "Live output stream"
  resize, signal, activity,         // docs/api.md "Job control"
  info,                             // docs/api.md "Info"
  ports,                            // GET /v1/ports: what jobs listen on (actors/services/port_scan.hpp)
  file_read, file_write, file_stat, file_list, file_mkdir, file_delete, file_move,  // files
  // Not in the table (no ordinary server serves it): a native scope worker's
  // GET /v1/worker/usage (docs/native-scopes.md "The scope worker"), matched by
  // check_at_worker_front.
  worker_usage,
};

// Every route once: its method and path pattern ({job_id} for the id segment). The
// OpenAPI document is generated from this list, and a unit test checks that match_route
// finds each entry, so neither can drift from the other.
struct route_entry {
  route id;
  const char* method;
  const char* pattern;
};
const std::vector<route_entry>& route_table();

// The path pattern of a route, as the table has it (the access log's "route").
const char* route_pattern(route r);

struct route_match {
  enum class kind { found, not_found, method_not_allowed } result = kind::not_found;
  route id = route::healthz;
  std::string job_id;  // the {job_id} path segment, verbatim
  std::string allow;   // for 405: the methods the path accepts
};

route_match match_route(std::string_view method, std::string_view path);

}  // namespace shellctl::actors
