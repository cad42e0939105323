#pragma once
// Every line shellctl sends to tmux is built here, so that request data (cwd, paths, ids)
// can never become tmux syntax (guarantee G3).
//
// tmux 3.3a's parser (cmd-parse.y) reads a control-mode line as C string: a newline ends
// the line (the rest would be a second command), NUL ends the string, and byte 0xFF reads
// as end of input (a `char` compared with EOF). Outside single quotes it expands \ escapes,
// $VARIABLES, ~ and treats ; { } # % specially. So an argument is written as runs of
// single-quoted bytes, with ' written \' and every control byte and 0xFF written as an
// octal escape \ooo outside the quotes: the line never holds a raw control byte, and the
// parser gives back exactly the original bytes as one word. Only NUL cannot be carried.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shellctl::io::tmux {

// Thrown for an argument tmux cannot carry (it holds NUL).
struct unquotable : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One argument, read back by tmux as exactly `arg`.
std::string quote(std::string_view arg);

// For arguments tmux also expands as a format (pipe-pane's command, load-buffer's path,
// display-message's message): '#' is doubled first, so #{...} and #(...) stay text.
std::string quote_format(std::string_view arg);

// One command line: the command name and flags are literals of ours; everything else is
// an argument, quoted.
class command {
 public:
  explicit command(std::string_view name);
  command& flag(std::string_view literal);  // "-d", "-t": shellctl's own words only
  command& arg(std::string_view value);
  command& format_arg(std::string_view value);
  command& number(std::int64_t value);
  const std::string& line() const { return line_; }

 private:
  std::string line_;
};

}  // namespace shellctl::io::tmux
