#include "actors/native/network/broker_link.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "io/native/net/net_relay.hpp"
#include "io/native/net/net_sockets.hpp"
#include "io/native/net/proxy_request.hpp"

namespace shellctl::actors {

namespace native = io::native;

namespace {

void say(int fd, const std::string& line) {
  (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// One pinned address: a non-blocking connect bounded by `bound`, then blocking again. -1 on failure.
int dial(const native::net_endpoint& e, std::chrono::milliseconds bound, int stop_fd) {
  const int fd = ::socket(e.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&e.addr), e.len) != 0) {
    if (errno != EINPROGRESS) {
      ::close(fd);
      return -1;
    }
    pollfd p[2] = {{fd, POLLOUT, 0}, {stop_fd, POLLIN, 0}};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(p, 2, static_cast<int>(bound.count())) <= 0 || p[1].revents != 0 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return -1;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

void broker_link(caf::blocking_actor* self, std::shared_ptr<const broker_settings> cfg, int conn_fd,
                 int stop_fd, native_catalog_actor catalog, caf::actor broker) {
  const auto until = std::chrono::steady_clock::now() + cfg->connection_cap;
  // The catalog's grant; none when it failed (or is gone): the link then grants nothing.
  auto ask = [&](auto msg) {
    std::optional<catalog_net_grant> out;
    self->request(catalog, caf::infinite, std::move(msg))
        .receive([&](catalog_net_grant& g) { out = std::move(g); }, [&](caf::error&) {});
    return out;
  };
  int remote = -1;
  const auto line = native::read_line(conn_fd, 16, std::chrono::steady_clock::now() + cfg->request_bound, stop_fd);
  const auto idx = line ? native::parse_dial_line(*line) : std::nullopt;
  if (!idx || *idx >= cfg->pins.size()) {
    say(conn_fd, "ERR bad_request\n");
  } else {
    // One connection unit per dial, committed before the dial (S22).
    const auto unit = ask(catalog_net_dial{cfg->scope_id});
    if (!unit) {
      say(conn_fd, "ERR broker_failed\n");
    } else if (unit->granted != 1) {
      say(conn_fd, "ERR " + unit->refusal + "\n");
    } else {
      const auto& pin = cfg->pins[*idx];
      for (const auto& address : pin.addresses) {
        auto e = native::parse_endpoint(address, pin.port);
        if (e && (remote = dial(*e, cfg->dial_bound, stop_fd)) >= 0) break;
      }
      say(conn_fd, remote >= 0 ? "OK\n" : "ERR dial_failed\n");
    }
  }
  if (remote >= 0) {
    native::relay(conn_fd, remote, native::relay_bounds{until, stop_fd}, [&](std::size_t max) -> std::size_t {
      const auto g = ask(catalog_net_reserve{cfg->scope_id, max});
      return g ? static_cast<std::size_t>(g->granted) : 0;
    });
    ::close(remote);
  }
  ::close(conn_fd);
  ::close(stop_fd);
  self->send(broker, link_closed::value);
}

}  // namespace shellctl::actors
