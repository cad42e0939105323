#include "io/tmux/job_commands.hpp"

#include <cstdlib>

#include "io/text/shell_quote.hpp"
#include "io/tmux/command.hpp"

namespace shellctl::io::tmux {

std::string new_session_line(const job_session& s) {
  command cmd("new-session");
  cmd.flag("-d").flag("-P").flag("-F").arg("#{pane_pid} #{window_id}").flag("-s").arg(s.name);
  cmd.flag("-x").number(s.cols).flag("-y").number(s.rows);
  for (auto& [k, v] : s.env) cmd.flag("-e").arg(k + "=" + v);
  for (const auto& a : s.argv) cmd.arg(a);
  return cmd.line();
}

std::optional<long> pane_pid_of(const std::vector<std::string>& out) {
  if (out.empty()) return std::nullopt;
  return std::strtol(out[0].c_str(), nullptr, 10);
}

std::string pipe_program(const fs::job_dir& dir, const std::string& output_log,
                         const pipe_settings& st) {
  using text::sh_quote;
  namespace f = fs::job_files;
  auto q = [&](const char* name) { return sh_quote(dir.file(name)); };
  // `exec`: tmux's `sh -c` becomes the sanitizer, so the pipe is one process.
  std::string s = "exec " + sh_quote(st.sanitizer) + " '--ready-file' " + q(f::pipe_ready);
  if (!st.end_nonce.empty())
    s += " '--end-marker' " + sh_quote(st.end_nonce) + " '--end-file' " + q(f::pipe_end);
  s += " '--drained-file' " + q(f::pipe_drained) + " '--failed-file' " + q(f::pipe_failed);
  s += " '--pending-file' " + q(f::pending_line);
  if (st.budget)
    s += " '--budget-helper' " + sh_quote(st.budget->helper) + " '--budget-db' " +
         sh_quote(st.budget->db) + " '--overflow-file' " + q(f::output_overflow);
  s += " >> " + sh_quote(output_log) + " 2> " + q(f::pipe_errors);
  return s;
}

std::vector<std::string> attach_pipe_lines(const std::string& pane, const std::string& program) {
  return {command("pipe-pane").flag("-o").flag("-t").arg(pane).format_arg(program).line(),
          command("display-message").flag("-p").flag("-t").arg(pane).arg("#{pane_pipe}").line()};
}

bool pipe_active(const std::vector<std::string>& out) { return !out.empty() && out[0] == "1"; }

std::string kill_session_line(const std::string& session) {
  return command("kill-session").flag("-t").arg(session).line();
}

std::string interrupt_line(const std::string& pane) {
  return command("send-keys").flag("-t").arg(pane).flag("C-c").line();
}

std::string eof_line(const std::string& pane) {
  return command("send-keys").flag("-t").arg(pane).flag("C-d").line();
}

std::string resize_line(const std::string& pane, int cols, int rows) {
  return command("resize-window").flag("-t").arg(pane).flag("-x").number(cols).flag("-y").number(rows).line();
}

std::string pane_size_line(const std::string& pane) {
  return command("display-message").flag("-p").flag("-t").arg(pane).arg("#{pane_width} #{pane_height}").line();
}

std::optional<std::pair<long, long>> read_pane_size(const std::vector<std::string>& out) {
  if (out.empty()) return std::nullopt;
  char* end = nullptr;
  const long cols = std::strtol(out[0].c_str(), &end, 10);
  if (end == out[0].c_str() || *end != ' ') return std::nullopt;
  const char* rows_at = end + 1;
  const long rows = std::strtol(rows_at, &end, 10);
  if (end == rows_at || *end || cols <= 0 || rows <= 0) return std::nullopt;
  return std::make_pair(cols, rows);
}

std::vector<std::string> paste_lines(const std::string& buffer, const std::string& file,
                                     const std::string& pane) {
  return {command("load-buffer").flag("-b").arg(buffer).format_arg(file).line(),
          command("paste-buffer").flag("-t").arg(pane).flag("-b").arg(buffer).line(),
          command("delete-buffer").flag("-b").arg(buffer).line()};
}

std::string pane_query_line(const std::string& pane) {
  return command("display-message").flag("-p").flag("-t").arg(pane).arg("#{pane_pid} #{pane_pipe}").line();
}

pane_facts read_pane_query(const std::vector<std::string>& out) {
  pane_facts f;
  const std::string line = out.empty() ? "" : out[0];
  f.pid = std::strtol(line.c_str(), nullptr, 10);
  f.pipe_active = line.size() >= 2 && line.substr(line.size() - 2) == " 1";
  return f;
}

}  // namespace shellctl::io::tmux
