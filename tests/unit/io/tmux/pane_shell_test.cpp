// io/tmux/pane_shell: a login shell that refuses commands (a service account's nologin)
// never becomes the shell tmux runs our command lines with; a usable $SHELL is kept.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/tmux/pane_shell.hpp"

namespace tmux = shellctl::io::tmux;

TEST_CASE("runs_commands: absolute, executable, not a refusing shell") {
  CHECK(tmux::runs_commands("/bin/sh"));
  CHECK_FALSE(tmux::runs_commands("sh"));  // relative: tmux would refuse it too
  CHECK_FALSE(tmux::runs_commands(""));
  CHECK_FALSE(tmux::runs_commands("/nonexistent/shell"));
  CHECK_FALSE(tmux::runs_commands("/etc/passwd"));  // not executable
  CHECK_FALSE(tmux::runs_commands("/usr/sbin/nologin"));
  CHECK_FALSE(tmux::runs_commands("/bin/false"));
}

TEST_CASE("pane_shell: $SHELL, then the passwd shell, then /bin/sh") {
  CHECK(tmux::pane_shell(std::string("/bin/sh"), "/usr/sbin/nologin") == "/bin/sh");
  CHECK(tmux::pane_shell(std::nullopt, "/bin/sh") == "/bin/sh");
  CHECK(tmux::pane_shell(std::nullopt, "/usr/sbin/nologin") == "/bin/sh");
  CHECK(tmux::pane_shell(std::string("/usr/sbin/nologin"), "/bin/false") == "/bin/sh");
  CHECK(tmux::pane_shell(std::string(""), "") == "/bin/sh");
  if (tmux::runs_commands("/bin/bash")) {
    CHECK(tmux::pane_shell(std::string("/bin/bash"), "/bin/sh") == "/bin/bash");
    CHECK(tmux::pane_shell(std::string("/nonexistent"), "/bin/bash") == "/bin/bash");
  }
}

TEST_CASE("with_pane_shell: one SHELL entry, the rest untouched") {
  // Replaced in place by this user's passwd shell or /bin/sh, whichever runs commands.
  auto env = tmux::with_pane_shell({"HOME=/h", "SHELL=/usr/sbin/nologin", "PATH=/bin"});
  REQUIRE(env.size() == 3);
  CHECK(env[0] == "HOME=/h");
  CHECK(env[2] == "PATH=/bin");
  REQUIRE(env[1].rfind("SHELL=/", 0) == 0);
  CHECK(tmux::runs_commands(env[1].substr(6)));
  CHECK(tmux::with_pane_shell({"SHELL=/bin/sh"}) == std::vector<std::string>{"SHELL=/bin/sh"});
  env = tmux::with_pane_shell({"HOME=/h"});
  REQUIRE(env.size() == 2);
  CHECK(env[0] == "HOME=/h");
  CHECK(env[1].rfind("SHELL=/", 0) == 0);
  CHECK(tmux::runs_commands(env[1].substr(6)));
}
