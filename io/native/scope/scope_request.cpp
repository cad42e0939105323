#include "io/native/scope/scope_request.hpp"

#include <algorithm>
#include <cstring>
#include <chrono>
#include <set>

#include "io/json/json.hpp"
#include "io/text/clock.hpp"

namespace shellctl::io::native {
namespace {

// The limits' keys, in the documented order, with where each value goes.
struct limit_key {
  const char* name;
  std::uint64_t scope_limits::*field;
};
constexpr limit_key kLimitKeys[] = {
    {"cpu_millicores", &scope_limits::cpu_millicores},
    {"memory_bytes", &scope_limits::memory_bytes},
    {"swap_bytes", &scope_limits::swap_bytes},
    {"pids", &scope_limits::pids},
    {"disk_bytes", &scope_limits::disk_bytes},
    {"input_bytes", &scope_limits::input_bytes},
    {"output_bytes", &scope_limits::output_bytes},
    {"max_jobs", &scope_limits::max_jobs},
    {"job_wall_seconds", &scope_limits::job_wall_seconds},
    {"open_files", &scope_limits::open_files},
    {"file_bytes", &scope_limits::file_bytes},
    {"network_bytes", &scope_limits::network_bytes},
    {"network_connections", &scope_limits::network_connections},
};

constexpr const char* kRequestKeys[] = {
    "scope_id",        "generation", "binding_ref",     "base_snapshot_ref", "input_file_refs",
    "capability_digest", "deadline", "network_targets", "limits"};

// "" when `o` has exactly `want` as keys (each once, none null), else what is wrong.
template <std::size_t N>
std::string exact_keys(const json::object& o, const char* const (&want)[N], const std::string& where) {
  std::set<std::string> seen;
  for (const auto& k : o.keys()) {
    if (std::none_of(std::begin(want), std::end(want), [&](const char* w) { return k == w; }))
      return where + "unknown key \"" + k + "\"";
    if (!seen.insert(k).second) return where + "key \"" + k + "\" appears twice";
    if (o.is_null(k)) return where + "\"" + k + "\" is null";
  }
  for (const char* w : want)
    if (!seen.count(w)) return where + "missing key \"" + w + "\"";
  return "";
}

request_problem invalid(std::string message) { return request_problem{422, "validation_error", std::move(message)}; }

bool parse_limits(const json::object& o, scope_limits& out, std::string& why) {
  const char* names[std::size(kLimitKeys)];
  for (std::size_t i = 0; i < std::size(kLimitKeys); ++i) names[i] = kLimitKeys[i].name;
  why = exact_keys(o, names, "limits: ");
  if (!why.empty()) return false;
  for (const auto& k : kLimitKeys) {
    const auto v = o.get_int(k.name);
    if (!v || *v < 0) {
      why = std::string("limits: \"") + k.name + "\" must be a non-negative integer";
      return false;
    }
    out.*k.field = static_cast<std::uint64_t>(*v);
  }
  return true;
}

}  // namespace

std::variant<create_request, request_problem> parse_create_request(std::string_view body,
                                                                   std::int64_t now,
                                                                   std::int64_t horizon_seconds) {
  auto parsed = json::object::parse(body);
  // Only an object is a request here (`null`, which the ordinary routes take as {}, is not).
  const auto first = body.find_first_not_of(" \t\r\n");
  if (!parsed || first == std::string_view::npos || body[first] != '{')
    return request_problem{400, "invalid_request", "Invalid JSON body"};
  const json::object& o = *parsed;
  create_request r;
  try {
    if (auto why = exact_keys(o, kRequestKeys, ""); !why.empty()) return invalid(why);
    r.scope_id = *o.get_string("scope_id");
    if (!valid_scope_id(r.scope_id)) return invalid("scope_id must match ^[a-z0-9][a-z0-9-]{0,62}$");
    const auto gen = *o.get_int("generation");
    if (gen < 1 || static_cast<std::uint64_t>(gen) > kMaxGeneration)
      return invalid("generation must be an integer from 1 to 2^53-1");
    r.generation = static_cast<std::uint64_t>(gen);
    r.binding_ref = *o.get_string("binding_ref");
    if (!valid_binding_ref(r.binding_ref))
      return invalid("binding_ref must be 1-256 bytes of printable ASCII");
    r.base_snapshot_ref = *o.get_string("base_snapshot_ref");
    if (!valid_ref(r.base_snapshot_ref))
      return invalid("base_snapshot_ref must be a relative path of [A-Za-z0-9._-]+ segments");
    r.input_file_refs = *o.get_string_array("input_file_refs");
    if (r.input_file_refs.size() > 64) return invalid("input_file_refs holds more than 64 refs");
    std::set<std::string> unique;
    for (const auto& ref : r.input_file_refs) {
      if (!valid_ref(ref))
        return invalid("input_file_refs: \"" + ref + "\" is not a relative path of [A-Za-z0-9._-]+ segments");
      if (!unique.insert(ref).second) return invalid("input_file_refs: \"" + ref + "\" appears twice");
    }
    r.capability_digest = *o.get_string("capability_digest");
    r.deadline = *o.get_string("deadline");
    const auto tp = text::parse_utc(r.deadline);
    if (!tp) return invalid("deadline must be YYYY-MM-DDTHH:MM:SSZ");
    const auto when = std::optional<std::int64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(tp->time_since_epoch()).count());
    if (*when <= now) return invalid("deadline is not in the future");
    if (*when - now > horizon_seconds)
      return invalid("deadline is beyond the supervisor's horizon of " +
                     std::to_string(horizon_seconds) + " s");
    r.deadline_epoch = *when;
    const auto targets = *o.get_object_array("network_targets");
    if (targets.size() > 16) return invalid("network_targets holds more than 16 targets");
    std::set<std::pair<std::string, std::uint16_t>> seen_targets;
    for (const auto& t : targets) {
      static constexpr const char* kTargetKeys[] = {"host", "port"};
      if (auto why = exact_keys(t, kTargetKeys, "network_targets: "); !why.empty()) return invalid(why);
      network_target nt;
      nt.host = *t.get_string("host");
      const auto port = *t.get_int("port");
      if (nt.host.empty() || nt.host.size() > 253) return invalid("network_targets: a host is empty or too long");
      if (port < 1 || port > 65535) return invalid("network_targets: a port is not 1-65535");
      nt.port = static_cast<std::uint16_t>(port);
      if (!seen_targets.insert({nt.host, nt.port}).second)
        return invalid("network_targets: " + nt.host + ":" + std::to_string(port) + " appears twice");
      r.network_targets.push_back(std::move(nt));
    }
    std::string why;
    if (!parse_limits(*o.get_object("limits"), r.limits, why)) return invalid(why);
    why = limits_problem(r.limits, !r.network_targets.empty());
    if (!why.empty()) return invalid(why);
  } catch (const json::type_error& e) {
    return invalid(e.what());
  }
  return r;
}

void write_limits(json::writer& w, const scope_limits& l) {
  w.begin_object();
  for (const auto& k : kLimitKeys) w.key(k.name).value(l.*k.field);
  w.end_object();
}

std::string limits_json(const scope_limits& l) {
  json::writer w;
  write_limits(w, l);
  std::string out = w.finish();
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::optional<scope_limits> limits_from_json(std::string_view text) {
  auto o = json::object::parse(text);
  if (!o) return std::nullopt;
  scope_limits l;
  std::string why;
  try {
    if (!parse_limits(*o, l, why)) return std::nullopt;
  } catch (const json::type_error&) {
    return std::nullopt;
  }
  return l;
}

std::string refs_json(const std::vector<std::string>& refs) {
  json::writer w;
  w.begin_array();
  for (const auto& r : refs) w.value(r);
  w.end_array();
  std::string out = w.finish();
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::optional<std::vector<std::string>> refs_from_json(std::string_view text) {
  // Wrapped in an object: io/json reads objects.
  auto o = json::object::parse("{\"r\":" + std::string(text) + "}");
  if (!o) return std::nullopt;
  try {
    return o->get_string_array("r");
  } catch (const json::type_error&) {
    return std::nullopt;
  }
}

}  // namespace shellctl::io::native
