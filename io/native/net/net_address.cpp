#include "io/native/net/net_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

namespace shellctl::io::native {

std::string net_endpoint::ip_text() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof buf);
  else if (addr.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, buf, sizeof buf);
  return buf;
}

std::uint16_t net_endpoint::port() const {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

std::optional<net_endpoint> parse_endpoint(const std::string& ip_in, std::uint16_t port) {
  std::string ip = ip_in;
  if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  net_endpoint e;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&e.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.addr);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    e.len = sizeof(sockaddr_in);
    return e;
  }
  e.addr = {};
  if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    e.len = sizeof(sockaddr_in6);
    return e;
  }
  return std::nullopt;
}

std::optional<net_endpoint> parse_ip_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size() || colon + 6 < text.size()) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const long p = std::stol(port);
  if (p < 1 || p > 65535) return std::nullopt;
  // An IPv6 literal needs its brackets here (else its last group reads as the port).
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (!bracketed && host.find(':') != std::string::npos) return std::nullopt;
  return parse_endpoint(host, static_cast<std::uint16_t>(p));
}

namespace {

bool in_v4(std::uint32_t a, std::uint32_t net, int bits) {
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == (net & mask);
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

bool denied_v4(std::uint32_t a) {
  static const struct {
    std::uint32_t net;
    int bits;
  } ranges[] = {{v4(0, 0, 0, 0), 8},     {v4(10, 0, 0, 0), 8},    {v4(100, 64, 0, 0), 10},
                {v4(127, 0, 0, 0), 8},   {v4(169, 254, 0, 0), 16}, {v4(172, 16, 0, 0), 12},
                {v4(192, 0, 0, 0), 24},  {v4(192, 168, 0, 0), 16}, {v4(198, 18, 0, 0), 15},
                {v4(224, 0, 0, 0), 4},   {v4(240, 0, 0, 0), 4}};
  return std::any_of(std::begin(ranges), std::end(ranges),
                     [a](const auto& r) { return in_v4(a, r.net, r.bits); });
}

bool prefix_is(const unsigned char* b, std::initializer_list<unsigned char> p) {
  std::size_t i = 0;
  for (unsigned char c : p)
    if (b[i++] != c) return false;
  return true;
}

std::uint32_t v4_at(const unsigned char* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
}

bool denied_v6(const unsigned char* b) {
  static const unsigned char zero[16] = {0};
  // :: and ::1
  if (std::memcmp(b, zero, 15) == 0 && (b[15] == 0 || b[15] == 1)) return true;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated): the v4 rules.
  if (std::memcmp(b, zero, 10) == 0 && b[10] == 0xff && b[11] == 0xff) return denied_v4(v4_at(b + 12));
  if (std::memcmp(b, zero, 12) == 0) return denied_v4(v4_at(b + 12));
  // NAT64: 64:ff9b::/96 (well-known) and 64:ff9b:1::/48 (local use) carry a v4 in the
  // last 32 bits; the local-use prefix is private by definition.
  if (prefix_is(b, {0x00, 0x64, 0xff, 0x9b}) && std::memcmp(b + 4, zero, 8) == 0) return denied_v4(v4_at(b + 12));
  if (prefix_is(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) return true;
  // fd00:ec2::254 (the EC2 metadata service over IPv6) lies in fc00::/7 below.
  if ((b[0] & 0xfe) == 0xfc) return true;                   // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;   // fe80::/10 link-local
  if (b[0] == 0xff) return true;                            // ff00::/8 multicast
  return false;
}

}  // namespace

bool denied_address(const net_endpoint& e) {
  if (e.addr.ss_family == AF_INET)
    return denied_v4(ntohl(reinterpret_cast<const sockaddr_in*>(&e.addr)->sin_addr.s_addr));
  if (e.addr.ss_family == AF_INET6)
    return denied_v6(reinterpret_cast<const sockaddr_in6*>(&e.addr)->sin6_addr.s6_addr);
  return true;
}

bool allowed_address(const net_endpoint& e, const std::optional<net_endpoint>& mediator) {
  if (mediator && mediator->addr.ss_family == e.addr.ss_family && mediator->port() == e.port() &&
      mediator->ip_text() == e.ip_text())
    return true;
  return !denied_address(e);
}

pinned_target pin_target(const std::string& host, std::uint16_t port,
                         const std::optional<net_endpoint>& mediator, std::string& why) {
  pinned_target out;
  out.host = host;
  out.port = port;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const int rc = ::getaddrinfo(h.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    // AI_ADDRCONFIG hides every address on a host with loopback alone; try once without.
    hints.ai_flags = 0;
    if (::getaddrinfo(h.c_str(), nullptr, &hints, &res) != 0) {
      why = host + " does not resolve (" + ::gai_strerror(rc) + ")";
      return out;
    }
  }
  std::size_t denied = 0;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    net_endpoint e;
    std::memcpy(&e.addr, a->ai_addr, a->ai_addrlen);
    e.len = a->ai_addrlen;
    if (e.addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&e.addr)->sin_port = htons(port);
    else if (e.addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&e.addr)->sin6_port = htons(port);
    else continue;
    if (!allowed_address(e, mediator)) {
      ++denied;
      continue;
    }
    const std::string ip = e.ip_text();
    if (std::find(out.addresses.begin(), out.addresses.end(), ip) == out.addresses.end())
      out.addresses.push_back(ip);
  }
  ::freeaddrinfo(res);
  if (out.addresses.empty())
    why = host + ":" + std::to_string(port) + " resolves only to denied addresses (" +
          std::to_string(denied) + " private, loopback, metadata or reserved; not the mediator)";
  return out;
}

}  // namespace shellctl::io::native
