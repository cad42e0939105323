#include "actors/services/port_scan.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <tuple>

#include "actors/protocol/domain.hpp"
#include "actors/protocol/messages.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/sandbox/sock_diag.hpp"

namespace shellctl::actors {

caf::behavior port_scan(caf::event_based_actor* self, std::string job_root) {
  return {
      [self, job_root](ports_request&) -> caf::result<job_ports> {
        self->quit();
        if (job_root.empty())
          return make_job_error(job_errc::unavailable,
                                "the server contains no job in a cgroup (see /v1/info), so no socket's job can be told");
        std::vector<io::sandbox::listening_socket> sockets;
        std::string err;
        if (!io::sandbox::listening_tcp_sockets(sockets, err))
          return make_job_error(job_errc::unavailable, "the kernel's socket table: " + err);
        // After the dump: a job started in between has no socket in it yet.
        const auto jobs = io::sandbox::cgroups::job_of_cgroup_ids(job_root);
        job_ports out;
        for (auto& s : sockets) {
          const auto it = jobs.find(s.cgroup_id);
          if (s.cgroup_id == 0 || it == jobs.end()) continue;
          out.ports.push_back(job_port{it->second, std::move(s.address), s.port, s.family == AF_INET6});
        }
        std::sort(out.ports.begin(), out.ports.end(), [](const job_port& a, const job_port& b) {
          return std::tie(a.port, a.ipv6, a.address, a.job_id) < std::tie(b.port, b.ipv6, b.address, b.job_id);
        });
        return out;
      },
  };
}

}  // namespace shellctl::actors
