#include "actors/services/cgroup_reaper.hpp"

#include "io/sandbox/cgroups.hpp"

namespace shellctl::actors {

cgroup_reaper_actor::behavior_type cgroup_reaper(cgroup_reaper_actor::pointer self,
                                                 cgroup_reaper_settings cfg) {
  return {
      [cfg](end_cgroup& m) -> cgroup_ended {
        cgroup_ended out;
        out.ok = io::sandbox::cgroups::end(m.path, cfg.bound, out.error);
        return out;
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
