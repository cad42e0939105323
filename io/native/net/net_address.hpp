#pragma once
// The network broker's addresses (docs/native-scopes.md "The network broker", S22): which
// addresses a scope may reach, and the pins a create request's targets resolve to. A target's
// host is resolved once, at creation; every address it yields is kept only if it is public —
// never the private, loopback, link-local, metadata, multicast or reserved ranges (nor their
// IPv4-mapped or NAT64 forms) — unless it is exactly the administrator's mediator IP:port. The
// broker later dials only these pinned addresses: a name cannot be re-resolved to somewhere
// else after the fact (DNS rebinding).
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shellctl::io::native {

// An IP address (v4 or v6) and a port, as the broker dials it.
struct net_endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string ip_text() const;  // "192.0.2.1" or "2001:db8::1"
  std::uint16_t port() const;
};

// A literal IP ("192.0.2.1", "2001:db8::1", "[2001:db8::1]") with a port.
std::optional<net_endpoint> parse_endpoint(const std::string& ip, std::uint16_t port);
// "IP:port" or "[IPv6]:port" (the mediator's spelling).
std::optional<net_endpoint> parse_ip_port(const std::string& text);

// The denied ranges, for v4, v6, v4-mapped (::ffff:0:0/96), v4-compatible (::/96) and
// NAT64 (64:ff9b::/96, 64:ff9b:1::/48) forms.
bool denied_address(const net_endpoint& e);
// Allowed: not denied, or equal (address and port) to the mediator.
bool allowed_address(const net_endpoint& e, const std::optional<net_endpoint>& mediator);

struct pinned_target {
  std::string host;
  std::uint16_t port = 0;
  std::vector<std::string> addresses;  // IP texts, in the resolver's order, deduplicated
};

// Resolves `host` (getaddrinfo: blocking, for a detached actor) and keeps the allowed
// addresses. An empty list means the target is denied (or does not resolve); `why` says
// which.
pinned_target pin_target(const std::string& host, std::uint16_t port,
                         const std::optional<net_endpoint>& mediator, std::string& why);

}  // namespace shellctl::io::native
