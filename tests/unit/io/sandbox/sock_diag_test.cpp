// Whose process is at the other end of a TCP connection (io/sandbox/sock_diag.hpp), asked of
// the real kernel over real loopback connections, and the parser on crafted answers: the
// cgroup id comes from its attribute only, ENOENT means "not on this host", anything short
// or cut is a failure, never a read past the bytes.
#include <doctest/doctest.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/sandbox/job_peers.hpp"
#include "io/sandbox/sock_diag.hpp"

namespace sandbox = shellctl::io::sandbox;

namespace {

std::string message(std::uint16_t type, const std::string& body) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(sizeof h + body.size());
  h.nlmsg_type = type;
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += body;
  out.resize(NLMSG_ALIGN(out.size()), '\0');
  return out;
}

std::string diag_answer(bool with_cgroup, std::uint64_t id) {
  std::string body(NLMSG_ALIGN(sizeof(inet_diag_msg)), '\0');
  if (with_cgroup) {
    rtattr a{};
    a.rta_len = RTA_LENGTH(sizeof id);
    a.rta_type = INET_DIAG_CGROUP_ID;
    body.append(reinterpret_cast<const char*>(&a), sizeof a);
    body.append(reinterpret_cast<const char*>(&id), sizeof id);
  }
  return message(SOCK_DIAG_BY_FAMILY, body);
}

std::string error_answer(int err) {
  nlmsgerr e{};
  e.error = -err;
  return message(NLMSG_ERROR, std::string(reinterpret_cast<const char*>(&e), sizeof e));
}

// This process's cgroup v2 directory, as /proc/self/cgroup names it below the hierarchy.
std::uint64_t own_cgroup_id() {
  std::ifstream f("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(f, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  for (const char* mount : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    struct stat st {};
    if (::stat((std::string(mount) + path).c_str(), &st) == 0 && ::stat((std::string(mount) + "/cgroup.procs").c_str(), &st) == 0) {
      ::stat((std::string(mount) + path).c_str(), &st);
      return st.st_ino;
    }
  }
  return 0;
}

}  // namespace

TEST_CASE("the parser takes the cgroup id from its attribute and nothing else") {
  auto a = sandbox::parse_inet_diag_answer(diag_answer(true, 0x1234567890ULL));
  CHECK(a.result == sandbox::peer_lookup::found);
  CHECK(a.cgroup_id == 0x1234567890ULL);
  CHECK(sandbox::parse_inet_diag_answer(diag_answer(false, 0)).result == sandbox::peer_lookup::unsupported);
  CHECK(sandbox::parse_inet_diag_answer(error_answer(ENOENT)).result == sandbox::peer_lookup::not_local);
  CHECK(sandbox::parse_inet_diag_answer(error_answer(EPERM)).result == sandbox::peer_lookup::failed);
  const std::string whole = diag_answer(true, 7);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    CAPTURE(n);
    CHECK(sandbox::parse_inet_diag_answer(whole.substr(0, n)).result != sandbox::peer_lookup::found);
  }
}

TEST_CASE("a loopback peer's cgroup is the kernel's answer, here our own") {
  const auto probe = sandbox::probe_loopback();
  REQUIRE_MESSAGE(probe.result == sandbox::peer_lookup::found, probe.err);
  const auto mine = own_cgroup_id();
  REQUIRE(mine != 0);
  CHECK(probe.cgroup_id == mine);
  // job_peers: our own cgroup is not below a job root made beside it; it is the root
  // itself when the root is our cgroup.
  sandbox::job_peers elsewhere("/nonexistent/job-root");
  CHECK_FALSE(elsewhere.in_job_root(mine));
}

TEST_CASE("the listening dump names our own listener, its port, address and cgroup") {
  const int l = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(l >= 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof a;
  REQUIRE(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(l, 1) == 0);
  REQUIRE(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const std::uint16_t port = ntohs(a.sin6_port);
  std::vector<sandbox::listening_socket> all;
  std::string err;
  REQUIRE_MESSAGE(sandbox::listening_tcp_sockets(all, err), err);
  int found = 0;
  for (const auto& s : all) {
    if (s.port != port) continue;
    ++found;
    CHECK(s.family == AF_INET6);
    CHECK(s.address == "::1");
    CHECK(s.cgroup_id == own_cgroup_id());
  }
  CHECK(found == 1);
  ::close(l);
  // Closed: gone from the next dump.
  all.clear();
  REQUIRE(sandbox::listening_tcp_sockets(all, err));
  for (const auto& s : all) CHECK(s.port != port);
}

TEST_CASE("a dump part is parsed within its bytes: entries, its end, its errors") {
  std::string body(NLMSG_ALIGN(sizeof(inet_diag_msg)), '\0');
  inet_diag_msg m{};
  m.idiag_family = AF_INET;
  m.id.idiag_sport = htons(8080);
  const unsigned char any4[4] = {127, 0, 0, 1};
  std::memcpy(m.id.idiag_src, any4, 4);
  std::memcpy(body.data(), &m, sizeof m);
  rtattr at{};
  at.rta_len = RTA_LENGTH(sizeof(std::uint64_t));
  at.rta_type = INET_DIAG_CGROUP_ID;
  const std::uint64_t id = 77;
  body.append(reinterpret_cast<const char*>(&at), sizeof at);
  body.append(reinterpret_cast<const char*>(&id), sizeof id);
  const std::string part = message(SOCK_DIAG_BY_FAMILY, body) + message(NLMSG_DONE, std::string(4, '\0'));
  std::vector<sandbox::listening_socket> out;
  bool done = false;
  std::string err;
  REQUIRE(sandbox::parse_listening_part(part, out, done, err));
  CHECK(done);
  REQUIRE(out.size() == 1);
  CHECK(out[0].port == 8080);
  CHECK(out[0].address == "127.0.0.1");
  CHECK(out[0].cgroup_id == 77);
  out.clear();
  done = false;
  CHECK_FALSE(sandbox::parse_listening_part(error_answer(EPERM), out, done, err));
  CHECK(err.find("not permitted") != std::string::npos);
  // Every cut of a part: never more than it holds, never a claimed end that is not there.
  for (std::size_t n = 0; n < part.size(); ++n) {
    out.clear();
    done = false;
    sandbox::parse_listening_part(part.substr(0, n), out, done, err);
    CHECK(out.size() <= 1);
    CHECK_FALSE(done);
  }
}
