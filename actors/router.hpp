#pragma once
// router: turns one parsed HTTP request into a typed job message. Matches the route
// (404/405 per D11), checks the bearer token (constant-time, decision D2), decodes and
// validates the JSON body or query with the original's defaults and our clamps (D5),
// then hands the request to the registry together with its responder. It keeps no state
// beyond its configuration.
#include <optional>
#include <string>

#include "actors/messages.hpp"

namespace shellctl::actors {

struct router_config {
  std::string token;  // empty: auth disabled
};

caf::behavior router(caf::event_based_actor* self, router_config cfg, caf::actor registry);

// The answers that need no actor state (route table 404/405, /healthz, the bearer
// check), or nullopt when the request must go to the registry. The HTTP loop calls this
// first so that these answers never cross threads; the router actor applies it too.
std::optional<io::http::response> stateless_answer(const io::http::request& req,
                                                   const router_config& cfg);

// Exposed for unit tests: the bearer check and Go's %q quoting used in messages.
bool bearer_matches(const std::string* authorization, const std::string& token);
std::string go_quote(std::string_view s);

}  // namespace shellctl::actors
