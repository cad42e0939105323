#include "bin/dify-agent/client/stub_client.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <random>

#include "bin/dify-agent/command_tree.hpp"
#include "bin/dify-agent/client/json_read.hpp"
#include "io/json/json.hpp"

namespace shellctl::dify_agent {

namespace {

constexpr const char* expired_code = "agent_stub_authorization_expired";
constexpr std::size_t max_upload_response = 1024 * 1024;

// Go's `%v` of a decoded JSON value (legacy decoding prints the detail with it).
std::string go_value(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::STRING: return std::string(std::string_view(e));
    case simdjson::dom::element_type::BOOL: return bool(e) ? "true" : "false";
    case simdjson::dom::element_type::NULL_VALUE: return "<nil>";
    case simdjson::dom::element_type::INT64: return std::to_string(int64_t(e));
    case simdjson::dom::element_type::UINT64: return std::to_string(uint64_t(e));
    case simdjson::dom::element_type::DOUBLE: {
      char b[64];
      std::snprintf(b, sizeof b, "%g", double(e));
      return b;
    }
    case simdjson::dom::element_type::ARRAY: {
      std::string out = "[";
      bool first = true;
      for (auto v : simdjson::dom::array(e)) {
        if (!first) out += " ";
        first = false;
        out += go_value(v);
      }
      return out + "]";
    }
    case simdjson::dom::element_type::OBJECT: {
      // Go prints map[k:v ...] with sorted keys.
      std::map<std::string, std::string> kv;
      for (auto f : simdjson::dom::object(e)) kv[std::string(f.key)] = go_value(f.value);
      std::string out = "map[";
      bool first = true;
      for (auto& [k, v] : kv) {
        if (!first) out += " ";
        first = false;
        out += k + ":" + v;
      }
      return out + "]";
    }
  }
  return "";
}

std::string random_boundary() {
  std::random_device rd;
  static const char hex[] = "0123456789abcdef";
  std::string b;
  for (int i = 0; i < 60; ++i) b += hex[rd() % 16];
  return b;
}

// Go's mime/multipart quoting of a Content-Disposition parameter.
std::string escape_quotes(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string json_string(const std::string& s) {
  std::string out;
  io::json::append_string(out, s);
  return out;
}

std::string structured_error(long status, const std::string& body) {
  std::string message = body;
  std::string code;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) == simdjson::SUCCESS && doc.is_object()) {
    simdjson::dom::element detail;
    if (doc["detail"].get(detail) == simdjson::SUCCESS) {
      if (detail.is_string()) {
        message = std::string(std::string_view(detail));
      } else if (detail.is_null()) {
        message = "";  // Go decodes null into a string as ""
      } else if (detail.is_object()) {
        std::string_view c, m;
        bool good = true;
        simdjson::dom::element ce, me;
        if (detail["code"].get(ce) == simdjson::SUCCESS && !ce.is_null()) {
          if (ce.get(c) != simdjson::SUCCESS) good = false;
        }
        if (detail["message"].get(me) == simdjson::SUCCESS && !me.is_null()) {
          if (me.get(m) != simdjson::SUCCESS) good = false;
        }
        if (good) {
          code = std::string(c);
          message = m.empty() ? simdjson::minify(detail) : std::string(m);
        }
      }
    }
  }
  if (code == expired_code)
    return "HTTP " + std::to_string(status) +
           ": Agent Stub authorization expired after 5 minutes; the authorization in this "
           "process will not refresh automatically; start a new shell tool call and retry the "
           "command";
  return "HTTP " + std::to_string(status) + ": " + message;
}

std::string legacy_error(const std::string& op, long status, const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc, detail;
  if (parser.parse(body).get(doc) == simdjson::SUCCESS && doc.is_object() &&
      doc["detail"].get(detail) == simdjson::SUCCESS && !detail.is_null())
    return "agent stub " + op + " failed (HTTP " + std::to_string(status) + "): " + go_value(detail);
  return "agent stub " + op + " failed (HTTP " + std::to_string(status) + "): " + body;
}

stub_client::reply stub_client::call(const std::string& method, const std::string& path,
                                      const std::string& json_body, long timeout_ms,
                                      std::size_t max_body) const {
  http_request req;
  req.method = method;
  req.url = env_.base_url + path;
  req.headers.push_back("Authorization: Bearer " + env_.jwe);
  if (method != "GET") {
    req.headers.push_back("Content-Type: application/json");
    req.body = json_body;
  }
  req.timeout_ms = timeout_ms;
  req.max_body = max_body;
  const auto res = perform(req);
  if (res.outcome != transfer_outcome::ok) {
    // The control-plane URL holds no credentials: Go's error names it too.
    std::string why = res.outcome == transfer_outcome::timed_out
                          ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                      : res.outcome == transfer_outcome::cancelled ? "context canceled"
                      : res.outcome == transfer_outcome::too_large
                          ? "response too large (more than " + std::to_string(max_body >> 10) + " KiB)"
                                                                   : "connection failed";
    const char* verb = method == "GET" ? "Get" : method == "POST" ? "Post" : method == "PUT" ? "Put" : "Patch";
    throw cli_error{"request failed: " + std::string(verb) + " " + json_string(req.url) + ": " + why};
  }
  return {res.status, res.body};
}

