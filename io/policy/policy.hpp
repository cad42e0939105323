#pragma once
// The path-isolation policy (docs/security.md "The job sandbox", decision D7). It is the
// server's decision: the runner's parent reads it from its OWN environment (the server passes
// it through tmux) and hands it to the `--exec` child on the command line, never through the
// job's environment, so a request's `env` cannot widen it.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shellctl::io::policy {

struct path_policy {
  bool isolation = true;
  std::vector<std::string> rw_dirs;   // extra read-write directories (HOME and cwd are implied)
  std::vector<std::string> ro_dirs;   // read-only + execute directories (the job dir is implied)
  std::vector<std::string> rw_files;  // read-write device files
};

// The defaults when the variables are unset.
path_policy default_policy();

// Comma-separated list: entries trimmed, empty entries dropped.
std::vector<std::string> split_path_list(std::string_view value);

// Reads SHELLCTL_ENABLE_PATH_ISOLATION (unset = on, else on only if exactly "true") and
// SHELLCTL_LANDLOCK_{RW,RO,RW_DEV}_PATHS (set, even empty, replaces the default) through
// `get` (getenv-like: nullptr when unset).
path_policy policy_from_env(const std::function<const char*(const char*)>& get);

// Flags for the child's command line: {} when isolation is off, else
// {"--landlock", "--rw", <csv>, "--ro", <csv>, "--dev", <csv>}.
std::vector<std::string> policy_to_args(const path_policy& policy);

// The child role's arguments after "--exec":
//   [--landlock] [--rw CSV] [--ro CSV] [--dev CSV] [--] <script> <cwd>
// A list flag that is absent keeps its default. Extra positional arguments are ignored.
struct exec_args {
  path_policy policy;  // policy.isolation = whether --landlock was given
  std::string script;
  std::string cwd;
};
std::optional<exec_args> parse_exec_args(const std::vector<std::string>& args, std::string& err);

}  // namespace shellctl::io::policy
