// The read side of tmux control mode: byte stream → lines → events, as tmux_server sees it.
#include <doctest/doctest.h>

#include "io/tmux/control_parser.hpp"

using namespace shellctl::io::tmux;
using kind = control_event::kind;

namespace {

std::vector<control_event> feed_all(control_parser& p, std::vector<std::string> lines) {
  std::vector<control_event> out;
  for (auto& l : lines)
    if (auto ev = p.feed(l)) out.push_back(std::move(*ev));
  return out;
}

}  // namespace

TEST_CASE("line_splitter: lines split anywhere, also inside \\r\\n-free runs and empty lines") {
  line_splitter s;
  CHECK(s.feed("%beg").empty());
  auto a = s.feed("in 1 2 1\nout");
  REQUIRE(a.size() == 1);
  CHECK(a[0] == "%begin 1 2 1");
  auto b = s.feed("put\n\n%end 1 2 1\n");
  REQUIRE(b.size() == 3);
  CHECK(b[0] == "output");
  CHECK(b[1] == "");
  CHECK(b[2] == "%end 1 2 1");
  CHECK(s.feed("").empty());
  // Every split point of one stream gives the same lines.
  const std::string stream = "%begin 9 1 1\na\nb c\n%end 9 1 1\n%exit\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    line_splitter t;
    auto x = t.feed(stream.substr(0, cut));
    auto y = t.feed(stream.substr(cut));
    x.insert(x.end(), y.begin(), y.end());
    CHECK(x == std::vector<std::string>{"%begin 9 1 1", "a", "b c", "%end 9 1 1", "%exit"});
  }
}

TEST_CASE("a block yields its lines once closed by %end with the same arguments") {
  control_parser p;
  auto ev = feed_all(p, {"%begin 100 7 1", "12345 @3", "%end 100 7 1"});
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].what == kind::block_ok);
  CHECK(ev[0].lines == std::vector<std::string>{"12345 @3"});
}

TEST_CASE("%error closes a block as an error; an empty block has no lines") {
  control_parser p;
  auto ev = feed_all(p, {"%begin 1 8 1", "can't find session: x", "%error 1 8 1", "%begin 1 9 1",
                         "%end 1 9 1"});
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].what == kind::block_error);
  CHECK(ev[0].lines == std::vector<std::string>{"can't find session: x"});
  CHECK(ev[1].what == kind::block_ok);
  CHECK(ev[1].lines.empty());
}

TEST_CASE("output that reads like %end or a notification stays output") {
  control_parser p;
  auto ev = feed_all(p, {"%begin 5 3 1", "%end 5 3 0", "%end 4 3 1", "%exit", "%sessions-changed",
                         "%window-close @1", "%error 5 3 2", "%end 5 3 1"});
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].what == kind::block_ok);
  CHECK(ev[0].lines == std::vector<std::string>{"%end 5 3 0", "%end 4 3 1", "%exit",
                                                "%sessions-changed", "%window-close @1",
                                                "%error 5 3 2"});
}

TEST_CASE("blocks with flags 0 (the client's own commands) yield nothing") {
  control_parser p;
  auto ev = feed_all(p, {"%begin 1 1 0", "attached", "%end 1 1 0", "%begin 1 2 1", "ok",
                         "%end 1 2 1"});
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].lines == std::vector<std::string>{"ok"});
}

TEST_CASE("notifications between blocks, interleaved with answers") {
  control_parser p;
  auto ev = feed_all(p, {"%sessions-changed", "%begin 2 1 1", "a", "%end 2 1 1",
                         "%unlinked-window-close @12", "%window-add @13", "%window-close @7",
                         "%output %1 hello", "%begin 2 2 1", "%end 2 2 1", "%exit"});
  REQUIRE(ev.size() == 6);
  CHECK(ev[0].what == kind::sessions_changed);
  CHECK(ev[1].what == kind::block_ok);
  CHECK(ev[2].what == kind::window_closed);
  CHECK(ev[2].window == "@12");
  CHECK(ev[3].what == kind::window_closed);
  CHECK(ev[3].window == "@7");
  CHECK(ev[4].what == kind::block_ok);
  CHECK(ev[5].what == kind::exiting);
}

TEST_CASE("reset: a block left open by a client that died is dropped") {
  control_parser p;
  CHECK_FALSE(p.feed("%begin 3 1 1"));
  CHECK_FALSE(p.feed("partial"));
  p.reset();
  auto ev = feed_all(p, {"%sessions-changed", "%begin 4 1 1", "fresh", "%end 4 1 1"});
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].what == kind::sessions_changed);
  CHECK(ev[1].lines == std::vector<std::string>{"fresh"});
}
