#include "io/tmux/pane_shell.hpp"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace shellctl::io::tmux {

bool runs_commands(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  const auto slash = path.rfind('/');
  const std::string name = path.substr(slash + 1);
  if (name == "nologin" || name == "false") return false;
  return ::access(path.c_str(), X_OK) == 0;
}

std::string pane_shell(const std::optional<std::string>& env_shell,
                       const std::string& passwd_shell) {
  if (env_shell && runs_commands(*env_shell)) return *env_shell;
  if (runs_commands(passwd_shell)) return passwd_shell;
  return "/bin/sh";
}

std::vector<std::string> with_pane_shell(std::vector<std::string> env) {
  std::optional<std::string> env_shell;
  std::size_t at = env.size();
  for (std::size_t i = 0; i < env.size(); ++i) {
    if (env[i].rfind("SHELL=", 0) == 0) {
      env_shell = env[i].substr(6);
      at = i;
    }
  }
  // getpwuid_r with a bounded buffer: this runs once at startup on the main thread, but
  // getpwuid's static buffer is not ours to keep.
  std::string passwd_shell;
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_shell != nullptr)
    passwd_shell = found->pw_shell;
  const std::string shell = "SHELL=" + pane_shell(env_shell, passwd_shell);
  if (at < env.size())
    env[at] = shell;
  else
    env.push_back(shell);
  return env;
}

}  // namespace shellctl::io::tmux
