#pragma once
// GET /openapi.json (docs/api.md "OpenAPI"): the OpenAPI 3.1 document of every route. Its paths
// come from route_table() and each operation from a switch over the route enum, so a new
// route without a description does not compile (-Wswitch) and cannot be left out.
#include <string>

namespace shellctl::actors {

const std::string& openapi_document();

}  // namespace shellctl::actors
