// libFuzzer: any bytes as tmux arguments (guarantee G3). Whatever the input, the command
// line that io::tmux::command builds must read back, through the model of tmux 3.3a's
// lexer, as exactly the command and its arguments: no second command, no comment, no
// directive, no expansion, no raw control byte; format arguments stay text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/tmux/command.hpp"
#include "tests/support/tmux_lexer_model.hpp"

namespace {
void check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Split the input into up to four arguments at 0x00 bytes (NUL is the one byte tmux
  // cannot carry: it must be refused, never truncated).
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && args.size() < 4) {
      args.emplace_back();
      continue;
    }
    args.back() += static_cast<char>(data[i]);
  }
  shellctl::io::tmux::command cmd("pipe-pane");
  cmd.flag("-t");
  bool refused = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    try {
      if (k % 2 == 0)
        cmd.arg(args[k]);
      else
        cmd.format_arg(args[k]);
    } catch (const shellctl::io::tmux::unquotable&) {
      check(args[k].find('\0') != std::string::npos);
      refused = true;
    }
  }
  if (refused) return 0;
  const std::string& line = cmd.line();
  for (char c : line) check(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) != 0x7f && static_cast<unsigned char>(c) != 0xff);
  auto lexed = shellctl::test::tmux_lexer_model(line).run();
  check(!lexed.separator && !lexed.comment && !lexed.directive && !lexed.expansion &&
        !lexed.error);
  check(lexed.tokens.size() == args.size() + 2);
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& tok = lexed.tokens[k + 2];
    if (k % 2 == 0)
      check(tok == args[k]);
    else
      check(shellctl::test::tmux_format_literal(tok) == args[k]);
  }
  return 0;
}
