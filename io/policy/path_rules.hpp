#pragma once
// Which directories a job may be granted (guarantee G4, docs/security.md "Guarantees").
// The server checks a request's HOME and cwd with these rules before a job exists, and the
// runner checks them again on the paths it actually resolved (symlinks may change in
// between), so the writable area is always bounded by the server's own rules.
#include <optional>
#include <string>

namespace shellctl::io::policy {

// True when `path` is `root` or lies below it (both absolute and clean).
bool is_within(const std::string& path, const std::string& root);

// The canonical absolute form of `path` (absolute, clean) that may not exist yet: the
// longest existing prefix with every symlink resolved, then the remaining components.
// nullopt when a component that exists is not a directory (or cannot be resolved).
std::optional<std::string> canonical_prospective(const std::string& path);

// "/", or a system tree or inside one: /usr /bin /sbin /lib* /etc /proc /sys /dev /boot
// /run. Granting write access there would widen the job's world beyond its own files.
bool is_system_path(const std::string& canonical);

enum class home_verdict {
  ok,
  relative,           // not an absolute path
  system,             // "/" or a system tree (see is_system_path)
  inside_state,       // the state dir or below it
  ancestor_of_state,  // above the state dir (and not the server's own HOME)
};

// Checks a job HOME (canonical, absolute) under path isolation. `state_dir` is canonical
// ("" = unknown: those checks are skipped). The server's own HOME is accepted even when the
// state dir lies below it (the default layout, ~/.local/share/shellctl): inside every job
// the state dir is masked and its ancestors cannot be renamed.
home_verdict check_home(const std::string& home, const std::string& state_dir,
                        const std::string& server_home);

// A one-line reason for a verdict other than ok, naming the HOME.
std::string home_verdict_text(home_verdict v, const std::string& home);

// Whether a job's cwd (canonical) gets the original's read-write grant: never for "/", a
// system tree, the state dir, an ancestor of it or anything inside it.
bool cwd_gets_grant(const std::string& cwd, const std::string& state_dir);

// The directory whose jobs/<id>/output.log entries link the output of every job with this
// (canonical) HOME: <state>/runtime/home-views/<HOME with '%' and '/' percent-encoded>.
// The runner shows its jobs/ at <state>/jobs in a job of that HOME (guarantee G7). "" when
// the encoded name would not fit in one path component.
std::string home_view_dir(const std::string& state_dir, const std::string& canonical_home);

// True for characters a path coming from a request may not hold: NUL and the C0 and DEL
// control characters (they could end or split a tmux command line).
bool has_control_chars(const std::string& s);

}  // namespace shellctl::io::policy
