#pragma once
// cgroup_reaper: ends job cgroups (docs/jobs.md "Containment"), on its own thread (detached),
// because ending one waits for the kernel: cgroup.kill, then `populated 0` (the change
// notification of cgroup.events, bounded), then rmdir (io/sandbox/cgroups.hpp). Job
// actors ask it when their job ends, is terminated, deleted, collected or lost; the
// registry asks it for the orphans found at startup. One at a time, in arrival order: a
// cgroup that does not empty (a process stuck in the kernel) holds the others back for
// at most the bound.
#include <chrono>

#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

struct cgroup_reaper_settings {
  std::chrono::milliseconds bound{5000};  // the wait for populated 0
};

cgroup_reaper_actor::behavior_type cgroup_reaper(cgroup_reaper_actor::pointer self,
                                                 cgroup_reaper_settings cfg);

}  // namespace shellctl::actors
