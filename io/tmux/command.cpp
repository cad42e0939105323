#include "io/tmux/command.hpp"

namespace shellctl::io::tmux {

namespace {

bool needs_escape(unsigned char c) { return c < 0x20 || c == 0x7f || c == 0xff; }

}  // namespace

std::string quote(std::string_view arg) {
  std::string out;
  out.reserve(arg.size() + 2);
  bool open = false;  // inside a single-quoted run
  auto close = [&] {
    if (open) out += '\'';
    open = false;
  };
  for (char ch : arg) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) throw unquotable("tmux cannot carry a NUL byte in an argument");
    if (c == '\'' || needs_escape(c)) {
      close();
      if (c == '\'') {
        out += "\\'";
      } else {
        const char octal[] = {'\\', static_cast<char>('0' + (c >> 6)),
                              static_cast<char>('0' + ((c >> 3) & 7)),
                              static_cast<char>('0' + (c & 7))};
        out.append(octal, sizeof octal);
      }
      continue;
    }
    if (!open) out += '\'';
    open = true;
    out += ch;
  }
  close();
  return out.empty() ? std::string("''") : out;
}

std::string quote_format(std::string_view arg) {
  std::string doubled;
  doubled.reserve(arg.size());
  for (char c : arg) {
    doubled += c;
    if (c == '#') doubled += '#';
  }
  return quote(doubled);
}

command::command(std::string_view name) : line_(name) {}

command& command::flag(std::string_view literal) {
  line_ += ' ';
  line_ += literal;
  return *this;
}

command& command::arg(std::string_view value) {
  line_ += ' ';
  line_ += quote(value);
  return *this;
}

command& command::format_arg(std::string_view value) {
  line_ += ' ';
  line_ += quote_format(value);
  return *this;
}

command& command::number(std::int64_t value) {
  line_ += ' ';
  line_ += std::to_string(value);
  return *this;
}

}  // namespace shellctl::io::tmux
