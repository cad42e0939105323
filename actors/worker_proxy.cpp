#include "actors/worker_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "actors/proxy_link.hpp"

namespace shellctl::actors {

int listen_proxy(std::string& err) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = std::string("proxy socket: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(3128);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
    err = std::string("proxy listen ") + kProxyAddress + ": " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

void worker_proxy(caf::blocking_actor* self, std::shared_ptr<const proxy_settings> cfg, int listen_fd,
                  int stop_fd) {
  std::size_t live = 0;
  auto drain = [&](std::chrono::milliseconds wait) {
    bool more = true;
    while (more)
      self->receive([&](proxy_link_closed) { if (live > 0) --live; },
                    caf::after(wait) >> [&] { more = false; });
  };
  for (;;) {
    pollfd p[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int rc = ::poll(p, 2, 200);
    drain(std::chrono::milliseconds(0));
    if (rc < 0 && errno != EINTR) break;
    if (p[1].revents != 0) break;
    if (rc <= 0 || (p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (live >= cfg->max_concurrent) {
      const auto answer = io::native::proxy_error_response(
          503, "this scope allows at most " + std::to_string(cfg->max_concurrent) + " proxied connections at once");
      (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    const int link_stop = ::fcntl(stop_fd, F_DUPFD_CLOEXEC, 0);
    if (link_stop < 0) {
      ::close(fd);
      continue;
    }
    self->spawn<caf::detached>(proxy_link, cfg, fd, link_stop, caf::actor_cast<caf::actor>(self));
    ++live;
  }
  ::close(listen_fd);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (live > 0 && std::chrono::steady_clock::now() < until) drain(std::chrono::milliseconds(100));
  ::close(stop_fd);
}

}  // namespace shellctl::actors
