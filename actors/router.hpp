#pragma once
// router: turns one parsed HTTP request into a typed job message. Matches the route
// (404/405 per D11), checks the bearer token (constant-time, decision D2), decodes and
// validates the JSON body or query with the original's defaults and our clamps (D5),
// then hands the request to the registry together with its responder. It keeps no state
// beyond its configuration.
#include <string>

#include "actors/messages.hpp"

namespace shellctl::actors {

struct router_config {
  std::string token;  // empty: auth disabled
};

caf::behavior router(caf::event_based_actor* self, router_config cfg, caf::actor registry);

// Exposed for unit tests: the bearer check and Go's %q quoting used in messages.
bool bearer_matches(const std::string* authorization, const std::string& token);
std::string go_quote(std::string_view s);

}  // namespace shellctl::actors
