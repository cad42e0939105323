#pragma once
// tmux control mode, read side (tmux(1) CONTROL MODE), without threads or actors:
//   line_splitter   bytes from the client's stdout → complete lines
//   control_parser  lines → the events shellctl acts on
// Each command line sent gets one block `%begin <time> <n> <flags>` … `%end|%error <time>
// <n> <flags>`; only the exact arguments of the open %begin close it, so output that itself
// reads "%end …" stays output. Notifications arrive only between blocks.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::tmux {

class line_splitter {
 public:
  // Appends `bytes` and returns the lines they completed (without '\n'); a partial last
  // line is kept for the next call.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  std::string pending_;
};

struct control_event {
  enum class kind {
    block_ok,          // %end: the output of one of our command lines
    block_error,       // %error: its error text
    window_closed,     // %window-close / %unlinked-window-close @id: a window is gone
    exiting,           // %exit: the client is going; nothing sent from now on is answered
    sessions_changed,  // %sessions-changed
  };
  kind what;
  std::vector<std::string> lines;  // block_ok/block_error: the block's lines
  std::string window;              // window_closed: "@12"
};

class control_parser {
 public:
  // One line in; the event it completes, if any. Blocks with flags 0 answer commands that
  // did not come from our stdin (the client's own attach): they yield nothing.
  std::optional<control_event> feed(std::string line);
  // The client was replaced: a block open on the old one is never closed.
  void reset() { in_block_ = false; }

 private:
  bool in_block_ = false;
  bool ours_ = false;
  std::string args_;  // "<time> <n> <flags>" of the open %begin
  std::vector<std::string> lines_;
};

}  // namespace shellctl::io::tmux
