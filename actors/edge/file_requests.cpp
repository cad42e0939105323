#include "actors/edge/file_requests.hpp"

#include <chrono>
#include <cstdio>

#include "actors/edge/views.hpp"
#include "io/http/wire.hpp"
#include "io/json/json.hpp"
#include "io/text/clock.hpp"
#include "io/text/percent.hpp"

namespace shellctl::actors {
namespace {

using io::text::query_param;

struct bad_file_request {
  job_errc code;
  std::string message;
};

[[noreturn]] void refuse(std::string message) {
  throw bad_file_request{job_errc::invalid_request, std::move(message)};
}

// Go's strconv.ParseBool; absent is `otherwise`.
bool flag(const std::optional<std::string>& v, const char* name, bool otherwise = false) {
  if (!v) return otherwise;
  const std::string& s = *v;
  if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False" || s.empty()) return false;
  refuse(std::string(name) + " must be true or false");
}

// An octal permission string ("0644", "755"); setuid and setgid are refused (docs/api.md
// "Files": files are created with the server's uid; a set-id bit would hand a job the server's
// identity).
unsigned mode_value(const std::string& s, const char* name) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("01234567") != std::string::npos)
    refuse(std::string(name) + " must be an octal mode such as 0644");
  const unsigned m = static_cast<unsigned>(std::stoul(s, nullptr, 8));
  if (m > 07777) refuse(std::string(name) + " must be at most 07777");
  if (m & 06000) refuse(std::string(name) + ": setuid and setgid bits are refused");
  return m;
}

// The path a file route names: required (an absent one is empty, which is invalid).
std::string path_param(const io::http::request& req) { return query_param(req.query, "path").value_or(""); }

std::size_t list_limit(const std::optional<std::string>& v) {
  // Lenient as GET /v1/jobs is: not a positive number is the default; above the max, the max.
  if (!v || v->empty() || v->size() > 18 || v->find_first_not_of("0123456789") != std::string::npos) return 1000;
  const auto n = std::stoull(*v);
  if (n == 0) return 1000;
  return n > 10000 ? 10000 : static_cast<std::size_t>(n);
}

io::json::object body_object(const std::string& body) {
  auto obj = io::json::object::parse(body);
  if (!obj) refuse("invalid JSON body: not a JSON object");
  return std::move(*obj);
}

template <class T, class F>
T field(F get, const char* name) {
  try {
    return get();
  } catch (const io::json::type_error& e) {
    refuse(std::string("invalid JSON body: ") + name + ": " + e.what());
  }
}

decoded_file_request decode(const io::http::request& req, route r) {
  switch (r) {
    case route::file_stat:
      return file_stat_request{path_param(req)};
    case route::file_list:
      return file_list_request{path_param(req), list_limit(query_param(req.query, "limit"))};
    case route::file_read:
      return file_read_request{path_param(req)};
    case route::file_delete:
      return file_delete_request{path_param(req), flag(query_param(req.query, "recursive"), "recursive")};
    case route::file_write: {
      file_write_request w;
      w.path = path_param(req);
      if (auto m = query_param(req.query, "mode")) w.mode = mode_value(*m, "mode");
      w.parents = flag(query_param(req.query, "parents"), "parents");
      return w;
    }
    case route::file_mkdir: {
      auto obj = body_object(req.body);
      file_mkdir_request m;
      m.path = field<std::optional<std::string>>([&] { return obj.get_string("path"); }, "path").value_or("");
      m.parents = field<std::optional<bool>>([&] { return obj.get_bool("parents"); }, "parents").value_or(false);
      if (auto mode = field<std::optional<std::string>>([&] { return obj.get_string("mode"); }, "mode"))
        m.mode = mode_value(*mode, "mode");
      return m;
    }
    case route::file_move: {
      auto obj = body_object(req.body);
      file_move_request m;
      m.from = field<std::optional<std::string>>([&] { return obj.get_string("from"); }, "from").value_or("");
      m.to = field<std::optional<std::string>>([&] { return obj.get_string("to"); }, "to").value_or("");
      m.overwrite = field<std::optional<bool>>([&] { return obj.get_bool("overwrite"); }, "overwrite").value_or(false);
      return m;
    }
    default:
      break;
  }
  return job_error_view{job_errc::internal_error, "not a file route"};
}

