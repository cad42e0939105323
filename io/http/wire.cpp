#include "io/http/wire.hpp"

#include <cstdio>

#include "io/http/server.hpp"  // error_body
#include "io/json/json.hpp"

namespace shellctl::io::http::wire {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Request Entity Too Large";
    case 414: return "Request URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Requested Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

std::string http_date(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
}

void append_hex(std::string& out, std::size_t n) {
  static const char hex[] = "0123456789abcdef";
  char buf[2 * sizeof(std::size_t)];
  std::size_t k = sizeof buf;
  do {
    buf[--k] = hex[n & 0xF];
    n >>= 4;
  } while (n != 0);
  out.append(buf + k, sizeof buf - k);
}

bool has_no_body(int status) { return status == 204 || status == 304 || (status >= 100 && status < 200); }

namespace {

bool reserved_header(std::string_view n) {
  return iequals(n, "Content-Length") || iequals(n, "Date") || iequals(n, "Connection") ||
         iequals(n, "Transfer-Encoding");
}

// Status line and the caller's headers (minus the ones the server owns).
void append_head(std::string& o, const response& r, bool drop_trailer) {
  char line[64];
  int n = std::snprintf(line, sizeof line, "HTTP/1.1 %d ", r.status);
  o.append(line, static_cast<std::size_t>(n));
  o.append(reason_phrase(r.status));
  o += "\r\n";
  for (const auto& h : r.headers) {
    if (reserved_header(h.name)) continue;
    if (drop_trailer && iequals(h.name, "Trailer")) continue;
    o += h.name;
    o += ": ";
    o += h.value;
    o += "\r\n";
  }
}

}  // namespace

void append_response_head(std::string& o, const response& r, std::string_view date, bool closes,
                          bool http_1_0) {
  append_head(o, r, false);
  if (!has_no_body(r.status)) {
    char line[64];
    int n = std::snprintf(line, sizeof line, "Content-Length: %zu\r\n", r.body.size());
    o.append(line, static_cast<std::size_t>(n));
  }
  o += "Date: ";
  o += date;
  o += "\r\n";
  if (closes)
    o += "Connection: close\r\n";
  else if (http_1_0)
    o += "Connection: keep-alive\r\n";
  o += "\r\n";
}

void append_stream_head(std::string& o, const response& r, std::string_view date, bool closes,
                        bool http_1_0) {
  append_head(o, r, http_1_0 || r.stream_length.has_value());
  if (r.stream_length) {
    char line[64];
    int n = std::snprintf(line, sizeof line, "Content-Length: %llu\r\n",
                          static_cast<unsigned long long>(*r.stream_length));
    o.append(line, static_cast<std::size_t>(n));
  } else if (!http_1_0) {
    o += "Transfer-Encoding: chunked\r\n";
  }
  o += "Date: ";
  o += date;
  o += "\r\n";
  if (closes || http_1_0) o += "Connection: close\r\n";
  o += "\r\n";
}

std::string chunk_size_line(std::size_t n) {
  std::string size;
  append_hex(size, n);
  size += "\r\n";
  return size;
}

std::string last_chunk(const std::vector<header>& trailers) {
  std::string t = "0\r\n";
  for (const auto& h : trailers) {
    t += h.name;
    t += ": ";
    t += h.value;
    t += "\r\n";
  }
  t += "\r\n";
  return t;
}

}  // namespace shellctl::io::http::wire

namespace shellctl::io::http {

std::string error_body(std::string_view code, std::string_view message) {
  std::string out;
  out.reserve(40 + code.size() + message.size());
  out += "{\"error\":{\"code\":";
  json::append_string(out, code);
  out += ",\"message\":";
  json::append_string(out, message);
  out += "}}\n";
  return out;
}

}  // namespace shellctl::io::http
