#include "actors/native/routes.hpp"

namespace shellctl::actors {
namespace {

constexpr std::string_view kScopes = "/v1/test-scopes";

native_match found(native_route id) {
  native_match m;
  m.result = route_match::kind::found;
  m.id = id;
  return m;
}

native_match wrong_method(std::string allow) {
  native_match m;
  m.result = route_match::kind::method_not_allowed;
  m.allow = std::move(allow);
  return m;
}

bool is_get(std::string_view method) { return method == "GET" || method == "HEAD"; }

bool is_job_route(route r) {
  switch (r) {
    case route::run: case route::list: case route::status: case route::remove:
    case route::wait: case route::input: case route::terminate: case route::tail:
      return true;
    default:
      return false;
  }
}

}  // namespace

native_match match_native(std::string_view method, std::string_view path) {
  if (path == "/healthz") return is_get(method) ? found(native_route::healthz) : wrong_method("GET, HEAD");
  if (path == "/v1/native-test/capabilities")
    return is_get(method) ? found(native_route::capabilities) : wrong_method("GET, HEAD");
  if (path == kScopes) return method == "POST" ? found(native_route::create) : wrong_method("POST");
  if (path.substr(0, kScopes.size() + 1) != std::string(kScopes) + "/") return {};
  std::string_view rest = path.substr(kScopes.size() + 1);
  const auto slash = rest.find('/');
  const std::string_view id = rest.substr(0, slash);
  if (id.empty()) return {};
  if (slash == std::string_view::npos) {
    native_match m;
    if (is_get(method)) m = found(native_route::inspect);
    else if (method == "DELETE") m = found(native_route::destroy);
    else m = wrong_method("DELETE, GET, HEAD");
    m.scope_id = std::string(id);
    return m;
  }
  // S1: /v1/test-scopes/{scope_id}/jobs/... is the ordinary /v1/jobs/... of the scope.
  const std::string_view scoped = rest.substr(slash);
  if (scoped.substr(0, 5) != "/jobs" || (scoped.size() > 5 && scoped[5] != '/')) return {};
  const std::string job_path = "/v1" + std::string(scoped);
  const auto j = match_route(method, job_path);
  native_match m;
  if (j.result == route_match::kind::found && is_job_route(j.id)) {
    m = found(native_route::scoped_job);
    m.job_route = j.id;
    m.job_path = job_path;
  } else {
    // 405 only for a path one of the eight serves with another method; extensions and
    // snapshots are not served for scopes at all (404).
    std::string allow;
    for (const char* other : {"DELETE", "GET", "HEAD", "POST"}) {
      const auto o = match_route(other, job_path);
      if (o.result == route_match::kind::found && is_job_route(o.id))
        allow += std::string(allow.empty() ? "" : ", ") + other;
    }
    if (allow.empty()) return {};
    m = wrong_method(allow);
  }
  m.scope_id = std::string(id);
  return m;
}

}  // namespace shellctl::actors
