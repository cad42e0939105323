#include "io/policy/policy.hpp"

namespace shellctl::io::policy {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string join_csv(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out.push_back(',');
    out.append(item);
  }
  return out;
}

}  // namespace

path_policy default_policy() {
  path_policy p;
  p.ro_dirs = {"/usr",          "/bin", "/sbin", "/lib",
               "/lib64",        "/etc", "/proc", "/opt/dify-agent-tools",
               "/opt/homebrew", "/snap"};
  p.rw_files = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty"};
  return p;
}

std::vector<std::string> split_path_list(std::string_view value) {
  std::vector<std::string> out;
  for (;;) {
    const auto comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && is_space(item.front())) item.remove_prefix(1);
    while (!item.empty() && is_space(item.back())) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

path_policy policy_from_env(const std::function<const char*(const char*)>& get) {
  path_policy p = default_policy();
  const char* enabled = get("SHELLCTL_ENABLE_PATH_ISOLATION");
  p.isolation = enabled == nullptr || std::string_view(enabled) == "true";
  if (const char* v = get("SHELLCTL_LANDLOCK_RW_PATHS")) p.rw_dirs = split_path_list(v);
  if (const char* v = get("SHELLCTL_LANDLOCK_RO_PATHS")) p.ro_dirs = split_path_list(v);
  if (const char* v = get("SHELLCTL_LANDLOCK_RW_DEV_PATHS")) p.rw_files = split_path_list(v);
  return p;
}

std::vector<std::string> policy_to_args(const path_policy& policy) {
  if (!policy.isolation) return {};
  return {"--landlock",
          "--rw",
          join_csv(policy.rw_dirs),
          "--ro",
          join_csv(policy.ro_dirs),
          "--dev",
          join_csv(policy.rw_files)};
}

std::optional<exec_args> parse_exec_args(const std::vector<std::string>& args, std::string& err) {
  exec_args out;
  out.policy = default_policy();
  out.policy.isolation = false;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--landlock") {
      out.policy.isolation = true;
      continue;
    }
    std::vector<std::string>* list = a == "--rw"    ? &out.policy.rw_dirs
                                     : a == "--ro"  ? &out.policy.ro_dirs
                                     : a == "--dev" ? &out.policy.rw_files
                                                    : nullptr;
    if (list == nullptr) break;  // first positional argument
    if (i + 1 >= args.size()) {
      err = "flag " + a + " needs a value";
      return std::nullopt;
    }
    *list = split_path_list(args[++i]);
  }
  if (args.size() - i < 2) {
    err = "bad args";
    return std::nullopt;
  }
  out.script = args[i];
  out.cwd = args[i + 1];
  return out;
}

}  // namespace shellctl::io::policy
