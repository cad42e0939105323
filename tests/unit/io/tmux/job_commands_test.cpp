// io/tmux/job_commands against a real tmux server: the lines of a job's life are accepted
// by tmux 3.3a and their answers read back as the job actor expects (pane pid, pipe state).
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "io/fs/job_dir.hpp"
#include "io/text/shell_quote.hpp"
#include "io/tmux/job_commands.hpp"
#include "tests/unit/io/tmux/real_tmux.hpp"

namespace tmux = shellctl::io::tmux;
using shellctl::test::real_tmux;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits (bounded) until `path` holds `text`: the pipe writes asynchronously.
bool eventually_holds(const std::string& path, const std::string& text) {
  for (int i = 0; i < 1000; ++i) {
    if (slurp(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("session, pipe, query, input, ^C and kill: accepted by tmux and read back") {
  real_tmux t;
  bool ok = false;
  t.run("set-option -g exit-empty off", ok);
  const std::string piped = t.dir + "/piped";
  // A pane that echoes its input (cat) and prints a marker through a hostile-looking env.
  // An argv (exec'd by tmux, as a job's runner is): its words reach the program unsplit.
  tmux::job_session s{"shellctl-unit-1", 80, 24, {{"SHELLCTL_X", "a b;'c'#{x}"}},
                      {"/bin/sh", "-c", "printf 'started %s\\n' \"$SHELLCTL_X\"; exec cat"}};
  auto out = t.run(tmux::new_session_line(s), ok);
  REQUIRE(ok);
  auto pid = tmux::pane_pid_of(out);
  REQUIRE(pid);
  CHECK(*pid > 1);
  CHECK(::kill(static_cast<pid_t>(*pid), 0) == 0);
  // new-session printed "<pane_pid> <window_id>".
  CHECK(out[0].find(" @") != std::string::npos);

  const std::string pane = "shellctl-unit-1:0.0";
  auto before = tmux::read_pane_query(t.run(tmux::pane_query_line(pane), ok));
  REQUIRE(ok);
  CHECK(before.pid == *pid);
  CHECK_FALSE(before.pipe_active);

  // The pipe program of a job dir would run the sanitizer; here a plain cat into a file.
  auto lines = tmux::attach_pipe_lines(pane, "cat >> " + shellctl::io::text::sh_quote(piped));
  REQUIRE(lines.size() == 2);
  t.run(lines[0], ok);
  REQUIRE(ok);
  auto shown = t.run(lines[1], ok);
  REQUIRE(ok);
  CHECK(tmux::pipe_active(shown));
  auto after = tmux::read_pane_query(t.run(tmux::pane_query_line(pane), ok));
  CHECK(after.pipe_active);

  // Pasted input reaches the pane (cat echoes it, the pipe carries the echo).
  const std::string input_file = t.dir + "/input";
  std::ofstream(input_file) << "hello from paste\n";
  for (auto& l : tmux::paste_lines("shellctl-in-unit", input_file, pane)) {
    t.run(l, ok);
    CHECK(ok);
  }
  CHECK(eventually_holds(piped, "hello from paste"));

  // ^C ends cat: the pane's process is gone.
  t.run(tmux::interrupt_line(pane), ok);
  CHECK(ok);
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) {
    gone = ::kill(static_cast<pid_t>(*pid), 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  t.run(tmux::kill_session_line("shellctl-unit-1"), ok);
  t.run(tmux::kill_session_line("shellctl-unit-1"), ok);
  CHECK_FALSE(ok);  // gone already: tmux says so
}

TEST_CASE("pipe program: one exec'd sanitizer, every path quoted, the markers of the output pipe's handshake") {
  shellctl::io::fs::job_dir dir("/s/jobs/it's");
  tmux::pipe_settings p{"/bin/sanitize", "", std::nullopt};
  auto prog = tmux::pipe_program(dir, "/s/jobs/it's/output.log", p);
  // The sanitizer writes the markers itself; nothing runs after it (the server records
  // the exit from the artifacts), so the shell execs it: one process per pipe.
  CHECK(prog == "exec '/bin/sanitize' '--ready-file' '/s/jobs/it'\\''s/.pipe-ready' "
                "'--drained-file' '/s/jobs/it'\\''s/.pipe-drained' "
                "'--failed-file' '/s/jobs/it'\\''s/.pipe-failed' "
                "'--pending-file' '/s/jobs/it'\\''s/.pending-line' >> "
                "'/s/jobs/it'\\''s/output.log' 2> '/s/jobs/it'\\''s/pipe-error.log'");
  // With the runner's end marker, the sanitizer learns its nonce and where to acknowledge it.
  tmux::pipe_settings with_end = p;
  with_end.end_nonce = "0123abcd";
  CHECK(tmux::pipe_program(dir, "/s/jobs/it's/output.log", with_end)
            .find("exec '/bin/sanitize' '--ready-file' '/s/jobs/it'\\''s/.pipe-ready' "
                  "'--end-marker' '0123abcd' '--end-file' '/s/jobs/it'\\''s/.pipe-end' "
                  "'--drained-file' ") == 0);
  // A native scope's worker: the output budget's helper, catalog and overflow marker.
  tmux::pipe_settings budgeted = p;
  budgeted.budget = tmux::output_budget{"/usr/bin/shellctl", "/run/dify-native/spool/shellctl.db"};
  CHECK(tmux::pipe_program(dir, "/s/jobs/it's/output.log", budgeted)
            .find("'--pending-file' '/s/jobs/it'\\''s/.pending-line' '--budget-helper' "
                  "'/usr/bin/shellctl' '--budget-db' '/run/dify-native/spool/shellctl.db' "
                  "'--overflow-file' '/s/jobs/it'\\''s/.output-overflow' >> ") !=
        std::string::npos);
}

TEST_CASE("answers without output read as nothing") {
  CHECK_FALSE(tmux::pane_pid_of({}));
  CHECK_FALSE(tmux::pipe_active({}));
  CHECK_FALSE(tmux::pipe_active({"0"}));
  auto f = tmux::read_pane_query({});
  CHECK(f.pid == 0);
  CHECK_FALSE(f.pipe_active);
  CHECK(tmux::read_pane_query({"123 1"}).pipe_active);
  CHECK(tmux::read_pane_query({"123 0"}).pid == 123);
}
