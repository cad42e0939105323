#include "actors/net_broker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "actors/broker_link.hpp"
#include "io/native/net_sockets.hpp"

namespace shellctl::actors {

namespace {

void refuse(int fd, const char* line) {
  (void)!::send(fd, line, std::char_traits<char>::length(line), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

}  // namespace

void net_broker(caf::blocking_actor* self, std::shared_ptr<const broker_settings> cfg, int listen_fd,
                int stop_fd, native_catalog_actor catalog) {
  std::size_t live = 0;
  auto drain = [&](std::chrono::milliseconds wait) {
    bool more = true;
    while (more)
      self->receive([&](broker_link_closed) { if (live > 0) --live; },
                    caf::after(wait) >> [&] { more = false; });
  };
  for (;;) {
    pollfd p[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    // Short waits: a link's end arrives in the mailbox, which poll(2) cannot watch.
    const int rc = ::poll(p, 2, 200);
    drain(std::chrono::milliseconds(0));
    if (rc < 0 && errno != EINTR) break;
    if (p[1].revents != 0) break;  // the scope is ending (or the supervisor stopping)
    if (rc <= 0 || (p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // S21: only the worker process itself, as the dedicated uid. A job never sees this
    // socket (its root holds no host directory); anything else that reaches it is refused.
    const auto peer = io::native::peer_of(fd);
    if (!peer || peer->pid != cfg->worker_pid || peer->uid != cfg->worker_uid) {
      refuse(fd, "ERR peer_refused\n");
      continue;
    }
    if (live >= cfg->max_concurrent) {
      refuse(fd, "ERR connection_cap\n");
      continue;
    }
    const int link_stop = ::fcntl(stop_fd, F_DUPFD_CLOEXEC, 0);
    if (link_stop < 0) {
      refuse(fd, "ERR broker_failed\n");
      continue;
    }
    self->spawn<caf::detached>(broker_link, cfg, fd, link_stop, catalog, caf::actor_cast<caf::actor>(self));
    ++live;
  }
  ::close(listen_fd);
  ::unlink(cfg->socket_path.c_str());
  // Every link sees the same hang-up and closes its sockets at once; wait for them all.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (live > 0 && std::chrono::steady_clock::now() < until) drain(std::chrono::milliseconds(100));
  ::close(stop_fd);
}

}  // namespace shellctl::actors
