#include "io/policy/path_rules.hpp"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <vector>

namespace shellctl::io::policy {

namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) {
      std::string c = path.substr(i, j - i);
      if (c == "..") {
        if (!out.empty()) out.pop_back();
      } else if (c != ".") {
        out.push_back(std::move(c));
      }
    }
    i = j;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t k = 0; k < n; ++k) out += "/" + parts[k];
  return out.empty() ? "/" : out;
}

std::string first_component(const std::string& canonical) {
  auto parts = components(canonical);
  return parts.empty() ? std::string() : parts[0];
}

}  // namespace

bool is_within(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

std::optional<std::string> canonical_prospective(const std::string& path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  auto parts = components(path);
  // Walk down while the prefix exists; realpath() the longest existing one.
  std::size_t existing = 0;
  for (std::size_t n = parts.size(); n > 0; --n) {
    struct stat st {};
    if (::lstat(join(parts, n).c_str(), &st) == 0) {
      existing = n;
      break;
    }
  }
  char buf[PATH_MAX];
  if (::realpath(join(parts, existing).c_str(), buf) == nullptr) return std::nullopt;
  std::string out = buf;
  if (existing < parts.size()) {
    struct stat st {};
    if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  }
  for (std::size_t k = existing; k < parts.size(); ++k) out += (out == "/" ? "" : "/") + parts[k];
  return out;
}

bool is_system_path(const std::string& canonical) {
  if (canonical == "/") return true;
  const std::string top = first_component(canonical);
  static const char* const trees[] = {"usr", "bin", "sbin", "etc", "proc", "sys", "dev",
                                      "boot", "run"};
  for (const char* t : trees)
    if (top == t) return true;
  return top.compare(0, 3, "lib") == 0;  // /lib, /lib32, /lib64, /libx32, /libexec
}

home_verdict check_home(const std::string& home, const std::string& state_dir,
                        const std::string& server_home) {
  if (home.empty() || home[0] != '/') return home_verdict::relative;
  if (is_system_path(home)) return home_verdict::system;
  if (!state_dir.empty()) {
    if (is_within(home, state_dir)) return home_verdict::inside_state;
    if (is_within(state_dir, home) && home != server_home) return home_verdict::ancestor_of_state;
  }
  return home_verdict::ok;
}

std::string home_verdict_text(home_verdict v, const std::string& home) {
  switch (v) {
    case home_verdict::ok:
      return "";
    case home_verdict::relative:
      return "HOME must be an absolute path, got \"" + home + "\"";
    case home_verdict::system:
      return "HOME " + home + " is / or a system directory; a job may not be granted it";
    case home_verdict::inside_state:
      return "HOME " + home + " is inside the shellctl state directory";
    case home_verdict::ancestor_of_state:
      return "HOME " + home + " contains the shellctl state directory";
  }
  return "";
}

bool cwd_gets_grant(const std::string& cwd, const std::string& state_dir) {
  if (cwd.empty() || is_system_path(cwd)) return false;
  if (!state_dir.empty() && (is_within(cwd, state_dir) || is_within(state_dir, cwd)))
    return false;
  return true;
}

std::string home_view_dir(const std::string& state_dir, const std::string& canonical_home) {
  std::string name;
  for (char c : canonical_home) {
    if (c == '%')
      name += "%25";
    else if (c == '/')
      name += "%2F";
    else
      name += c;
  }
  if (name.size() > 255) return "";
  return state_dir + "/runtime/home-views/" + name;
}

bool has_control_chars(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

}  // namespace shellctl::io::policy