std::string stub_client::ok(const std::string& method, const std::string& path,
                            const std::string& json_body, const std::string& op) const {
  auto r = call(method, path, json_body);
  if (r.status >= 400)
    throw cli_error{"agent stub " + op + " failed: " + structured_error(r.status, r.body)};
  return r.body;
}

std::string stub_client::upload_url(const std::string& filename, const std::string& mimetype) const {
  const std::string body = ok("POST", "/files/upload-request?expose_expiration=true",
                              "{\"filename\":" + json_string(filename) +
                                  ",\"mimetype\":" + json_string(mimetype) + "}",
                              "file upload request");
  json_doc doc(body, "parse upload response");
  std::string url = string_field(doc.root(), "upload_url", "parse upload response");
  if (url.empty()) throw cli_error{"signed file upload response is missing upload_url"};
  return url;
}

std::string stub_client::upload_file(const std::string& url, const std::string& path,
                                     const std::string& filename,
                                     const std::string& mimetype) const {
  if (!go_url_parses(url)) throw cli_error{"create upload request: invalid signed upload URL"};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw cli_error{"open file: open " + path + ": " + std::strerror(errno)};
  struct stat st {};
  ::fstat(fd, &st);
  const std::string boundary = random_boundary();
  const std::string head = "--" + boundary +
                           "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
                           escape_quotes(filename) + "\"\r\nContent-Type: " + mimetype +
                           "\r\n\r\n";
  const std::string tail = "\r\n--" + boundary + "--\r\n";
  // The body is produced as curl asks for it: head, the file in curl's buffer size, tail.
  std::size_t head_sent = 0, tail_sent = 0;
  bool file_done = false;
  std::string read_error;
  http_request req;
  req.method = "POST";
  req.url = url;
  req.headers.push_back("Content-Type: multipart/form-data; boundary=" + boundary);
  req.timeout_ms = 180000;
  req.max_body = max_upload_response;
  req.progress_label = "uploading " + filename;
  req.source = [&](char* buf, std::size_t cap) -> std::ptrdiff_t {
    if (head_sent < head.size()) {
      const std::size_t n = std::min(cap, head.size() - head_sent);
      std::memcpy(buf, head.data() + head_sent, n);
      head_sent += n;
      return static_cast<std::ptrdiff_t>(n);
    }
    if (!file_done) {
      const ssize_t n = ::read(fd, buf, cap);
      if (n > 0) return n;
      if (n < 0) {
        read_error = std::string("copy file content: read ") + path + ": " + std::strerror(errno);
        return -1;
      }
      file_done = true;
    }
    const std::size_t n = std::min(cap, tail.size() - tail_sent);
    std::memcpy(buf, tail.data() + tail_sent, n);
    tail_sent += n;
    return static_cast<std::ptrdiff_t>(n);
  };
  auto res = perform(req);
  ::close(fd);
  if ((res.outcome == transfer_outcome::ok || res.outcome == transfer_outcome::too_large) &&
      (res.status < 200 || res.status >= 300))
    throw cli_error{"upload failed with status " + std::to_string(res.status) + ": " + res.body};
  switch (res.outcome) {
    case transfer_outcome::ok: break;
    case transfer_outcome::too_large:
      throw cli_error{"upload response exceeds " + std::to_string(max_upload_response) + " bytes"};
    case transfer_outcome::source_failed: throw cli_error{read_error};
    case transfer_outcome::timed_out: throw cli_error{"upload request timed out"};
    default: throw cli_error{"upload request failed"};
  }
  return res.body;
}

void stub_client::download(const std::string& url,
                           const std::function<bool(const char*, std::size_t)>& sink) const {
  http_request req;
  req.url = url;
  req.timeout_ms = 120000;
  req.progress_label = "downloading";
  req.sink = sink;
  const auto res = perform(req);
  switch (res.outcome) {
    case transfer_outcome::ok:
      if (res.status >= 400)
        throw cli_error{"download failed with status " + std::to_string(res.status) + ": " + res.body};
      return;
    case transfer_outcome::sink_failed: throw cli_error{"write downloaded file"};
    case transfer_outcome::timed_out: throw cli_error{"download request failed: timed out"};
    case transfer_outcome::cancelled: throw cli_error{"download request failed: cancelled"};
    default: throw cli_error{"download request failed"};
  }
}

}  // namespace shellctl::dify_agent
