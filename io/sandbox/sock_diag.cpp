#include "io/sandbox/sock_diag.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shellctl::io::sandbox {
namespace {

// One netlink socket per thread (the HTTP front's loop asks from one thread). The kernel
// answers at once; a second's bound keeps a lost answer from holding the caller.
int diag_socket() {
  thread_local int fd = -1;
  if (fd < 0) {
    fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd >= 0) {
      timeval bound{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    }
  }
  return fd;
}

// An IPv4 address as an IPv4-mapped IPv6 one shows it (::ffff:a.b.c.d), or nullopt.
bool v4_mapped(const sockaddr_in6& a) {
  static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a.sin6_addr.s6_addr, prefix, sizeof prefix) == 0;
}

}  // namespace

peer_answer parse_inet_diag_answer(std::string_view bytes) {
  peer_answer out;
  std::size_t off = 0;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > bytes.size() - off) break;
    const std::string_view body = bytes.substr(off + sizeof h, h.nlmsg_len - sizeof h);
    if (h.nlmsg_type == NLMSG_ERROR) {
      nlmsgerr e{};
      if (body.size() < sizeof e) break;
      std::memcpy(&e, body.data(), sizeof e);
      if (e.error == -ENOENT) {
        out.result = peer_lookup::not_local;
      } else if (e.error == -EINVAL || e.error == -EOPNOTSUPP || e.error == -ENOSYS) {
        out.result = peer_lookup::unsupported;
        out.err = std::strerror(-e.error);
      } else {
        out.result = peer_lookup::failed;
        out.err = std::string("inet_diag: ") + std::strerror(e.error < 0 ? -e.error : EIO);
      }
      return out;
    }
    if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && body.size() >= sizeof(inet_diag_msg)) {
      std::size_t a = NLMSG_ALIGN(sizeof(inet_diag_msg));
      while (a + sizeof(rtattr) <= body.size()) {
        rtattr r;
        std::memcpy(&r, body.data() + a, sizeof r);
        if (r.rta_len < sizeof r || r.rta_len > body.size() - a) break;
        if (r.rta_type == INET_DIAG_CGROUP_ID && r.rta_len >= RTA_LENGTH(sizeof(std::uint64_t))) {
          std::memcpy(&out.cgroup_id, body.data() + a + RTA_LENGTH(0), sizeof out.cgroup_id);
          out.result = peer_lookup::found;
          return out;
        }
        a += RTA_ALIGN(r.rta_len);
      }
      out.result = peer_lookup::unsupported;  // an answer without a cgroup id: Linux < 5.7
      out.err = "the kernel reports no cgroup id for sockets";
      return out;
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  out.result = peer_lookup::failed;
  out.err = "inet_diag: no answer";
  return out;
}

