#pragma once
// The body of `POST /v1/test-scopes` (docs/native-scopes.md "The scope service"), read
// strictly: exactly the keys of the table, each of its type and rule
// (io/native/scope/scope_fields.hpp); an unknown, missing, duplicate or null key is refused.
// Bad JSON is 400 invalid_request, everything else 422 validation_error. Pure: the refs are
// resolved, the digest compared and the targets resolved later (the steps after validation).
//
// Also the pinned fields' canonical JSON, as the catalog keeps them and views show them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "io/json/json.hpp"
#include "io/native/scope/scope_fields.hpp"

namespace shellctl::io::native {

struct network_target {
  std::string host;
  std::uint16_t port = 0;
};

struct create_request {
  std::string scope_id;
  std::uint64_t generation = 0;
  std::string binding_ref;
  std::string base_snapshot_ref;
  std::vector<std::string> input_file_refs;
  std::string capability_digest;
  std::string deadline;             // as sent: YYYY-MM-DDTHH:MM:SSZ
  std::int64_t deadline_epoch = 0;  // seconds since the epoch
  std::vector<network_target> network_targets;
  scope_limits limits;
};

struct request_problem {
  int status = 422;
  std::string code = "validation_error";
  std::string message;
};

// `now` and `horizon_seconds` bound the deadline (in the future, within the horizon).
std::variant<create_request, request_problem> parse_create_request(std::string_view body,
                                                                   std::int64_t now,
                                                                   std::int64_t horizon_seconds);

// The pinned values as JSON, keys in the documented order (the catalog's text and the view's).
std::string limits_json(const scope_limits& l);
void write_limits(json::writer& w, const scope_limits& l);
std::optional<scope_limits> limits_from_json(std::string_view json);
std::string refs_json(const std::vector<std::string>& refs);
std::optional<std::vector<std::string>> refs_from_json(std::string_view json);

}  // namespace shellctl::io::native
