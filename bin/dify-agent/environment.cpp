#include "bin/dify-agent/environment.hpp"

#include <cctype>
#include <cstdlib>
#include <vector>

#include "bin/dify-agent/command_tree.hpp"
#include "io/json/json.hpp"

namespace shellctl::dify_agent {

namespace {

constexpr const char* url_var = "DIFY_AGENT_STUB_API_BASE_URL";
constexpr const char* jwe_var = "DIFY_AGENT_STUB_AUTH_JWE";

std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\v\f";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string getenv_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Go's url.Error text: parse "<url>": <reason>.
[[noreturn]] void parse_failure(const std::string& url, const std::string& reason) {
  std::string quoted;
  io::json::append_string(quoted, url);
  throw cli_error{"invalid URL: parse " + quoted + ": " + reason};
}

struct url_parts {
  std::string scheme, host, path;
  bool has_authority = false, has_user = false, has_query = false, has_fragment = false;
};

// The parts of net/url.Parse that decide the rules below: scheme (lower-cased), authority
// (user info, host with port), path, and whether a non-empty query or fragment is present.
url_parts split_url(const std::string& raw) {
  url_parts u;
  for (unsigned char c : raw)
    if (c < 0x20 || c == 0x7f) parse_failure(raw, "net/url: invalid control character in URL");
  std::string rest = raw;
  const auto hash = rest.find('#');
  if (hash != std::string::npos) {
    u.has_fragment = hash + 1 < rest.size();
    rest = rest.substr(0, hash);
  }
  // Go's getScheme: letters first, then letters, digits, + - . up to the first ':'.
  std::size_t i = 0;
  for (; i < rest.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(rest[i]);
    if (std::isalpha(c)) continue;
    if (i > 0 && (std::isdigit(c) || c == '+' || c == '-' || c == '.')) continue;
    break;
  }
  if (i < rest.size() && rest[i] == ':') {
    if (i == 0) parse_failure(raw, "missing protocol scheme");
    u.scheme = rest.substr(0, i);
    for (auto& c : u.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    rest = rest.substr(i + 1);
  }
  const auto q = rest.find('?');
  if (q != std::string::npos) {
    u.has_query = q + 1 < rest.size();
    rest = rest.substr(0, q);
  }
  if (!u.scheme.empty() && rest.rfind("//", 0) == 0) {
    u.has_authority = true;
    const auto slash = rest.find('/', 2);
    std::string authority = rest.substr(2, slash == std::string::npos ? std::string::npos : slash - 2);
    u.path = slash == std::string::npos ? "" : rest.substr(slash);
    const auto at = authority.rfind('@');
    if (at != std::string::npos) {
      u.has_user = true;
      authority = authority.substr(at + 1);
    }
    // Host and port as Go checks them: a bracketed IPv6 literal, then ":digits" only.
    std::string port_part;
    if (!authority.empty() && authority[0] == '[') {
      const auto close = authority.find(']');
      if (close == std::string::npos) parse_failure(raw, "missing ']' in host");
      port_part = authority.substr(close + 1);
      if (!port_part.empty() && port_part[0] != ':')
        parse_failure(raw, "invalid port \"" + port_part + "\" after host");
    } else {
      const auto colon = authority.rfind(':');
      if (colon != std::string::npos) port_part = authority.substr(colon);
    }
    for (std::size_t k = 1; k < port_part.size(); ++k)
      if (!std::isdigit(static_cast<unsigned char>(port_part[k])))
        parse_failure(raw, "invalid port \"" + port_part + "\" after host");
    for (unsigned char c : authority)
      if (c == ' ' || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' ||
          c == '{' || c == '|' || c == '}')
        parse_failure(raw, "invalid character \"" + std::string(1, static_cast<char>(c)) +
                               "\" in host name");
    u.host = authority;
  } else {
    u.path = rest;
    if (u.scheme.empty()) {
      // A relative reference whose first segment holds a colon cannot be parsed.
      const auto seg = rest.substr(0, rest.find('/'));
      if (seg.find(':') != std::string::npos)
        parse_failure(raw, "first path segment in URL cannot contain colon");
    }
  }
  return u;
}

}  // namespace

bool go_url_parses(const std::string& url) {
  try {
    (void)split_url(url);
    return true;
  } catch (const cli_error&) {
    return false;
  }
}

bool has_environment() {
  return !getenv_string(url_var).empty() && !getenv_string(jwe_var).empty();
}

std::string parse_endpoint(const std::string& raw) {
  const std::string s = trim(raw);
  if (s.empty()) throw cli_error{"agent stub URL must not be empty"};
  const url_parts u = split_url(s);
  if (u.scheme != "http" && u.scheme != "https")
    throw cli_error{"agent stub URL must use http or https"};
  if (u.host.empty()) throw cli_error{"agent stub URL must include a host"};
  if (u.has_query || u.has_fragment)
    throw cli_error{"agent stub URL must not include a query string or fragment"};
  if (u.has_user) throw cli_error{"agent stub URL must not include user info"};
  std::string path = u.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.empty()) path = "/agent-stub";
  if (path != "/agent-stub")
    throw cli_error{"HTTP agent stub API base URL path must be empty or /agent-stub"};
  return u.scheme + "://" + u.host + path;
}

environment read_environment() {
  environment env;
  const std::string url = trim(getenv_string(url_var));
  env.jwe = trim(getenv_string(jwe_var));
  std::vector<std::string> missing;
  if (url.empty()) missing.push_back(url_var);
  if (env.jwe.empty()) missing.push_back(jwe_var);
  if (!missing.empty()) {
    std::string list = missing[0];
    if (missing.size() > 1) list += ", " + missing[1];
    throw cli_error{"missing required Agent Stub environment variables: " + list};
  }
  try {
    env.base_url = parse_endpoint(url);
  } catch (const cli_error& e) {
    throw cli_error{std::string("invalid ") + url_var + ": " + e.message};
  }
  return env;
}

}  // namespace shellctl::dify_agent
