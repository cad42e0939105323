#include "actors/edge/requests.hpp"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "io/fs/sha256.hpp"
#include "io/json/json.hpp"
#include "io/text/percent.hpp"

namespace shellctl::actors {
namespace {

constexpr double max_timeout_s = 600;           // D5
constexpr std::int64_t max_output_limit = 524288;  // D5
constexpr std::int64_t default_output_limit = 16384;

// A decoding failure: thrown inside this file only (the JSON library throws its
// type_error from deep inside a read), caught once in decode_request.
struct bad_request {
  job_errc code;
  std::string message;
};

[[noreturn]] void invalid_json() { throw bad_request{job_errc::invalid_request, "Invalid JSON body"}; }

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
  if (off < 0) throw bad_request{job_errc::invalid_request, "offset must not be negative"};
  return static_cast<std::uint64_t>(off);
}

// The long-poll fields shared by run, wait and input, with each route's defaults as the
// original has them (docs/api.md "Long-polls"): run and input wait 30 s when no timeout is given,
// wait then checks once; run replaces any idle_flush_seconds <= 0 by 0.5, the others only
// 0. Read in the order offset, timeout, output_limit, idle_flush_seconds.
struct wait_rules {
  bool has_offset;
  bool timeout_defaults_to_30;
  bool negative_idle_is_default;
  bool may_return_on_input_wait;  // docs/api.md "Prompts": /wait and /input
};
constexpr wait_rules run_rules{false, true, true, false};
constexpr wait_rules wait_route_rules{true, false, false, true};
constexpr wait_rules input_rules{true, true, false, true};

wait_params read_wait(const io::json::object& o, wait_rules rules) {
  wait_params p;
  if (rules.has_offset) p.offset = read_offset(o);
  auto timeout = o.get_number("timeout").value_or(0);
  if (rules.timeout_defaults_to_30)
    p.timeout_s = timeout <= 0 ? 30 : clamp_timeout(timeout);
  else
    p.timeout_s = std::max(0.0, clamp_timeout(timeout));  // negative acts like 0
  p.limit = clamp_limit(o.get_int("output_limit"));
  auto idle = o.get_number("idle_flush_seconds").value_or(0);
  p.idle_flush_s = idle == 0 || (rules.negative_idle_is_default && idle < 0) ? 0.5 : idle;
  // Opt-in; the run's first wait is as it always was.
  if (rules.may_return_on_input_wait) p.return_on_input_wait = o.get_bool("return_on_input_wait").value_or(false);
  return p;
}

// "limits": {"memory_bytes": N, "pids": N, "cpu": F} (docs/api.md "Limits per job"). Ours, so
// strict where the original's fields are lenient: an unknown field is refused, since a
// misspelt limit would otherwise leave the job unlimited. Whole numbers for the counts (a
// fraction is a decode failure, as everywhere); ranges are the registry's to check.
io::sandbox::cgroups::run_limits read_limits(const io::json::object& o) {
  for (const auto& key : o.keys()) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower != "memory_bytes" && lower != "pids" && lower != "cpu")
      throw bad_request{job_errc::validation_error,
                        "limits: unknown field " + go_quote(key) + " (memory_bytes, pids, cpu)"};
  }
  io::sandbox::cgroups::run_limits l;
  auto count = [&o](const char* key) -> std::optional<std::uint64_t> {
    const auto v = o.get_int(key);
    if (!v) return std::nullopt;
    if (*v <= 0) throw bad_request{job_errc::validation_error, std::string("limits.") + key + " must be positive"};
    return static_cast<std::uint64_t>(*v);
  };
  l.memory_bytes = count("memory_bytes");
  l.pids = count("pids");
  l.cpu = o.get_number("cpu");
  if (l.cpu && !(*l.cpu > 0)) throw bad_request{job_errc::validation_error, "limits.cpu must be positive"};
  return l;
}

