#include "actors/edge/front.hpp"

#include "actors/edge/openapi.hpp"
#include "actors/edge/views.hpp"

namespace shellctl::actors {

front_verdict check_at_front(const io::http::request& req, const std::string& token,
                             const std::string& info) {
  auto m = match_route(req.method, req.path);
  if (m.result == route_match::kind::not_found)
    return error_response(404, "not_found", "404 page not found");
  if (m.result == route_match::kind::method_not_allowed) {
    auto r = error_response(405, "method_not_allowed", "Method Not Allowed");
    r.headers.push_back({"Allow", m.allow});
    return r;
  }
  if (m.id == route::healthz) return json_response(200, "{\"status\":\"ok\"}\n");
  if (!bearer_matches(req.find_header("authorization"), token))
    return error_response(401, "unauthorized", "Missing or invalid bearer token");
  if (m.id == route::openapi) return json_response(200, openapi_document());
  if (m.id == route::info) return json_response(200, info);
  return m;
}

front_verdict check_at_worker_front(const io::http::request& req, const std::string& token,
                                    const std::string& identity) {
  if (!bearer_matches(req.find_header("authorization"), token))
    return error_response(401, "unauthorized", "Missing or invalid bearer token");
  if (req.path == "/v1/worker/identity") {
    if (req.method != "GET" && req.method != "HEAD") {
      auto r = error_response(405, "method_not_allowed", "Method Not Allowed");
      r.headers.push_back({"Allow", "GET, HEAD"});
      return r;
    }
    return json_response(200, identity);
  }
  if (req.path == "/v1/worker/usage") {
    if (req.method != "GET" && req.method != "HEAD") {
      auto r = error_response(405, "method_not_allowed", "Method Not Allowed");
      r.headers.push_back({"Allow", "GET, HEAD"});
      return r;
    }
    route_match usage;
    usage.result = route_match::kind::found;
    usage.id = route::worker_usage;
    return usage;
  }
  auto m = match_route(req.method, req.path);
  if (m.result == route_match::kind::found) {
    switch (m.id) {
      case route::run: case route::list: case route::status: case route::remove:
      case route::wait: case route::input: case route::terminate: case route::tail:
        return m;
      default:
        return error_response(404, "not_found", "404 page not found");
    }
  }
  return check_at_front(req, token);  // 404 or 405, as the ordinary front says them
}

bool bearer_matches(const std::string* authorization, const std::string& token) {
  if (token.empty()) return true;
  if (!authorization) return false;
  std::string expected = "Bearer " + token;
  const std::string& got = *authorization;
  // Constant-time over the expected length: the token does not leak through timing.
  unsigned char diff = got.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < got.size() ? static_cast<unsigned char>(got[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

}  // namespace shellctl::actors
