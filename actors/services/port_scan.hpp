#pragma once
// port_scan: GET /v1/ports, on a thread of its own (spawned detached by the api_edge for
// one request, then gone). It asks the kernel for every listening TCP socket of the
// network namespace the jobs share with the server (io/sandbox/sock_diag.hpp) and keeps
// those made in a job's cgroup, each named by its job (io/sandbox/cgroups.hpp): a dev
// server a job left running (io/proc/job_init.hpp) is found by its port. Blocking and
// bounded: one netlink dump per address family and one walk of the job root.
#include <caf/all.hpp>

#include <string>

namespace shellctl::actors {

// `job_root`: the server's job cgroup root; "" (no containment) answers 503 unavailable,
// since no socket's job could be told.
caf::behavior port_scan(caf::event_based_actor* self, std::string job_root);

}  // namespace shellctl::actors
