#include "io/text/percent.hpp"

namespace shellctl::io::text {
namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  std::size_t i = 0;
  while (i <= query.size()) {
    std::size_t j = query.find_first_of("&;", i);
    if (j == std::string_view::npos) j = query.size();
    auto pair = query.substr(i, j - i);
    auto eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    if (key == name && !pair.empty())
      return eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
    i = j + 1;
  }
  return std::nullopt;
}

}  // namespace shellctl::io::text
