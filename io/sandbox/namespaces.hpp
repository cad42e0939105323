#pragma once
// New mount and PID namespaces for a job (inside a new user namespace when the caller may
// not create them directly, i.e. when the server does not run as root). The child becomes
// PID 1 of its PID namespace: when it exits, the kernel kills every other process of the
// namespace, so nothing a job started can outlive it.
#include <sys/types.h>

#include <string>

namespace shellctl::io::sandbox {

struct ns_clone {
  pid_t pid = -1;         // in the parent: the child's pid; 0 in the child; -1 on failure
  bool user_ns = false;   // a user namespace was created too (ids must be mapped)
};

// fork()-like: returns twice. The parent must call map_ids() for a user namespace before
// letting the child go on (the child waits on a pipe for that). On failure `err` says why.
ns_clone clone_into_namespaces(std::string& err);

// Maps `uid`/`gid` onto themselves in the child's user namespace, so that files keep their
// owners and the job keeps the uid the server runs as. Written by the parent.
bool map_ids(pid_t child, uid_t uid, gid_t gid, std::string& err);

// A cgroup namespace rooted at the caller's cgroup (the job's own, docs/jobs.md "Containment"):
// the job then sees its cgroup as "/", and the kernel refuses to move any of its processes to a
// cgroup outside it, even where a cgroup file system is in reach. For the job's PID 1, after it
// entered the job's cgroup. False with `err`.
bool new_cgroup_namespace(std::string& err);

// Whether this process can create the namespaces (forks a short-lived child that tries);
// used once at startup to say so. On false `why` holds the kernel's reason.
// Call it while the process is still dumpable: the child inherits a cleared dumpable
// flag, its /proc files then belong to root, and a non-root caller could not write its
// uid_map, so the probe would report a failure the runner (dumpable after exec) never has.
bool namespaces_available(std::string& why);

// What a native test scope needs (the supervisor's startup check `namespaces`,
// docs/native-scopes.md "The scope service"): a probe child creates user, mount, PID and net
// namespaces (in-namespace root mapped to our uid, as the scope worker is), and as PID 1 there
// mounts a tmpfs, a procfs and an overlay whose upper layer is on that tmpfs, and sets a user
// xattr on the tmpfs (the overlay's own bookkeeping in a user namespace; Linux >= 6.6). Nothing
// outlives the probe. False with the step that failed and the kernel's reason.
bool scope_namespaces_available(std::string& why);

// The answer of namespaces_available(), taken before the server hardens itself.
struct namespace_probe {
  bool available = false;
  std::string why;  // the kernel's reason when not available
  // With the namespaces there: what stops a job's world from being built in them
  // (io/world/world_probe.hpp), which fails every job; "" = it was built, or not probed.
  std::string world_problem;
};

}  // namespace shellctl::io::sandbox
