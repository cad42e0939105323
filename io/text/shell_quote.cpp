#include "io/text/shell_quote.hpp"

namespace shellctl::io::text {

std::string sh_quote(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out += '\'';
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

std::string sh_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += sh_quote(w);
  }
  return out;
}

}  // namespace shellctl::io::text
