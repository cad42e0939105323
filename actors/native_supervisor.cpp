#include "actors/native_supervisor.hpp"

#include <cstdio>
#include <string>

#include "actors/serve.hpp"
#include "io/native/host_checks.hpp"

namespace shellctl::actors {

int serve_native(const io::config::serve_config& cfg) {
  io::native::supervisor_setup setup;
  setup.token = cfg.token;
  setup.state_dir = cfg.state_dir;
  setup.base_root = cfg.native.base_root;
  setup.input_root = cfg.native.input_root;
  setup.image_root = cfg.native.image_root;
  setup.unit_cgroup = cfg.native.unit_cgroup;
  setup.mediator = cfg.native.mediator;
  setup.runner = find_helper("shellctl-runner", false);
  const auto report = io::native::run_checks(setup);
  if (cfg.native.check_only) {
    std::fputs(report.json().c_str(), stdout);
    return report.ok() ? 0 : 1;
  }
  if (const auto* failed = report.first_failure()) {
    std::fprintf(stderr, "shellctl: native test supervisor: %s: %s\n", failed->id.c_str(),
                 failed->detail.c_str());
    return 1;
  }
  std::fputs("shellctl: native test supervisor: this host passed every startup check, but the "
             "scope service is not built yet; nothing is served\n",
             stderr);
  return 1;
}

}  // namespace shellctl::actors
