#include "actors/router.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "actors/api_views.hpp"
#include "actors/routes.hpp"
#include "io/json/json.hpp"
#include "io/text/percent.hpp"

namespace shellctl::actors {
namespace {

constexpr double max_timeout_s = 600;           // D5
constexpr std::int64_t max_output_limit = 524288;  // D5
constexpr std::int64_t default_output_limit = 16384;

struct bad_request {
  int status;
  std::string code;
  std::string message;
};

[[noreturn]] void invalid_json() { throw bad_request{400, "invalid_request", "Invalid JSON body"}; }

io::json::object parse_body(const std::string& body) {
  auto obj = io::json::object::parse(body);
  if (!obj) invalid_json();
  return std::move(*obj);
}

std::uint64_t clamp_limit(std::optional<std::int64_t> v) {
  if (!v || *v <= 0) return default_output_limit;
  return static_cast<std::uint64_t>(std::min(*v, max_output_limit));
}

double clamp_timeout(double t) { return std::isnan(t) ? 0 : std::min(t, max_timeout_s); }

// offset: absent = 0, negative = 400 invalid_request (D5).
std::uint64_t read_offset(const io::json::object& o) {
  auto off = o.get_int("offset").value_or(0);
  if (off < 0) throw bad_request{400, "invalid_request", "offset must not be negative"};
  return static_cast<std::uint64_t>(off);
}

run_spec decode_run(const std::string& body) {
  auto o = parse_body(body);
  run_spec s;
  std::optional<std::vector<std::pair<std::string, std::string>>> env;
  std::optional<std::string> mode;
  try {
    s.script = o.get_string("script").value_or("");
    s.cwd = o.get_string("cwd").value_or("");
    env = o.get_string_map("env");
    mode = o.get_string("mode");
    if (auto term = o.get_object("terminal")) {
      s.cols = term->get_int("cols").value_or(0);
      s.rows = term->get_int("rows").value_or(0);
    }
    auto timeout = o.get_number("timeout").value_or(0);
    s.wait.timeout_s = timeout <= 0 ? 30 : clamp_timeout(timeout);
    s.wait.limit = clamp_limit(o.get_int("output_limit"));
    auto idle = o.get_number("idle_flush_seconds").value_or(0);
    s.wait.idle_flush_s = idle <= 0 ? 0.5 : idle;
  } catch (const io::json::type_error&) {
    invalid_json();
  }
  if (s.script.empty()) throw bad_request{400, "invalid_request", "script is required"};
  if (env) {
    for (auto& [k, v] : *env) {
      if (k.empty()) throw bad_request{422, "validation_error", "env names must be non-empty"};
      if (k.find('=') != std::string::npos)
        throw bad_request{422, "validation_error", "env name must not contain '=': " + go_quote(k)};
      if (k.find('\0') != std::string::npos || v.find('\0') != std::string::npos)
        throw bad_request{422, "validation_error", "env entries must not contain NUL"};
    }
    s.env = std::move(*env);
  }
  if (!mode || mode->empty() || *mode == "pty")
    s.mode = "pty";
  else if (*mode == "stdio")
    s.mode = "stdio";
  else
    throw bad_request{422, "validation_error", "invalid job mode " + go_quote(*mode)};
  return s;
}

wait_params decode_wait(const std::string& body) {
  auto o = parse_body(body);
  wait_params p;
  try {
    p.offset = read_offset(o);
    // Not defaulted by this route: absent/0 means "check once"; negative acts like 0.
    p.timeout_s = std::max(0.0, clamp_timeout(o.get_number("timeout").value_or(0)));
    p.limit = clamp_limit(o.get_int("output_limit"));
    auto idle = o.get_number("idle_flush_seconds").value_or(0);
    p.idle_flush_s = idle == 0 ? 0.5 : idle;
  } catch (const io::json::type_error&) {
    invalid_json();
  }
  return p;
}

op_input decode_input(const std::string& body) {
  auto o = parse_body(body);
  op_input in;
  try {
    in.text = o.get_string("text").value_or("");
    in.p.offset = read_offset(o);
    auto timeout = o.get_number("timeout").value_or(0);
    in.p.timeout_s = timeout <= 0 ? 30 : clamp_timeout(timeout);
    in.p.limit = clamp_limit(o.get_int("output_limit"));
    auto idle = o.get_number("idle_flush_seconds").value_or(0);
    in.p.idle_flush_s = idle == 0 ? 0.5 : idle;
  } catch (const io::json::type_error&) {
    invalid_json();
  }
  return in;
}

// Terminate ignores body errors entirely: empty, malformed or mistyped means default.
double decode_grace(const std::string& body) {
  auto o = io::json::object::parse(body);
  if (!o) return 10;
  try {
    return o->get_number("grace_seconds").value_or(10);
  } catch (const io::json::type_error&) {
    return 10;
  }
}

// ---- query strings (Go's url.Query: first value wins, %XX and '+' decoded)

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  size_t i = 0;
  while (i <= query.size()) {
    size_t j = query.find_first_of("&;", i);
    if (j == std::string_view::npos) j = query.size();
    auto pair = query.substr(i, j - i);
    auto eq = pair.find('=');
    auto key = io::text::percent_decode(pair.substr(0, eq), true);
    if (key == name && !pair.empty())
      return eq == std::string_view::npos ? std::string() : io::text::percent_decode(pair.substr(eq + 1), true);
    i = j + 1;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parse_int(const std::optional<std::string>& s) {
  if (!s || s->empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s->c_str(), &end, 10);
  if (errno || *end) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::optional<std::string>& s) {
  if (!s || s->empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s->c_str(), &end);
  if (*end) return std::nullopt;
  return v;
}

void dispatch(caf::event_based_actor* self, const router_config& cfg, const caf::actor& registry,
              http_call& call) {
  auto& req = call.req;
  if (auto r = stateless_answer(req, cfg)) {
    call.resp.send(std::move(*r));
    return;
  }
  auto m = match_route(req.method, req.path);
  try {
    auto to_job = [&](job_op op) {
      self->send(registry, job_call{m.job_id, std::move(op), std::move(call.resp)});
    };
    switch (m.id) {
      case route::healthz:
        break;
      case route::run:
        self->send(registry, run_call{decode_run(req.body), std::move(call.resp)});
        break;
      case route::wait:
        to_job(op_wait{decode_wait(req.body)});
        break;
      case route::input:
        to_job(decode_input(req.body));
        break;
      case route::tail: {
        auto limit = parse_int(query_param(req.query, "output_limit"));
        to_job(op_tail{clamp_limit(limit)});
        break;
      }
      case route::status:
        to_job(op_status{});
        break;
      case route::terminate:
        to_job(op_terminate{decode_grace(req.body)});
        break;
      case route::remove: {
        bool force = query_param(req.query, "force") == std::optional<std::string>("true");
        double grace = parse_float(query_param(req.query, "grace_seconds")).value_or(10);
        to_job(op_delete{force, grace});
        break;
      }
      case route::list: {
        auto limit = parse_int(query_param(req.query, "limit")).value_or(0);
        std::size_t n = limit <= 0 ? 50 : static_cast<std::size_t>(std::min<std::int64_t>(limit, 200));
        auto status = query_param(req.query, "status");
        if (status && status->empty()) status.reset();
        self->send(registry, list_call{status, n, std::move(call.resp)});
        break;
      }
    }
  } catch (const bad_request& e) {
    call.resp.send(error_response(e.status, e.code, e.message));
  } catch (const std::exception& e) {
    // Never let the router die: every request behind this one would go unanswered.
    call.resp.send(error_response(500, "internal_error", e.what()));
  }
}

}  // namespace

std::optional<io::http::response> stateless_answer(const io::http::request& req,
                                                   const router_config& cfg) {
  auto m = match_route(req.method, req.path);
  if (m.result == route_match::kind::not_found)
    return error_response(404, "not_found", "404 page not found");
  if (m.result == route_match::kind::method_not_allowed) {
    auto r = error_response(405, "method_not_allowed", "Method Not Allowed");
    r.headers.push_back({"Allow", m.allow});
    return r;
  }
  if (m.id == route::healthz) return json_response(200, "{\"status\":\"ok\"}\n");
  if (!bearer_matches(req.find_header("authorization"), cfg.token))
    return error_response(401, "unauthorized", "Missing or invalid bearer token");
  return std::nullopt;
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

std::string go_quote(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f || c >= 0x80) {
          // Printable UTF-8 stays as is; anything else is \xNN (Go's %q).
          if (c >= 0x80) {
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
            bool ok = len > 0 && i + len <= s.size();
            for (size_t k = 1; ok && k < len; ++k)
              ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
            if (ok) {
              out.append(s.substr(i, len));
              i += len - 1;
              break;
            }
          }
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

caf::behavior router(caf::event_based_actor* self, router_config cfg, caf::actor registry) {
  return {
      [self, cfg, registry](http_call& call) { dispatch(self, cfg, registry, call); },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
