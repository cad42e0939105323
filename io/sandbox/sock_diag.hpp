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
#include <vector>

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

// A TCP socket listening in this network namespace (jobs share it: GET /v1/ports).
struct listening_socket {
  int family = 0;            // AF_INET or AF_INET6
  std::string address;       // the bound address, as inet_ntop writes it
  std::uint16_t port = 0;
  std::uint64_t cgroup_id = 0;  // of the process that created it (0: the kernel said none)
};

// Every TCP socket in LISTEN state, both families: one inet_diag dump each, on a netlink
// socket of its own (a dump's parts must not meet another question's answer). Blocking,
// bounded like tcp_peer_cgroup. False with `err` when the kernel cannot dump.
bool listening_tcp_sockets(std::vector<listening_socket>& out, std::string& err);

// One datagram of such a dump, parsed (exposed for the fuzz target): appends what it
// names to `out`; `done` once the dump's end is in it. False with `err` on an error
// message or a malformed part.
bool parse_listening_part(std::string_view bytes, std::vector<listening_socket>& out, bool& done,
                          std::string& err);

}  // namespace shellctl::io::sandbox