std::string octal(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string mtime_text(std::int64_t t) {
  return io::text::format_utc(std::chrono::system_clock::time_point(std::chrono::seconds(t)));
}

void write_entry(io::json::writer& w, const io::fs::entry_meta& m) {
  w.key("type").value(io::fs::type_name(m.type));
  w.key("size").value(m.size);
  w.key("mode").value(octal(m.mode));
  w.key("mtime").value(mtime_text(m.mtime));
}

bool digits(std::string_view s) { return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string_view::npos; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

decoded_file_request decode_file_request(const io::http::request& req, route r) {
  try {
    return decode(req, r);
  } catch (const bad_file_request& e) {
    return job_error_view{e.code, e.message};
  }
}

byte_span pick_range(const std::string* range_header, std::uint64_t size) {
  byte_span whole{byte_span::kind::whole, 0, size};
  if (range_header == nullptr) return whole;
  std::string_view h = trim(*range_header);
  if (h.size() < 6) return whole;
  std::string unit(h.substr(0, 6));
  for (auto& c : unit) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (unit != "bytes=") return whole;
  h = trim(h.substr(6));
  if (h.find(',') != std::string_view::npos) return whole;  // several ranges: ignored
  const auto dash = h.find('-');
  if (dash == std::string_view::npos) return whole;
  const auto first = trim(h.substr(0, dash));
  const auto last = trim(h.substr(dash + 1));
  const byte_span refused{byte_span::kind::unsatisfiable, 0, 0};
  if (first.empty()) {  // bytes=-N: the last N bytes
    if (!digits(last)) return whole;
    const std::uint64_t n = std::stoull(std::string(last));
    if (n == 0 || size == 0) return refused;
    const std::uint64_t len = n < size ? n : size;
    return {byte_span::kind::partial, size - len, len};
  }
  if (!digits(first) || (!last.empty() && !digits(last))) return whole;
  const std::uint64_t a = std::stoull(std::string(first));
  if (!last.empty()) {
    const std::uint64_t b = std::stoull(std::string(last));
    if (b < a) return whole;  // invalid: ignored
    if (a >= size) return refused;
    const std::uint64_t end = b < size - 1 ? b : size - 1;
    return {byte_span::kind::partial, a, end - a + 1};
  }
  if (a >= size) return refused;
  return {byte_span::kind::partial, a, size - a};
}

io::http::response file_content_head(const file_opened& f, const byte_span& span) {
  io::http::response r;
  r.status = span.k == byte_span::kind::partial ? 206 : 200;
  r.headers.push_back({"Content-Type", "application/octet-stream"});
  r.headers.push_back({"Accept-Ranges", "bytes"});
  r.headers.push_back({"X-File-Size", std::to_string(f.meta.size)});
  r.headers.push_back({"X-File-Mode", octal(f.meta.mode)});
  r.headers.push_back({"Last-Modified", io::http::wire::http_date(static_cast<std::time_t>(f.meta.mtime))});
  if (span.k == byte_span::kind::partial)
    r.headers.push_back({"Content-Range", "bytes " + std::to_string(span.offset) + "-" +
                                              std::to_string(span.offset + span.length - 1) + "/" +
                                              std::to_string(f.meta.size)});
  r.stream_length = span.length;
  return r;
}

io::http::response range_refused(const file_opened& f) {
  auto r = error_response(job_error_view{
      job_errc::range_not_satisfiable,
      "the range starts at or beyond the end of the file (" + std::to_string(f.meta.size) + " bytes)"});
  r.headers.push_back({"Content-Range", "bytes */" + std::to_string(f.meta.size)});
  return r;
}

std::string file_stat_json(const file_stat& s) {
  io::json::writer w;
  w.begin_object();
  w.key("path").value(s.path);
  write_entry(w, s.meta);
  if (s.meta.target) w.key("target").value(*s.meta.target);
  w.end_object();
  return w.finish();
}

std::string file_listing_json(const file_listing& l) {
  io::json::writer w;
  w.begin_object();
  w.key("path").value(l.path);
  w.key("entries").begin_array();
  for (const auto& e : l.entries) {
    w.begin_object();
    w.key("name").value(e.name);
    write_entry(w, e);
    w.end_object();
  }
  w.end_array();
  w.key("truncated").value(l.truncated);
  w.end_object();
  return w.finish();
}

std::string file_done_json(const file_done& d) {
  io::json::writer w;
  w.begin_object();
  w.key("path").value(d.path);
  if (d.deleted) w.key("deleted").value(true);
  w.end_object();
  return w.finish();
}

std::string file_written_json(const file_written& f) {
  io::json::writer w;
  w.begin_object();
  w.key("path").value(f.path);
  w.key("size").value(f.size);
  w.key("sha256").value(f.sha256_hex);
  w.end_object();
  return w.finish();
}

}  // namespace shellctl::actors
