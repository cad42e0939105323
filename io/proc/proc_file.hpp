#pragma once
// Reading a process's /proc file (stat, children, ...). Such a file says size 0, and a read
// of one whose process died after the open fails with ESRCH; an std::ifstream read through
// an istreambuf_iterator throws then (libstdc++'s basic_filebuf::underflow), which ended a
// job's actor while its job was exiting. Here that is "no text": the process is gone.
#include <optional>
#include <string>

namespace shellctl::io::proc {

// The whole file ("/proc/<pid>/<what>"), or nullopt when it cannot be opened or read.
std::optional<std::string> read_proc_file(long pid, const std::string& what);

// The rest of an open /proc file from its current offset, or nullopt on a read error.
std::optional<std::string> read_proc_fd(int fd);

}  // namespace shellctl::io::proc
