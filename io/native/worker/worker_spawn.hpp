#pragma once
// The supervisor starts a scope's worker (docs/native-scopes.md "The scope worker"): one clone3
// with new user, mount, PID, network, IPC and UTS namespaces, straight into the scope's worker
// cgroup (CLONE_INTO_CGROUP: nothing of the worker ever runs outside it) and with a pidfd
// (CLONE_PIDFD: the identity that cannot be confused with a reused pid). The worker's root is
// mapped to the supervisor's uid and gid; `setup_fd` becomes its fd 3; then it execs
// `<exe> native-worker --setup-fd 3` with an empty environment (its settings come over that
// socket only).
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace shellctl::io::native {

struct spawned_worker {
  pid_t pid = -1;                 // in the supervisor's PID namespace
  int pidfd = -1;                 // owned by the caller
  std::uint64_t starttime = 0;    // /proc/<pid>/stat field 22 (clock ticks since boot)
};

// `cgroup_dir_fd`: an O_DIRECTORY descriptor of the worker's cgroup, -1 for none. False
// with `err`; nothing is left running then.
bool spawn_worker(const std::string& exe, int setup_fd, int cgroup_dir_fd, spawned_worker& out,
                  std::string& err);

// Field 22 of /proc/<pid>/stat; 0 when the process is gone.
std::uint64_t process_starttime(pid_t pid);

// The kernel's boot id (/proc/sys/kernel/random/boot_id): a pid and start time name one
// process only within one boot.
std::string boot_id();

}  // namespace shellctl::io::native