run_spec decode_run(const std::string& body) {
  auto o = parse_body(body);
  run_spec s;
  std::optional<std::vector<std::pair<std::string, std::string>>> env;
  std::optional<std::string> mode, stdin_source;
  try {
    s.script = o.get_string("script").value_or("");
    stdin_source = o.get_string("stdin");
    s.cwd = o.get_string("cwd").value_or("");
    env = o.get_string_map("env");
    mode = o.get_string("mode");
    if (auto term = o.get_object("terminal")) {
      s.cols = term->get_int("cols").value_or(0);
      s.rows = term->get_int("rows").value_or(0);
    }
    s.wait = read_wait(o, run_rules);
    if (auto limits = o.get_object("limits")) s.limits = read_limits(*limits);
  } catch (const io::json::type_error&) {
    invalid_json();
  }
  if (s.script.empty()) throw bad_request{job_errc::invalid_request, "script is required"};
  if (env) {
    for (auto& [k, v] : *env) {
      if (k.empty()) throw bad_request{job_errc::validation_error, "env names must be non-empty"};
      if (k.find('=') != std::string::npos)
        throw bad_request{job_errc::validation_error, "env name must not contain '=': " + go_quote(k)};
      if (k.find('\0') != std::string::npos || v.find('\0') != std::string::npos)
        throw bad_request{job_errc::validation_error, "env entries must not contain NUL"};
    }
    s.env = std::move(*env);
  }
  if (!mode || mode->empty() || *mode == "pty")
    s.mode = job_mode::pty;
  else if (*mode == "stdio")
    s.mode = job_mode::stdio;
  else
    throw bad_request{job_errc::validation_error, "invalid job mode " + go_quote(*mode)};
  // Ours: "pipe" gives a stdio job a stdin that /input writes to; absent or "null" is the
  // original's /dev/null. A PTY job's stdin is its terminal.
  if (stdin_source && !stdin_source->empty() && *stdin_source != "null") {
    if (*stdin_source != "pipe")
      throw bad_request{job_errc::validation_error,
                        "invalid stdin " + go_quote(*stdin_source) + " (\"pipe\" or \"null\")"};
    if (s.mode != job_mode::stdio)
      throw bad_request{job_errc::validation_error,
                        "stdin \"pipe\" is for stdio jobs; a pty job reads its terminal (use /input)"};
    s.stdin_pipe = true;
  }
  return s;
}

std::string checked_idempotency_key(const std::string& key) {
  // 1-255 printable ASCII characters (the HTTP head already refused control characters).
  const bool printable = std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
  if (key.empty() || key.size() > 255 || !printable)
    throw bad_request{job_errc::validation_error,
                      "Idempotency-Key must be 1 to 255 printable ASCII characters"};
  return key;
}

// What makes a run the same job: script, cwd (as given), env (in name order: a JSON
// object's order means nothing), mode and terminal size, each length-prefixed so no two
// requests share an encoding. The wait fields are left out: a retry may wait longer.
std::string job_fields_digest(const run_spec& spec) {
  io::fs::sha256 digest;
  auto field = [&](std::string_view v) {
    digest.update(std::to_string(v.size()) + ":");
    digest.update(v);
  };
  field(spec.script);
  field(spec.cwd);
  auto env = spec.env;
  std::sort(env.begin(), env.end());
  field(std::to_string(env.size()));
  for (const auto& [k, v] : env) {
    field(k);
    field(v);
  }
  field(spec.mode == job_mode::stdio ? "stdio" : "pty");
  field(spec.stdin_pipe ? "pipe" : "null");
  field(std::to_string(spec.cols) + "x" + std::to_string(spec.rows));
  // Only when asked for, so a key stored before limits existed still matches its repeat.
  if (spec.limits.any()) {
    const auto& l = spec.limits;
    field("limits");
    field(l.memory_bytes ? std::to_string(*l.memory_bytes) : "-");
    field(l.pids ? std::to_string(*l.pids) : "-");
    field(l.cpu ? std::to_string(*l.cpu) : "-");
  }
  return digest.hex();
}

