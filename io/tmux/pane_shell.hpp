#pragma once
// The shell tmux runs every pane's command with. tmux starts a pane as
// `<default-shell> -c <command>` and takes default-shell from $SHELL or, when that is unset
// or unusable, from the user's passwd entry. For a service account that entry is
// /usr/sbin/nologin, which refuses every command: the control session and every job would
// end at once. Our command lines are POSIX sh, so a shell that cannot run them is replaced
// by /bin/sh before the tmux server starts. A usable $SHELL is kept as it is, so jobs see
// the $SHELL they saw before (tmux sets a pane's SHELL to its default-shell).
#include <optional>
#include <string>
#include <vector>

namespace shellctl::io::tmux {

// Whether `path` can run `-c <command>`: absolute, executable and not one of the shells
// that exist to refuse a login (nologin, false).
bool runs_commands(const std::string& path);

// The shell for tmux's panes: $SHELL if it runs commands, else the passwd shell if it does
// (what tmux would pick), else /bin/sh.
std::string pane_shell(const std::optional<std::string>& env_shell,
                       const std::string& passwd_shell);

// `env` (NAME=value entries) with SHELL set to pane_shell() of its SHELL and the passwd
// entry of this process's user.
std::vector<std::string> with_pane_shell(std::vector<std::string> env);

}  // namespace shellctl::io::tmux
