#include "io/native/net_relay.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

namespace shellctl::io::native {

const char* relay_end_text(relay_end e) {
  switch (e) {
    case relay_end::closed: return "closed";
    case relay_end::deadline: return "deadline";
    case relay_end::stopped: return "stopped";
    case relay_end::exhausted: return "exhausted";
    case relay_end::failed: return "failed";
  }
  return "failed";
}

int ms_left(std::chrono::steady_clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

namespace {

bool stop_signalled(int stop_fd) {
  if (stop_fd < 0) return false;
  pollfd p{stop_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

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
  // Direction 0 reads a and writes b; direction 1 reads b and writes a.
  const int from[2] = {a, b}, to[2] = {b, a};
  bool open[2] = {true, true};
  std::vector<char> buf(kRelayChunk);
  while (open[0] || open[1]) {
    pollfd p[3];
    int n = 0, idx[2] = {-1, -1};
    for (int d = 0; d < 2; ++d)
      if (open[d]) {
        idx[d] = n;
        p[n++] = {from[d], POLLIN, 0};
      }
    const int stop_at = bounds.stop_fd >= 0 ? n : -1;
    if (stop_at >= 0) p[n++] = {bounds.stop_fd, POLLIN, 0};
    const int left = ms_left(bounds.until);
    if (left == 0) return relay_end::deadline;
    const int rc = ::poll(p, static_cast<nfds_t>(n), left);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return relay_end::failed;
    }
    if (rc == 0) return relay_end::deadline;
    if (stop_at >= 0 && p[stop_at].revents != 0) return relay_end::stopped;
    for (int d = 0; d < 2; ++d) {
      if (idx[d] < 0 || p[idx[d]].revents == 0) continue;
      std::size_t want = kRelayChunk;
      if (reserve) {
        want = std::min(reserve(kRelayChunk), kRelayChunk);
        if (want == 0) return relay_end::exhausted;
      }
      const ssize_t got = ::recv(from[d], buf.data(), want, MSG_DONTWAIT);
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        return relay_end::failed;
      }
      if (got == 0) {
        // This side is done sending: pass the half-close on, keep the other direction.
        open[d] = false;
        ::shutdown(to[d], SHUT_WR);
        continue;
      }
      if (!write_all_bounded(to[d], buf.data(), static_cast<std::size_t>(got), bounds))
        return stop_signalled(bounds.stop_fd) ? relay_end::stopped
               : ms_left(bounds.until) == 0   ? relay_end::deadline
                                              : relay_end::failed;
    }
  }
  return relay_end::closed;
}

}  // namespace shellctl::io::native
