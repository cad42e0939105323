#pragma once
// The native test supervisor's HTTP edge (docs/native-scopes.md "The scope service"): the loop
// thread's check of every request (route, bearer: front_check), and native_edge, which turns
// the rest into scope_registry requests and their answers into JSON. Refusals carry their
// documented error code in the ordinary error envelope; each code's status is in one table
// here.
#include <memory>
#include <string>
#include <variant>

#include "actors/edge/front.hpp"
#include "actors/native/interfaces.hpp"
#include "actors/native/routes.hpp"
#include "actors/native/scope_actor.hpp"

namespace shellctl::actors {

// The status of a refusal's code (scope_not_found 404, scope_destroyed 410, ...).
// A refusal as its status and the ordinary error envelope; an error that is not the scope
// service's (an actor that is gone) as `otherwise`.
io::http::response native_error_response(const caf::error& e, native_errc otherwise);

// Loop thread, before the body: an answer (/healthz; then 401 without the bearer; then
// 404/405; capabilities), or the match to hand to native_edge.
std::variant<io::http::response, native_match> check_at_native_front(
    const io::http::request& req, const std::string& token, const std::string& capabilities);

// A scope's view (what create and inspect answer) as JSON.
std::string scope_view_json(const scope_view& v);

native_edge_actor::behavior_type native_edge(native_edge_actor::pointer self,
                                             std::shared_ptr<const supervisor_settings> cfg,
                                             scope_registry_actor registry);

}  // namespace shellctl::actors
