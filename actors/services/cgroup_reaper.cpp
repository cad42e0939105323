#include "actors/services/cgroup_reaper.hpp"

#include "io/sandbox/cgroups.hpp"

namespace shellctl::actors {

cgroup_reaper_actor::behavior_type cgroup_reaper(cgroup_reaper_actor::pointer self,
                                                 cgroup_reaper_settings cfg) {
  return {
      [cfg](end_cgroup& m) -> caf::result<cgroup_ended> {
        std::string err;
        if (!io::sandbox::cgroups::end(m.path, cfg.bound, err)) return make_job_error(job_errc::internal_error, err);
        return cgroup_ended{};
      },
      [self](shutdown_jobs&) { self->quit(); },
  };
}

}  // namespace shellctl::actors
