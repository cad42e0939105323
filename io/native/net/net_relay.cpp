#include "io/native/net/net_relay.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

namespace shellctl::io::native {

int ms_left(std::chrono::steady_clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

bool write_all_bounded(int fd, const char* data, std::size_t n, const relay_bounds& bounds) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      data += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    pollfd p[2] = {{fd, POLLOUT, 0}, {bounds.stop_fd, POLLIN, 0}};
    const int left = ms_left(bounds.until);
    if (left == 0) return false;
    const int rc = ::poll(p, bounds.stop_fd >= 0 ? 2 : 1, left);
    if (rc < 0 && errno != EINTR) return false;
    if (bounds.stop_fd >= 0 && p[1].revents != 0) return false;
    if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  }
  return true;
}

relay_end relay(int a, int b, const relay_bounds& bounds,
                const std::function<std::size_t(std::size_t)>& reserve) {
  // Both directions progress independently: a direction whose destination is full keeps its
  // bytes while the other goes on (a relay that blocked writing one way while the other way
  // filled up would deadlock against a peer doing the same, as an echo does).
  struct direction {
    int from, to;
    std::vector<char> buf;
    std::size_t off = 0, len = 0;
    bool eof = false;  // `from` is done sending; `to` was half-closed once `buf` drained
  };
  direction dirs[2] = {{a, b, std::vector<char>(kRelayChunk)}, {b, a, std::vector<char>(kRelayChunk)}};
  for (;;) {
    short events[2] = {0, 0};  // for a, for b
    for (int d = 0; d < 2; ++d) {
      auto& x = dirs[d];
      const int from_i = d, to_i = 1 - d;  // dirs[0] reads a (index 0) and writes b (index 1)
      if (x.len > 0) events[to_i] |= POLLOUT;
      else if (!x.eof) events[from_i] |= POLLIN;
    }
    if (events[0] == 0 && events[1] == 0) return relay_end::closed;
    // A descriptor nothing waits on is left out (-1): its hang-up would otherwise wake the
    // poll again and again while the other direction waits to write.
    pollfd p[3] = {{events[0] ? a : -1, events[0], 0}, {events[1] ? b : -1, events[1], 0},
                   {bounds.stop_fd, POLLIN, 0}};
    const nfds_t n = bounds.stop_fd >= 0 ? 3 : 2;
    const int left = ms_left(bounds.until);
    if (left == 0) return relay_end::deadline;
    const int rc = ::poll(p, n, left);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return relay_end::failed;
    }
    if (rc == 0) return relay_end::deadline;
    if (n == 3 && p[2].revents != 0) return relay_end::stopped;
    for (int d = 0; d < 2; ++d) {
      auto& x = dirs[d];
      const short from_ev = p[d].revents, to_ev = p[1 - d].revents;
      if (x.len > 0 && (to_ev & (POLLOUT | POLLERR | POLLHUP)) != 0) {
        const ssize_t w = ::send(x.to, x.buf.data() + x.off, x.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return relay_end::failed;
        if (w > 0) {
          x.off += static_cast<std::size_t>(w);
          x.len -= static_cast<std::size_t>(w);
          if (x.len == 0) x.off = 0;
        }
        if (x.len == 0 && x.eof) ::shutdown(x.to, SHUT_WR);
      } else if (x.len == 0 && !x.eof && (from_ev & (POLLIN | POLLERR | POLLHUP)) != 0) {
        std::size_t want = kRelayChunk;
        if (reserve) {
          want = std::min(reserve(kRelayChunk), kRelayChunk);
          if (want == 0) return relay_end::exhausted;
        }
        const ssize_t got = ::recv(x.from, x.buf.data(), want, MSG_DONTWAIT);
        if (got < 0) {
          if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
          return relay_end::failed;
        }
        if (got == 0) {
          // This side is done sending: pass the half-close on, keep the other direction.
          x.eof = true;
          ::shutdown(x.to, SHUT_WR);
          continue;
        }
        x.off = 0;
        x.len = static_cast<std::size_t>(got);
      }
    }
  }
}

}  // namespace shellctl::io::native
