#pragma once
// The confinement of a Home operation: the helper (shellctl-home, io/home/helper.hpp) runs
// the operation confined exactly as a job of that HOME is, so that what a job cannot reach
// the operation cannot reach either, whatever symlinks, hard links or FIFOs a job planted:
//
//   * its own mount and PID namespaces (and a user namespace when the server is not root),
//     PID 1 of them, killed with its parent (PR_SET_PDEATHSIG);
//   * a job's own-root world (io/world/job_world.hpp): a fresh tmpfs root holding only the
//     read-only system trees, Home and the trees the operation may write, with the state
//     dir replaced by an empty read-only tmpfs wherever it lies (inside Home too, under
//     any name) and every directory between Home and it pinned;
//   * the job's capability set, no_new_privs, Landlock over Home, those trees and the
//     system trees (read-only), and the job's seccomp filter.
//
// Without namespaces (SHELLCTL_JOB_NAMESPACES=off, where jobs run unconfined too) only
// no_new_privs, Landlock where the kernel has it and the seccomp filter apply.
#include <functional>
#include <string>
#include <vector>

namespace shellctl::io::home {

struct confine_spec {
  bool namespaces = true;
  // Landlock is required where jobs require it (path isolation on); otherwise it is applied
  // where the kernel has it.
  bool require_landlock = true;
  std::string home;        // canonical; exists
  std::string state_dir;   // canonical
  std::string root_mount;  // an empty directory the world's root is mounted on (never shown)
  std::vector<std::string> rw_dirs;  // trees besides Home the operation may write
  std::vector<std::string> ro_dirs;  // the system trees (libraries, gconv), read-only
};

// Exit code of a helper whose confinement could not be built (as a job's setup failure).
constexpr int kSetupFailed = 125;

// Runs `body` confined and returns the code the helper exits with: body's, or kSetupFailed
// after `report(reason)` (called in the process that failed, which still holds the
// helper's descriptors). The calling process stays outside as the confined one's parent
// and returns its exit status; it keeps no descriptor but stderr (`keep` lists what the
// confined process alone holds: the parent closes them once it is started).
int run_confined(const confine_spec& spec, const std::vector<int>& keep,
                 const std::function<int()>& body,
                 const std::function<void(const std::string&)>& report);

}  // namespace shellctl::io::home
