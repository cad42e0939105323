#pragma once
// Resource limits of a native scope's job (docs/native-scopes.md "The scoped job sandbox",
// S15): the number of open descriptors (RLIMIT_NOFILE) and the size of any one file it writes
// (RLIMIT_FSIZE). Both the soft and the hard limit are lowered, so that the job cannot raise
// them again (raising a hard limit needs CAP_SYS_RESOURCE, which it no longer holds).
#include <sys/resource.h>

#include <cstdint>
#include <string>

namespace shellctl::io::sandbox {

// Sets `resource`'s soft and hard limits to `value`, or keeps the current hard limit when
// it is lower already. False with `err`.
bool lower_limit(int resource, std::uint64_t value, std::string& err);

}  // namespace shellctl::io::sandbox
