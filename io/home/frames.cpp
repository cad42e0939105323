#include "io/home/frames.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shellctl::io::home {
namespace {

// Waits until `sock` is ready for `events` or `until` passes (false, errno ETIMEDOUT).
bool wait_ready(int sock, short events, deadline until) {
  for (;;) {
    int timeout = -1;
    if (until != no_deadline()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        errno = ETIMEDOUT;
        return false;
      }
      timeout = static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30));
    }
    pollfd p{sock, events, 0};
    const int n = ::poll(&p, 1, timeout);
    if (n > 0) return true;  // ready, or an error/hang-up the next call will report
    if (n < 0 && errno != EINTR) return false;
  }
}

// The descriptors in a received message's control data: the first goes to `keep` (or is
// closed), the rest are closed.
void take_fds(msghdr& msg, int* keep) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (std::size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, fds + i, sizeof fd);
      if (keep != nullptr && *keep < 0) *keep = fd;
      else ::close(fd);
    }
  }
}

// Room for a few descriptors: a peer that sends more gets them closed, never leaked.
union control_buffer {
  char buf[CMSG_SPACE(sizeof(int) * 4)];
  cmsghdr align;
};

}  // namespace

bool send_frame(int sock, std::string_view payload, int fd, deadline until) {
  if (payload.size() > max_frame) {
    errno = EMSGSIZE;
    return false;
  }
  unsigned char head[4];
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) head[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
  std::size_t sent = 0;  // of head + payload
  const std::size_t total = 4 + payload.size();
  bool fd_sent = fd < 0;
  while (sent < total) {
    iovec iov[2];
    int niov = 0;
    if (sent < 4) iov[niov++] = {head + sent, 4 - sent};
    const std::size_t from = sent < 4 ? 0 : sent - 4;
    if (from < payload.size())
      iov[niov++] = {const_cast<char*>(payload.data()) + from, payload.size() - from};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(niov);
    control_buffer ctl{};
    if (!fd_sent) {
      msg.msg_control = ctl.buf;
      msg.msg_controllen = CMSG_SPACE(sizeof(int));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    const ssize_t w = ::sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      sent += static_cast<std::size_t>(w);
      fd_sent = true;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_ready(sock, POLLOUT, until)) return false;
      continue;
    }
    return false;
  }
  return true;
}

namespace {

// Exactly `len` bytes into `buf`. Descriptors are kept (in `*keep`, when not null and still
// -1) only from the read that takes the first byte; any others are closed. `closed` when
// the peer closed before the first byte.
recv_result recv_exact(int sock, char* buf, std::size_t len, int* keep, deadline until) {
  std::size_t have = 0;
  while (have < len) {
    iovec iov{buf + have, len - have};
    control_buffer ctl{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof ctl.buf;
    const ssize_t r = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r > 0) {
      take_fds(msg, have == 0 ? keep : nullptr);
      have += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) {
      if (have == 0 && keep != nullptr) return recv_result::closed;
      errno = EPIPE;
      return recv_result::failed;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_ready(sock, POLLIN, until))
        return errno == ETIMEDOUT ? recv_result::timeout : recv_result::failed;
      continue;
    }
    return recv_result::failed;
  }
  return recv_result::frame;
}

}  // namespace

recv_result recv_frame(int sock, std::string& payload, int* fd, deadline until) {
  int held = -1;
  auto fail_with = [&](recv_result r) {
    if (held >= 0) {
      const int e = errno;
      ::close(held);
      held = -1;
      errno = e;
    }
    return r;
  };
  unsigned char head[4];
  const auto h = recv_exact(sock, reinterpret_cast<char*>(head), sizeof head, &held, until);
  if (h != recv_result::frame) return fail_with(h);
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(head[i]) << (8 * i);
  if (n > max_frame) {
    errno = EMSGSIZE;
    return fail_with(recv_result::failed);
  }
  payload.resize(n);
  const auto b = recv_exact(sock, payload.data(), n, nullptr, until);
  if (b != recv_result::frame) return fail_with(b == recv_result::closed ? recv_result::failed : b);
  if (fd != nullptr) *fd = held;
  else if (held >= 0) ::close(held);
  return recv_result::frame;
}

}  // namespace shellctl::io::home
