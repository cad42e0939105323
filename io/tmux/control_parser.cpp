#include "io/tmux/control_parser.hpp"

namespace shellctl::io::tmux {
namespace {

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::vector<std::string> line_splitter::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    lines.emplace_back(pending_, start, nl - start);
    start = nl + 1;
  }
  pending_.erase(0, start);
  return lines;
}

std::optional<control_event> control_parser::feed(std::string line) {
  using kind = control_event::kind;
  if (in_block_) {
    const bool is_end = starts_with(line, "%end ");
    const bool is_error = starts_with(line, "%error ");
    if ((is_end && line.compare(5, std::string::npos, args_) == 0) ||
        (is_error && line.compare(7, std::string::npos, args_) == 0)) {
      in_block_ = false;
      if (!ours_) return std::nullopt;
      control_event ev{is_end ? kind::block_ok : kind::block_error, std::move(lines_), {}};
      lines_.clear();
      return ev;
    }
    lines_.push_back(std::move(line));
    return std::nullopt;
  }
  if (starts_with(line, "%begin ")) {
    in_block_ = true;
    args_ = line.substr(7);
    ours_ = args_.size() < 2 || args_.compare(args_.size() - 2, 2, " 0") != 0;
    lines_.clear();
    return std::nullopt;
  }
  if (starts_with(line, "%unlinked-window-close ") || starts_with(line, "%window-close "))
    return control_event{kind::window_closed, {}, line.substr(line.find(' ') + 1)};
  if (starts_with(line, "%exit")) return control_event{kind::exiting, {}, {}};
  if (line == "%sessions-changed") return control_event{kind::sessions_changed, {}, {}};
  return std::nullopt;  // other notifications (%window-add, %output, ...) carry nothing we need
}

}  // namespace shellctl::io::tmux
