#pragma once
// The startup probe of the job world (docs/jobs.md "Starting a job"): a short-lived child
// enters new namespaces as a job's PID 1 does (io/sandbox/namespaces.hpp) and builds the
// world a job of the server's HOME gets (job_world.hpp), then exits; nothing outlives it and
// nothing outside its mount namespace changes. What fails there fails every job with 125, so
// the server says it once at startup (and in /v1/info) instead of the jobs saying it one by
// one: a root directory that is not a mount point (a chroot), user namespaces refused, a
// tree the policy grants that cannot be bound.
#include <string>

#include "io/world/job_world.hpp"

namespace shellctl::io::world {

// "" when the world was built; else the step that failed with the kernel's reason, and
// what to do about it where that is known. `w.root_mount` may be "": a directory of its own
// is made for it in the system's temporary directory and removed again. Call it while the
// process is still dumpable (see namespaces_available in io/sandbox/namespaces.hpp) and
// before any thread exists: it forks.
std::string world_problem(world_spec w);

}  // namespace shellctl::io::world
