#pragma once
// Which cgroup a TCP connection's other end belongs to, from the kernel (sock_diag): the
// socket at the peer's address whose remote end is ours, looked up by its four-tuple in
// this network namespace (NETLINK_SOCK_DIAG, inet_diag), and its INET_DIAG_CGROUP_ID
// (the cgroup v2 id, i.e. the inode number of the cgroup's directory, of the process that
// created it; Linux >= 5.7). The HTTP front asks it for every accepted TCP connection, so
// that a job's connection to the API is refused before a byte of it is read
// (io/sandbox/job_peers.hpp).
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shellctl::io::sandbox {

enum class peer_lookup {
  found,        // the peer socket is on this host: `cgroup_id` says whose
  not_local,    // no such socket here: the peer is on another host (or already gone)
  unsupported,  // the kernel has no sock_diag for TCP, or reports no cgroup ids
  failed,       // the lookup itself failed (`err`)
};

struct peer_answer {
  peer_lookup result = peer_lookup::failed;
  std::uint64_t cgroup_id = 0;
  std::string err;
};

// The peer of the connected TCP socket `fd`. One netlink round trip on a socket opened once
// per calling thread. Blocking, bounded: the kernel answers from its socket tables.
peer_answer tcp_peer_cgroup(int fd);

// Whether this kernel can tell (asked once at startup): a loopback connection to ourselves,
// looked up as the HTTP front would look up a client's. `found` with our own cgroup's id.
peer_answer probe_loopback();

// The kernel's answer to one inet_diag request, parsed (exposed for the fuzz target): the
// cgroup id of the first message, or why not.
peer_answer parse_inet_diag_answer(std::string_view bytes);

}  // namespace shellctl::io::sandbox