wait_params decode_wait(const std::string& body) {
  auto o = parse_body(body);
  try {
    return read_wait(o, wait_route_rules);
  } catch (const io::json::type_error&) {
    invalid_json();
  }
}

input_request decode_input(const std::string& body) {
  auto o = parse_body(body);
  input_request in;
  try {
    in.text = o.get_string("text").value_or("");
    in.eof = o.get_bool("eof").value_or(false);
    in.p = read_wait(o, input_rules);
  } catch (const io::json::type_error&) {
    invalid_json();
  }
  return in;
}

// docs/api.md "Job control": {"signal": "INT"}: a name with or without SIG (any case), or its
// number as an integer or a string of digits; only the signals of job_signals.
signal_request decode_signal(const std::string& body) {
  auto o = parse_body(body);
  std::optional<std::string> given;
  try {
    given = o.get_string("signal");
  } catch (const io::json::type_error&) {
    try {
      if (auto n = o.get_int("signal")) given = std::to_string(*n);
    } catch (const io::json::type_error&) {
      throw bad_request{job_errc::validation_error, "signal must be a signal name or number"};
    }
  }
  if (!given) throw bad_request{job_errc::validation_error, "signal is required"};
  auto signo = parse_job_signal(*given);
  if (!signo) throw bad_request{job_errc::validation_error, "unknown signal " + go_quote(*given)};
  signal_request r;
  r.signo = *signo;
  return r;
}

// POST /resize (docs/api.md "Job control"): {"cols": C, "rows": R}, whole numbers from 1 to
// 4096 each. A value of the wrong type (a string, a fraction) is a decode failure as on
// every other route (400 Invalid JSON body); a missing one or one out of range is 422.
resize_request decode_resize(const std::string& body) {
  auto o = parse_body(body);
  resize_request r;
  auto dimension = [&](const char* key) {
    std::optional<std::int64_t> v;
    try {
      v = o.get_int(key);
    } catch (const io::json::type_error&) {
      invalid_json();
    }
    if (!v || *v < 1 || *v > 4096)
      throw bad_request{job_errc::validation_error, std::string(key) + " must be an integer from 1 to 4096"};
    return static_cast<int>(*v);
  };
  r.cols = dimension("cols");
  r.rows = dimension("rows");
  return r;
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

using io::text::query_param;

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

decoded_request decode(const io::http::request& req, const route_match& m) {
  switch (m.id) {
    case route::healthz:  // answered by the front; never decoded
    case route::openapi:
    case route::info:
    case route::ports:  // asked of a port_scan by the edge
    case route::metrics:  // answered by the edge from metrics_registry
    case route::worker_usage:  // answered by the edge from the store (a scope's worker)
    case route::stream:   // decoded by decode_stream_offset, opened by the edge
    case route::snapshot_save:  // decoded by decode_snapshot_excludes, run by the gate
    case route::snapshot_restore:
    case route::file_read:  // the file routes: decode_file_request (actors/edge/file_requests.hpp)
    case route::file_write:
    case route::file_stat:
    case route::file_list:
    case route::file_mkdir:
    case route::file_delete:
    case route::file_move:
      break;
    case route::run: {
      run_request run{decode_run(req.body), {}, {}};
      if (const auto* key = req.find_header("Idempotency-Key")) {
        run.idempotency_key = checked_idempotency_key(*key);
        run.fields_sha256 = job_fields_digest(run.spec);
      }
      return run;
    }
    case route::wait:
      return wait_request{m.job_id, decode_wait(req.body)};
    case route::input: {
      auto in = decode_input(req.body);
      in.job_id = m.job_id;
      return in;
    }
    case route::tail:
      return tail_request{m.job_id, clamp_limit(parse_int(query_param(req.query, "output_limit")))};
    case route::status:
      return status_request{m.job_id};
    case route::terminate:
      return terminate_request{m.job_id, decode_grace(req.body)};
    case route::signal: {
      auto r = decode_signal(req.body);
      r.job_id = m.job_id;
      return r;
    }
    case route::activity: {
      // Like a wait's idle flush: quiet this long (seconds) and reading counts as waiting.
      auto idle = parse_float(query_param(req.query, "idle_flush_seconds"));
      if (idle && (!std::isfinite(*idle) || *idle < 0))
        throw bad_request{job_errc::validation_error, "idle_flush_seconds must be a non-negative number"};
      return activity_request{m.job_id, idle && *idle > 0 ? std::min(*idle, 600.0) : 0.5};
    }
    case route::resize: {
      auto r = decode_resize(req.body);
      r.job_id = m.job_id;
      return r;
    }
    case route::remove: {
      bool force = query_param(req.query, "force") == std::optional<std::string>("true");
      double grace = parse_float(query_param(req.query, "grace_seconds")).value_or(10);
      return delete_request{m.job_id, force, grace};
    }
    case route::list: {
      auto limit = parse_int(query_param(req.query, "limit")).value_or(0);
      std::size_t n = limit <= 0 ? 50 : static_cast<std::size_t>(std::min<std::int64_t>(limit, 200));
      auto status = query_param(req.query, "status");
      list_request list{false, std::nullopt, n};
      if (status && !status->empty()) {
        list.filtered = true;
        list.status = io::store::parse_status(*status);
      }
      return list;
    }
  }
  return job_error_view{job_errc::internal_error, "no decoder for this route"};
}

}  // namespace

