#pragma once
// The Unix stream sockets between a scope's worker and its supervisor's broker
// (docs/native-scopes.md "The network broker"): listen, connect, the kernel's word on who the
// peer is (SO_PEERCRED: pid and uid as of connect, in our PID namespace), and a bounded line
// read.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace shellctl::io::native {

// A listening socket at `path` (a stale socket file there is replaced), mode 0600. -1 with `err`.
int listen_unix(const std::string& path, std::string& err);
// A connected socket, or -1 with `err`.
int connect_unix(const std::string& path, std::string& err);

struct peer_credentials {
  pid_t pid = 0;
  uid_t uid = 0;
};
std::optional<peer_credentials> peer_of(int fd);

// Reads one line through '\n' (at most `max` bytes, one byte at a time: nothing after the
// line is consumed) before `until`, or while `stop_fd` stays quiet. nullopt on EOF, an
// overlong line, the deadline or a stop.
std::optional<std::string> read_line(int fd, std::size_t max, std::chrono::steady_clock::time_point until,
                                     int stop_fd = -1);

}  // namespace shellctl::io::native
