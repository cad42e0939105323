// shellctl-native-harness: the native test supervisor on this host's cgroup2, for the component
// tier (docs/native-scopes.md "Qualifying a host"). The real scope service
// (actors/wiring/native_supervisor) with the group_only cgroup backend and the host checks this
// host can pass; those it cannot (uid when run as root, seccomp, apparmor, the cgroup checks)
// are listed as unenforced on stderr, and the capability document names no cgroup controller.
//
//   shellctl-native-harness --shellctl <built shellctl> --cgroup-dir <delegated dir>
//                           <the flags of `shellctl serve --native-test-supervisor`>
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/wiring/native_supervisor.hpp"
#include "tests/native/harness/group_only.hpp"

extern char** environ;

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::string shellctl, cgroup_dir;
  std::vector<char*> serve_argv{argv[0], const_cast<char*>("serve")};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--shellctl" && i + 1 < argc) shellctl = argv[++i];
    else if (a == "--cgroup-dir" && i + 1 < argc) cgroup_dir = argv[++i];
    else serve_argv.push_back(argv[i]);
  }
  if (shellctl.empty() || cgroup_dir.empty()) {
    std::fputs("usage: shellctl-native-harness --shellctl PATH --cgroup-dir DIR <serve flags>\n", stderr);
    return 2;
  }
  serve_argv.push_back(nullptr);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  shellctl::io::config::serve_config cfg;
  std::string message;
  const auto parsed = shellctl::io::config::parse_serve(static_cast<int>(serve_argv.size() - 1),
                                                        serve_argv.data(), environ, cfg, message);
  if (parsed != shellctl::io::config::parse_result::run || !cfg.native.supervisor) {
    std::fputs(message.empty() ? "shellctl-native-harness: needs --native-test-supervisor\n" : message.c_str(), stderr);
    return 1;
  }
  const auto report = shellctl::io::native::run_checks(shellctl::actors::supervisor_setup_of(cfg));
  static const std::set<std::string> unenforced = {"uid", "seccomp", "apparmor", "cgroup_placement",
                                                   "cgroup_controllers", "cgroup_finite"};
  for (const auto& c : report.checks) {
    if (c.ok) continue;
    if (unenforced.count(c.id)) {
      std::fprintf(stderr, "shellctl-native-harness: unenforced here: %s: %s\n", c.id.c_str(), c.detail.c_str());
      continue;
    }
    std::fprintf(stderr, "shellctl: native test supervisor: %s: %s\n", c.id.c_str(), c.detail.c_str());
    return 1;
  }
  auto s = std::make_shared<shellctl::actors::supervisor_settings>(shellctl::actors::settings_of(cfg, report));
  s->exe = shellctl;
  s->cgroups = shellctl::tests::native::group_only_cgroups(cgroup_dir);
  return shellctl::actors::run_supervisor(cfg, std::move(s), shellctl::io::native::capability_json(report.found));
}
