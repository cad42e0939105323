#pragma once
// Landlock filesystem isolation for a job (docs/security.md "The job sandbox", decision D7:
// fail closed): applied by the runner's child role just before execve. Any error other
// than a missing configured path is fatal; the caller then exits 125 without running the
// script.
#include <string>

#include "io/policy/policy.hpp"

namespace shellctl::io::sandbox {

// The kernel's Landlock ABI version (1..), or -errno when Landlock is unavailable.
int landlock_abi();

// Restricts the calling process (and its future children) to:
//   read-write dirs   : home, cwd (when non-empty and different), policy.rw_dirs that exist;
//   read-only + exec  : policy.ro_dirs that exist, and job_dir ("" = none);
//   read-write files  : policy.rw_files that exist;
// and, where the kernel has ABI 6, scopes signals and abstract Unix sockets to the domain.
// `cwd` is "" when the job's cwd gets no grant (path_rules.hpp). Sets no_new_privs.
// False with `err` (a one-line reason) on any failure.
bool apply_landlock(const policy::path_policy& policy, const std::string& home, const std::string& cwd,
                    const std::string& job_dir, std::string& err);

}  // namespace shellctl::io::sandbox
