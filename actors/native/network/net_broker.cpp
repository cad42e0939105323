#include "actors/native/network/net_broker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "actors/native/network/broker_link.hpp"
#include "actors/native/network/link_acceptor.hpp"
#include "io/native/net/net_sockets.hpp"

namespace shellctl::actors {

namespace {

void refuse(int fd, const char* line) {
  (void)!::send(fd, line, std::char_traits<char>::length(line), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

}  // namespace

void net_broker(caf::blocking_actor* self, std::shared_ptr<const broker_settings> cfg, int listen_fd,
                int stop_fd, native_catalog_actor catalog) {
  accept_links(
      self, listen_fd, stop_fd, cfg->max_concurrent,
      [&](int fd) {
        // S21: only the worker process itself, as the dedicated uid. A job never sees this
        // socket (its root holds no host directory); anything else that reaches it is refused.
        const auto peer = io::native::peer_of(fd);
        if (peer && peer->pid == cfg->worker_pid && peer->uid == cfg->worker_uid) return true;
        refuse(fd, "ERR peer_refused\n");
        return false;
      },
      [](int fd) { refuse(fd, "ERR connection_cap\n"); },
      [&](int fd, int link_stop) {
        self->spawn<caf::detached>(broker_link, cfg, fd, link_stop, catalog, caf::actor_cast<caf::actor>(self));
      });
  ::unlink(cfg->socket_path.c_str());
}

}  // namespace shellctl::actors
