#pragma once
// The capabilities a job keeps (libcap). A job running as root keeps what Docker's default
// profile grants a container, without CAP_MKNOD (a device node in a writable tree would
// reach raw disks): no CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_NET_ADMIN,
// CAP_DAC_READ_SEARCH... A job of a non-root server keeps none. The bounding set is cut
// too, so nothing it executes can regain the others.
#include <string>

namespace shellctl::io::sandbox {

// Applies the cut to the calling process (before no_new_privs and exec). False with `err`.
bool cut_capabilities(std::string& err);

// A native scope's job (docs/native-scopes.md "The scoped job sandbox", S12): every capability
// set emptied (effective, permitted, inheritable, ambient, bounding) and the securebits that
// would give root's capabilities back on exec or setuid set and locked, so that uid 0 inside
// the worker's user namespace is an ordinary user for the job. False with `err`.
bool drop_all_capabilities(std::string& err);

// The names a root job keeps, for docs/security.md and the tests ("cap_chown", ...).
const char* const* kept_capability_names();

}  // namespace shellctl::io::sandbox
