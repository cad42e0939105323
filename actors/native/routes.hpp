#pragma once
// The native test supervisor's route table (docs/native-scopes.md "The scope service") as a
// pure function, for the front, its unit test and the HTTP fuzzer. Scoped jobs are the eight
// ordinary job routes (docs/api.md "Routes") under the scope, as S1 names them:
// /v1/test-scopes/{scope_id}/jobs/...
// is the scope worker's /v1/jobs/... (a client appends "/jobs/..." to the scope's
// `transport.base_path`). Every other path is 404 not_found (D11; /v1/jobs and /v1/snapshot
// included), a known path with the wrong method 405.
#include <string>
#include <string_view>

#include "actors/protocol/routes.hpp"

namespace shellctl::actors {

enum class native_route { healthz, capabilities, create, inspect, destroy, scoped_job };

struct native_match {
  route_match::kind result = route_match::kind::not_found;
  native_route id = native_route::healthz;
  std::string scope_id;    // the {scope_id} segment, verbatim
  std::string job_path;    // scoped_job: the worker's ordinary path ("/v1/jobs/run")
  route job_route = route::run;
  std::string allow;       // 405: the methods the path takes
};

native_match match_native(std::string_view method, std::string_view path);

}  // namespace shellctl::actors
