// io::tmux::command and quote (guarantee G3): a table of exact quotings, a round trip of
// hostile strings through a model of tmux 3.3a's lexer, and the same round trip through a
// real tmux server.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "io/tmux/command.hpp"
#include "io/tmux/control_client.hpp"
#include "tests/support/tmux_lexer_model.hpp"
#include "tests/unit/io/tmux/real_tmux.hpp"

using shellctl::io::tmux::command;
using shellctl::io::tmux::quote;
using shellctl::io::tmux::quote_format;
using shellctl::io::tmux::unquotable;
using shellctl::test::tmux_format_literal;
using shellctl::test::tmux_lexer_model;

namespace {

// Strings that would be syntax if they were not quoted right.
std::vector<std::string> hostile() {
  std::vector<std::string> v = {
      "",
      "plain",
      "it's",
      "'",
      "''",
      "\\",
      "\\'",
      "a\\",
      "; run-shell 'touch /tmp/x'",
      "x\nrun-shell 'touch /tmp/x'",
      "x\rrun-shell 'touch /tmp/x'",
      "x\\\nrun-shell",
      "#{pane_pid} #(touch /tmp/x)",
      "$HOME ${HOME} ~ ~root",
      "{ run-shell x }",
      "}",
      "%if 1",
      "%hidden A=B",
      "A=B",
      "\"double\" \"",
      "tab\there",
      "\x1b[31m\x07\x7f",
      "\xff run-shell x",
      "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "\\012\\377\\u1234",
  };
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  v.push_back(all);
  return v;
}

}  // namespace

TEST_CASE("exact quotings") {
  CHECK(quote("") == "''");
  CHECK(quote("abc") == "'abc'");
  CHECK(quote("a b;c") == "'a b;c'");
  CHECK(quote("a'b") == "'a'\\''b'");
  CHECK(quote("'") == "\\'");
  CHECK(quote("a\nb") == "'a'\\012'b'");
  CHECK(quote("\r") == "\\015");
  CHECK(quote("\xff") == "\\377");
  CHECK(quote("\x7f") == "\\177");
  CHECK(quote("$HOME ~ #{x}") == "'$HOME ~ #{x}'");
  CHECK(quote_format("#{x}#(y)") == "'##{x}##(y)'");
  CHECK(quote("\xc3\xa9") == "'\xc3\xa9'");
  CHECK_THROWS_AS(quote(std::string("a\0b", 3)), unquotable);
}

TEST_CASE("the command builder quotes every argument") {
  CHECK(command("new-session").flag("-d").flag("-s").arg("shellctl-1").number(80).line() ==
        "new-session -d -s 'shellctl-1' 80");
  CHECK(command("pipe-pane").format_arg("a#b").line() == "pipe-pane 'a##b'");
}

TEST_CASE("every hostile string reads back as exactly one argument (lexer model)") {
  for (const auto& s : hostile()) {
    CAPTURE(s);
    for (bool format : {false, true}) {
      const std::string line =
          command("set-environment").flag("-g").arg("V").arg(s).format_arg(s).line();
      auto lexed = tmux_lexer_model(line).run();
      CHECK(!lexed.separator);
      CHECK(!lexed.comment);
      CHECK(!lexed.directive);
      CHECK(!lexed.expansion);
      CHECK(!lexed.error);
      REQUIRE(lexed.tokens.size() == 5);
      CHECK(lexed.tokens[3] == s);
      CHECK(tmux_format_literal(lexed.tokens[4]) == s);
      for (char c : line) CHECK(static_cast<unsigned char>(c) >= 0x20);  // no raw control byte
      (void)format;
    }
  }
}

TEST_CASE("every hostile string reads back as exactly one argument (real tmux)") {
  shellctl::test::real_tmux t;
  bool ok = false;
  t.run("set-option -g exit-empty off", ok);
  // set-buffer takes its data as given and save-buffer writes it out byte for byte: the
  // file holds exactly what tmux's parser made of the argument.
  const std::string file = t.dir + "/buffer";
  for (const auto& s : hostile()) {
    CAPTURE(s);
    REQUIRE((t.run(command("set-buffer").flag("-b").arg("q").arg(s).line(), ok), ok || s.empty()));
    if (s.empty()) continue;  // tmux refuses an empty buffer
    ::unlink(file.c_str());
    REQUIRE((t.run(command("save-buffer").flag("-b").arg("q").format_arg(file).line(), ok), ok));
    std::string got;
    if (FILE* f = std::fopen(file.c_str(), "rb")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) got.append(buf, n);
      std::fclose(f);
    }
    CHECK(got == s);
  }
  // A format argument stays text: no #{...} or #(...) expansion.
  auto out = t.run(command("display-message").flag("-p").format_arg("#{pane_pid} #(echo hi)").line(), ok);
  REQUIRE(ok);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "#{pane_pid} #(echo hi)");
}
