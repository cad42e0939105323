#include "io/native/net/net_sockets.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/native/net/net_relay.hpp"

namespace shellctl::io::native {

namespace {

// A fresh stream socket and the address `path` names; -1 with `err`.
int unix_socket(const std::string& path, sockaddr_un& a, std::string& err) {
  a = {};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    err = path + ": too long for a unix socket path";
    return -1;
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) err = std::string("socket: ") + std::strerror(errno);
  return fd;
}

}  // namespace

int listen_unix(const std::string& path, std::string& err) {
  sockaddr_un a;
  const int fd = unix_socket(path, a, err);
  if (fd < 0) return -1;
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::chmod(path.c_str(), 0600) != 0 ||
      ::listen(fd, 16) != 0) {
    err = "listen " + path + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_unix(const std::string& path, std::string& err) {
  sockaddr_un a;
  const int fd = unix_socket(path, a, err);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    err = "connect " + path + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<peer_credentials> peer_of(int fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0 || len != sizeof c) return std::nullopt;
  return peer_credentials{c.pid, c.uid};
}

std::optional<std::string> read_line(int fd, std::size_t max, std::chrono::steady_clock::time_point until,
                                     int stop_fd) {
  std::string line;
  while (line.size() < max) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int left = ms_left(until);
    if (left == 0) return std::nullopt;
    const int rc = ::poll(p, stop_fd >= 0 ? 2 : 1, left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0 || (stop_fd >= 0 && p[1].revents != 0)) return std::nullopt;
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return std::nullopt;
    line.push_back(c);
    if (c == '\n') return line;
  }
  return std::nullopt;
}

}  // namespace shellctl::io::native
