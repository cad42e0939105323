#include "actors/native/network/worker_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "actors/native/network/link_acceptor.hpp"
#include "actors/native/network/proxy_link.hpp"

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
  accept_links(
      self, listen_fd, stop_fd, cfg->max_concurrent, [](int) { return true; },
      [&](int fd) {
        const auto answer = io::native::proxy_error_response(
            503, "this scope allows at most " + std::to_string(cfg->max_concurrent) + " proxied connections at once");
        (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
      },
      [&](int fd, int link_stop) {
        self->spawn<caf::detached>(proxy_link, cfg, fd, link_stop, caf::actor_cast<caf::actor>(self));
      });
}

}  // namespace shellctl::actors
