#include "io/native/net/proxy_request.hpp"

#include <algorithm>
#include <cctype>

namespace shellctl::io::native {

namespace {

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// host[:port] or [v6][:port]; the port given or `default_port` (0: required).
bool split_authority(std::string_view a, std::uint16_t default_port, std::string& host, std::uint16_t& port) {
  if (a.empty() || a.size() > 260) return false;
  std::string_view h, p;
  if (a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos) return false;
    h = a.substr(0, close + 1);
    const auto rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      p = rest.substr(1);
      if (p.empty()) return false;
    }
    for (char c : h.substr(1, h.size() - 2))
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
  } else {
    const auto colon = a.rfind(':');
    h = colon == std::string_view::npos ? a : a.substr(0, colon);
    if (colon != std::string_view::npos) {
      p = a.substr(colon + 1);
      if (p.empty()) return false;
    }
    for (char c : h)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') return false;
  }
  if (h.empty()) return false;
  if (p.empty()) {
    if (default_port == 0) return false;
    port = default_port;
  } else {
    if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string_view::npos || p.front() == '0') return false;
    unsigned long v = 0;
    for (char c : p) v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v < 1 || v > 65535) return false;
    port = static_cast<std::uint16_t>(v);
  }
  host.assign(h);
  return true;
}

}  // namespace

std::size_t proxy_head_length(std::string_view buf) {
  const auto end = buf.find("\r\n\r\n");
  return end == std::string_view::npos ? 0 : end + 4;
}

std::optional<proxy_request> parse_proxy_head(std::string_view head, proxy_refusal& why) {
  why = {};
  if (head.size() > kProxyHeadMax) {
    why = {431, "the request head is larger than 16 KiB"};
    return std::nullopt;
  }
  const auto eol = head.find("\r\n");
  if (eol == std::string_view::npos) {
    why = {400, "no request line"};
    return std::nullopt;
  }
  const std::string_view line = head.substr(0, eol);
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = {400, "the request line is not METHOD TARGET VERSION"};
    return std::nullopt;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), token_char) ||
      (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    why = {400, "the request line is not METHOD TARGET HTTP/1.x"};
    return std::nullopt;
  }
  proxy_request r;
  if (method == "CONNECT") {
    r.what = proxy_request::kind::connect;
    if (!split_authority(target, 0, r.host, r.port)) {
      why = {400, "CONNECT needs host:port"};
      return std::nullopt;
    }
    return r;
  }
  constexpr std::string_view scheme = "http://";
  if (target.size() <= scheme.size() || !iequal(target.substr(0, scheme.size()), scheme)) {
    why = {403, "only CONNECT and absolute http:// requests to the scope's targets are proxied"};
    return std::nullopt;
  }
  const std::string_view rest = target.substr(scheme.size());
  const auto slash = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos || !split_authority(authority, 80, r.host, r.port)) {
    why = {400, "the request's URL has no usable host"};
    return std::nullopt;
  }
  std::string path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (path.front() != '/') path.insert(path.begin(), '/');
  r.what = proxy_request::kind::http;
  r.forward_head.reserve(head.size());
  r.forward_head.append(method).append(" ").append(path).append(" ").append(version);
  r.forward_head.append(head.substr(eol));
  return r;
}

std::optional<std::size_t> match_target(const std::vector<proxy_target>& targets,
                                        const std::string& host, std::uint16_t port) {
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (targets[i].port == port && iequal(targets[i].host, host)) return i;
  // An IPv6 target written without brackets matches its bracketed authority.
  if (host.size() > 2 && host.front() == '[')
    return match_target(targets, host.substr(1, host.size() - 2), port);
  return std::nullopt;
}

std::string proxy_error_response(int status, const std::string& reason) {
  const char* text = status == 400   ? "Bad Request"
                     : status == 403 ? "Forbidden"
                     : status == 408 ? "Request Timeout"
                     : status == 429 ? "Too Many Requests"
                     : status == 431 ? "Request Header Fields Too Large"
                     : status == 502 ? "Bad Gateway"
                     : status == 503 ? "Service Unavailable"
                                     : "Error";
  const std::string body = reason + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::optional<std::size_t> parse_dial_line(std::string_view line) {
  constexpr std::string_view prefix = "DIAL ";
  if (line.size() < prefix.size() + 2 || line.substr(0, prefix.size()) != prefix || line.back() != '\n')
    return std::nullopt;
  const std::string_view n = line.substr(prefix.size(), line.size() - prefix.size() - 1);
  if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string_view::npos ||
      (n.size() > 1 && n.front() == '0'))
    return std::nullopt;
  std::size_t v = 0;
  for (char c : n) v = v * 10 + static_cast<std::size_t>(c - '0');
  if (v >= 16) return std::nullopt;
  return v;
}

}  // namespace shellctl::io::native