peer_answer tcp_peer_cgroup(int fd) {
  peer_answer out;
  sockaddr_storage local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) {
    out.err = std::string("addresses: ") + std::strerror(errno);
    return out;
  }
  struct {
    nlmsghdr h;
    inet_diag_req_v2 r;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  thread_local std::uint32_t seq = 0;
  req.h.nlmsg_seq = ++seq;
  req.r.sdiag_protocol = IPPROTO_TCP;
  req.r.idiag_states = ~0U;
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  // The peer's socket: its local end is the peer's address, its remote end ours.
  if (peer.ss_family == AF_INET) {
    const auto& p = reinterpret_cast<const sockaddr_in&>(peer);
    const auto& l = reinterpret_cast<const sockaddr_in&>(local);
    req.r.sdiag_family = AF_INET;
    req.r.id.idiag_sport = p.sin_port;
    req.r.id.idiag_dport = l.sin_port;
    std::memcpy(req.r.id.idiag_src, &p.sin_addr, 4);
    std::memcpy(req.r.id.idiag_dst, &l.sin_addr, 4);
  } else if (peer.ss_family == AF_INET6) {
    const auto& p = reinterpret_cast<const sockaddr_in6&>(peer);
    const auto& l = reinterpret_cast<const sockaddr_in6&>(local);
    req.r.id.idiag_sport = p.sin6_port;
    req.r.id.idiag_dport = l.sin6_port;
    if (v4_mapped(p) && v4_mapped(l)) {  // an IPv4 client of a dual-stack listener
      req.r.sdiag_family = AF_INET;
      std::memcpy(req.r.id.idiag_src, p.sin6_addr.s6_addr + 12, 4);
      std::memcpy(req.r.id.idiag_dst, l.sin6_addr.s6_addr + 12, 4);
    } else {
      req.r.sdiag_family = AF_INET6;
      std::memcpy(req.r.id.idiag_src, &p.sin6_addr, 16);
      std::memcpy(req.r.id.idiag_dst, &l.sin6_addr, 16);
    }
  } else {
    out.result = peer_lookup::unsupported;
    out.err = "not a TCP/IP connection";
    return out;
  }
  const int nl = diag_socket();
  if (nl < 0) {
    out.result = errno == EPROTONOSUPPORT || errno == EAFNOSUPPORT ? peer_lookup::unsupported : peer_lookup::failed;
    out.err = std::string("netlink: ") + std::strerror(errno);
    return out;
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl, &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(sizeof req)) {
    out.err = std::string("netlink send: ") + std::strerror(errno);
    return out;
  }
  char buf[8192];
  for (;;) {
    const ssize_t n = ::recv(nl, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out.err = std::string("netlink recv: ") + std::strerror(n < 0 ? errno : EIO);
      return out;
    }
    nlmsghdr h;
    if (static_cast<std::size_t>(n) >= sizeof h) {
      std::memcpy(&h, buf, sizeof h);
      if (h.nlmsg_seq != req.h.nlmsg_seq) continue;  // a late answer to an earlier question
    }
    return parse_inet_diag_answer(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

peer_answer probe_loopback() {
  peer_answer out;
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int s = -1;
  if (l >= 0 && c >= 0 && ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(l, 1) == 0 &&
      ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
      ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
    s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  if (s >= 0) out = tcp_peer_cgroup(s);
  else out.err = std::string("a loopback connection: ") + std::strerror(errno);
  for (int fd : {l, c, s})
    if (fd >= 0) ::close(fd);
  return out;
}

bool parse_listening_part(std::string_view bytes, std::vector<listening_socket>& out, bool& done,
                          std::string& err) {
  std::size_t off = 0;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > bytes.size() - off) {
      err = "inet_diag: a malformed dump";
      return false;
    }
    const std::string_view body = bytes.substr(off + sizeof h, h.nlmsg_len - sizeof h);
    if (h.nlmsg_type == NLMSG_DONE) {
      done = true;
      return true;
    }
    if (h.nlmsg_type == NLMSG_ERROR) {
      nlmsgerr e{};
      if (body.size() >= sizeof e) std::memcpy(&e, body.data(), sizeof e);
      err = std::string("inet_diag dump: ") + std::strerror(e.error < 0 ? -e.error : EIO);
      return false;
    }
    if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && body.size() >= sizeof(inet_diag_msg)) {
      inet_diag_msg m;
      std::memcpy(&m, body.data(), sizeof m);
      listening_socket s;
      s.family = m.idiag_family;
      s.port = ntohs(m.id.idiag_sport);
      char text[INET6_ADDRSTRLEN] = {};
      if ((m.idiag_family == AF_INET || m.idiag_family == AF_INET6) &&
          ::inet_ntop(m.idiag_family, m.id.idiag_src, text, sizeof text) != nullptr) {
        s.address = text;
        std::size_t a = NLMSG_ALIGN(sizeof(inet_diag_msg));
        while (a + sizeof(rtattr) <= body.size()) {
          rtattr r;
          std::memcpy(&r, body.data() + a, sizeof r);
          if (r.rta_len < sizeof r || r.rta_len > body.size() - a) break;
          if (r.rta_type == INET_DIAG_CGROUP_ID && r.rta_len >= RTA_LENGTH(sizeof(std::uint64_t)))
            std::memcpy(&s.cgroup_id, body.data() + a + RTA_LENGTH(0), sizeof s.cgroup_id);
          a += RTA_ALIGN(r.rta_len);
        }
        out.push_back(std::move(s));
      }
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return true;
}

bool listening_tcp_sockets(std::vector<listening_socket>& out, std::string& err) {
  const int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) {
    err = std::string("netlink: ") + std::strerror(errno);
    return false;
  }
  timeval bound{1, 0};
  ::setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  bool ok = true;
  std::uint32_t seq = 0;
  for (const int family : {AF_INET, AF_INET6}) {
    struct {
      nlmsghdr h;
      inet_diag_req_v2 r;
    } req{};
    req.h.nlmsg_len = sizeof req;
    req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = ++seq;
    req.r.sdiag_family = static_cast<std::uint8_t>(family);
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = 1U << TCP_LISTEN;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(nl, &req, sizeof req, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
        static_cast<ssize_t>(sizeof req)) {
      err = std::string("netlink send: ") + std::strerror(errno);
      ok = false;
      break;
    }
    // A dump comes in datagrams of at most a few pages each.
    static thread_local char buf[65536];
    bool done = false;
    while (ok && !done) {
      const ssize_t n = ::recv(nl, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = std::string("netlink recv: ") + std::strerror(n < 0 ? errno : EIO);
        ok = false;
        break;
      }
      ok = parse_listening_part(std::string_view(buf, static_cast<std::size_t>(n)), out, done, err);
    }
    if (!ok) break;
  }
  ::close(nl);
  return ok;
}

}  // namespace shellctl::io::sandbox
