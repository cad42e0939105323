#include "io/log/log_line.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "io/json/json.hpp"

namespace shellctl::io::log {

std::string_view level_name(level l) {
  switch (l) {
    case level::debug: return "debug";
    case level::info: return "info";
    case level::warn: return "warn";
    case level::error: return "error";
  }
  return "info";
}

std::int64_t now_unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_time(std::int64_t unix_us) {
  const std::time_t secs = static_cast<std::time_t>(unix_us / 1000000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char when[96];  // room for any int the compiler imagines in %04d
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((unix_us / 1000) % 1000));
  return when;
}

namespace {
bool plain_token(std::string_view v) {
  if (v.empty()) return false;
  for (unsigned char c : v)
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '=' || c == '\\') return false;
  return true;
}
}  // namespace

void append_line(std::string& out, format f, std::int64_t unix_us, level l, std::string_view msg,
                 const std::vector<field>& fields) {
  if (f == format::off) return;
  if (f == format::json) {
    out += "{\"time\":\"" + format_time(unix_us) + "\",\"level\":\"";
    out += level_name(l);
    out += "\",\"msg\":";
    json::append_string(out, msg);
    for (const auto& fl : fields) {
      out += ",\"" + fl.name + "\":";
      if (fl.number)
        out += fl.value;
      else
        json::append_string(out, fl.value);
    }
    out += "}\n";
    return;
  }
  out += format_time(unix_us);
  out += ' ';
  out += level_name(l);
  out += ' ';
  // The message is ours, but may carry a path or an error text: one line, always.
  for (char c : msg) out += (c == '\n' || c == '\r') ? ' ' : c;
  for (const auto& fl : fields) {
    out += ' ' + fl.name + '=';
    if (fl.number || plain_token(fl.value))
      out += fl.value;
    else
      json::append_string(out, fl.value);
  }
  out += '\n';
}

void write_stderr(const std::string& lines) {
  std::size_t off = 0;
  while (off < lines.size()) {
    const ssize_t n = ::write(STDERR_FILENO, lines.data() + off, lines.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace shellctl::io::log
