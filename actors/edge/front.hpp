#pragma once
// What the HTTP front decides on its own loop thread, once per request, before anything
// reaches an actor: the route (D11: 404 unknown path, 405 wrong method), /healthz, and the
// bearer token (D2, constant-time). For a request with a body it runs on the head alone,
// so that a peer without the token is refused before its body is read (G5).
#include <optional>
#include <string>
#include <variant>

#include "actors/protocol/routes.hpp"
#include "io/http/server.hpp"

namespace shellctl::actors {

// Either the answer (404, 405, 401, /healthz, and the fixed documents: /openapi.json and
// /v1/info, whose body `info` is made once at startup) or the matched route of an
// authorized request, which then goes to the api_edge actor.
using front_verdict = std::variant<io::http::response, route_match>;
front_verdict check_at_front(const io::http::request& req, const std::string& token,
                             const std::string& info = "{}");

// A native scope worker's front (docs/native-scopes.md "The scope worker"): bearer (the worker
// control token) first, then only the ordinary job routes and GET /v1/worker/identity (answered
// with `identity`); every other path, /v1/snapshot, /v1/files and /v1/info included, is 404.
front_verdict check_at_worker_front(const io::http::request& req, const std::string& token,
                                    const std::string& identity);

// Exposed for unit tests. An empty token disables auth.
bool bearer_matches(const std::string* authorization, const std::string& token);

}  // namespace shellctl::actors
