#include "io/http/access_log.hpp"

#include <sys/random.h>

#include <atomic>
#include <cstdio>
#include <ctime>

#include "io/json/json.hpp"

namespace shellctl::io::http {

bool acceptable_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string new_request_id() {
  // A random process prefix and a counter: unique, cheap, and not guessable across runs.
  static const std::uint32_t prefix = [] {
    std::uint32_t p = 0;
    if (::getrandom(&p, sizeof p, GRND_NONBLOCK) != sizeof p) p = static_cast<std::uint32_t>(std::time(nullptr));
    return p;
  }();
  static std::atomic<std::uint32_t> counter{0};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", prefix, counter.fetch_add(1, std::memory_order_relaxed));
  return buf;
}

void append_access_line(std::string& out, log_format f, const access_entry& e, std::int64_t unix_us) {
  const std::string when = io::log::format_time(unix_us);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", static_cast<double>(e.duration_us) / 1000.0);
  if (f == log_format::json) {
    out += "{\"time\":\"" + when;
    out += "\",\"level\":\"info\",\"msg\":\"request\",\"request_id\":";
    json::append_string(out, e.request_id);
    out += ",\"method\":";
    json::append_string(out, e.method);
    out += ",\"route\":";
    json::append_string(out, e.route);
    out += ",\"status\":" + std::to_string(e.status) + ",\"duration_ms\":" + ms;
    if (!e.job_id.empty()) {
      out += ",\"job_id\":";
      json::append_string(out, e.job_id);
    }
    out += "}\n";
    return;
  }
  // Text: the job id is a path segment a client chose; quoted as JSON so that it cannot
  // break the line.
  out += when;
  out += " request " + e.request_id + " " + e.method + " " + e.route + " " +
         std::to_string(e.status) + " " + ms + "ms";
  if (!e.job_id.empty()) {
    out += " job=";
    json::append_string(out, e.job_id);
  }
  out += "\n";
}

}  // namespace shellctl::io::http