const std::vector<std::pair<std::string_view, int>>& job_signals() {
  static const std::vector<std::pair<std::string_view, int>> table = {
      {"INT", SIGINT},   {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"HUP", SIGHUP},
      {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP},
      {"CONT", SIGCONT}, {"WINCH", SIGWINCH}};
  return table;
}

std::optional<int> parse_job_signal(std::string_view given) {
  std::string name;
  for (char c : given) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool digits = !name.empty() && name.size() <= 3 &&
                      name.find_first_not_of("0123456789") == std::string::npos;
  if (!digits && name.rfind("SIG", 0) == 0) name.erase(0, 3);
  for (const auto& [n, signo] : job_signals())
    if (digits ? std::to_string(signo) == name : n == name) return signo;
  return std::nullopt;
}

decoded_request decode_request(const io::http::request& req, const route_match& route) {
  try {
    return decode(req, route);
  } catch (const bad_request& e) {
    return job_error_view{e.code, e.message};
  }
}

std::variant<job_error_view, std::uint64_t> decode_stream_offset(const io::http::request& req) {
  std::optional<std::string> given;
  if (const std::string* last = req.find_header("last-event-id"))
    given = *last;
  else
    given = query_param(req.query, "offset");
  if (!given || given->empty()) return std::uint64_t{0};
  const bool digits = given->size() <= 19 && given->find_first_not_of("0123456789") == std::string::npos;
  if (!digits)
    return job_error_view{job_errc::invalid_request, "offset must be a non-negative integer"};
  return static_cast<std::uint64_t>(std::stoull(*given));
}

std::variant<job_error_view, std::vector<std::string>> decode_snapshot_excludes(
    const std::string& body) {
  // Go reads the body through a 64 KiB LimitReader: JSON cut there is a decode error.
  const std::string_view head = std::string_view(body).substr(0, 65536);
  if (head.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return std::vector<std::string>{};
  auto obj = io::json::object::parse(head);
  if (!obj)
    return job_error_view{job_errc::invalid_request, "invalid JSON body: not a JSON object"};
  try {
    return obj->get_string_array("excludes").value_or(std::vector<std::string>{});
  } catch (const io::json::type_error& e) {
    return job_error_view{job_errc::invalid_request,
                          std::string("invalid JSON body: excludes: ") + e.what()};
  }
}


}  // namespace shellctl::actors
