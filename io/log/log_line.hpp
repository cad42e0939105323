#pragma once
// The server's operational log on stderr (issue: operations logs): one line per event, as
// text for a terminal or as one JSON object per line for a collector. The request log
// (io/http/access_log.hpp), job lifecycle events (actors/services/event_log.hpp) and the startup and
// warning lines (actors/wiring/serve.cpp) are all written through here, so every line of a JSON
// log parses and carries time, level and msg.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::log {

enum class format { off, text, json };

// Levels as --log-level names them; a line is written when its level >= the configured one.
enum class level { debug = 0, info = 1, warn = 2, error = 3 };
std::string_view level_name(level l);

struct field {
  std::string name;   // a plain identifier
  std::string value;  // any bytes: quoted as JSON where needed
  bool number = false;  // written bare in JSON (value must be a JSON number)
};

// Wall time now, in microseconds since the Unix epoch.
std::int64_t now_unix_us();

// "2026-12-02T13:45:01.123Z" (UTC, milliseconds).
std::string format_time(std::int64_t unix_us);

// JSON: {"time":..,"level":..,"msg":..,<fields>}. Text: "<time> <level> <msg> name=value...",
// a value quoted as a JSON string when it is not a plain token, so that no field can split
// or forge a line. Appends the newline.
void append_line(std::string& out, format f, std::int64_t unix_us, level l, std::string_view msg,
                 const std::vector<field>& fields);

// Writes `lines` to stderr whole (partial writes and EINTR continued; an error drops the
// rest: a log must never stop the server).
void write_stderr(const std::string& lines);

}  // namespace shellctl::io::log
