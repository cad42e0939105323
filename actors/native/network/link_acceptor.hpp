#pragma once
// What the network broker (actors/native/network/net_broker.hpp) and the worker's proxy
// (actors/native/network/worker_proxy.hpp) share: a blocking actor that accepts connections on a listening
// socket, each handled by a link actor of its own, at most `max_live` links at once, until
// a stop descriptor becomes readable or hangs up. A link tells its acceptor it ended with
// `link_closed` (the count lives in this one actor's loop, not in shared memory); poll(2)
// cannot watch a mailbox, so the loop wakes every 200 ms to read it. At the end it waits
// (≤ 10 s) for every link — each sees the same hang-up on its own copy of the stop
// descriptor and closes its sockets — and closes both descriptors.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>

#include <cerrno>
#include <chrono>
#include <cstddef>

namespace shellctl::actors {

using link_closed = caf::atom_constant<caf::atom("lnkclosed")>;

// `admit(fd)`: whether this peer may have a link (false: it was answered and closed).
// `refuse_full(fd)`: answers a peer beyond `max_live` (the caller's protocol) and closes it.
// `spawn_link(fd, stop_copy)`: starts the link, which owns both descriptors.
template <class Admit, class RefuseFull, class SpawnLink>
void accept_links(caf::blocking_actor* self, int listen_fd, int stop_fd, std::size_t max_live,
                  Admit admit, RefuseFull refuse_full, SpawnLink spawn_link) {
  std::size_t live = 0;
  auto drain = [&](std::chrono::milliseconds wait) {
    bool more = true;
    while (more)
      self->receive([&](link_closed) { if (live > 0) --live; },
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
    if (fd < 0 || !admit(fd)) continue;
    if (live >= max_live) {
      refuse_full(fd);
      continue;
    }
    const int link_stop = ::fcntl(stop_fd, F_DUPFD_CLOEXEC, 0);
    if (link_stop < 0) {
      ::close(fd);
      continue;
    }
    spawn_link(fd, link_stop);
    ++live;
  }
  ::close(listen_fd);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (live > 0 && std::chrono::steady_clock::now() < until) drain(std::chrono::milliseconds(100));
  ::close(stop_fd);
}

}  // namespace shellctl::actors
