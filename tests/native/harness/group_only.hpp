#pragma once
// The component tests' cgroup backend (docs/native-scopes.md "Qualifying a host"; no faked
// controllers): real cgroup v2 groups under a directory a root fixture made and chowned to the
// test user (as systemd's delegation would), doing what this host's cgroup2 can — grouping,
// clone3 into a cgroup, cgroup.kill, freeze, `populated`, and cgroup.max.descendants (a core
// file, no controller needed) — while cpu, memory, swap and pids bounds are left unenforced and
// the capability document says so (no cgroup_controllers). Linked only into this harness: no
// build of `shellctl` can serve scopes without their bounds.
#include <memory>
#include <string>

#include "io/native/scope/scope_cgroups.hpp"

namespace shellctl::tests::native {

std::unique_ptr<io::native::scope_cgroups> group_only_cgroups(const std::string& unit_dir);

}  // namespace shellctl::tests::native
