#pragma once
// api_edge: the one place where HTTP meets the actors. The front hands it each matched,
// authorized request (http_call); it decodes the body or query into a domain request
// (actors/api_requests.hpp), asks the registry with CAF's request/response, and turns
// the domain answer or job_errc error into the API's status and body
// (actors/api_views.hpp). It earns its hop by being the requester: the libuv thread
// cannot be one, and each answer's timeout and error path live here.
#include "actors/interfaces.hpp"

namespace shellctl::actors {

api_edge_actor::behavior_type api_edge(api_edge_actor::pointer self, job_registry_actor registry);

}  // namespace shellctl::actors
