#include "io/text/go_quote.hpp"

#include <cctype>
#include <cstring>

namespace shellctl::io::text {

std::string go_quote(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f || c >= 0x80) {
          // Printable UTF-8 stays as is; anything else is \xNN (Go's %q).
          if (c >= 0x80) {
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
            bool ok = len > 0 && i + len <= s.size();
            for (size_t k = 1; ok && k < len; ++k)
              ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
            if (ok) {
              out.append(s.substr(i, len));
              i += len - 1;
              break;
            }
          }
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string go_errno_text(int e) {
  std::string s = std::strerror(e);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace shellctl::io::text
