#include "actors/native/network/proxy_link.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "io/native/net/net_relay.hpp"
#include "io/native/net/net_sockets.hpp"

namespace shellctl::actors {

namespace native = io::native;

int proxy_status_of(const std::string& code) {
  if (code == "network_connections_exhausted" || code == "network_bytes_exhausted") return 429;
  if (code == "connection_cap") return 503;
  return 502;
}

namespace {

// The request head (through its blank line) and whatever came after it, or a refusal.
bool read_head(int fd, const proxy_settings& cfg, int stop_fd, std::string& buf, std::size_t& head_len,
               int& status) {
  const auto until = std::chrono::steady_clock::now() + cfg.head_bound;
  char chunk[4096];
  while ((head_len = native::proxy_head_length(buf)) == 0) {
    if (buf.size() > native::kProxyHeadMax) {
      status = 431;
      return false;
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int left = native::ms_left(until);
    const int rc = left == 0 ? 0 : ::poll(p, 2, left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      status = 408;
      return false;
    }
    if (rc < 0 || p[1].revents != 0) {
      status = 0;  // stopping: no answer
      return false;
    }
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      status = 0;
      return false;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

void answer(int fd, int status, const std::string& reason) {
  if (status == 0) return;
  const auto r = native::proxy_error_response(status, reason);
  (void)!::send(fd, r.data(), r.size(), MSG_NOSIGNAL);
}

}  // namespace

void proxy_link(caf::blocking_actor* self, std::shared_ptr<const proxy_settings> cfg, int client_fd,
                int stop_fd, caf::actor proxy) {
  const auto until = std::chrono::steady_clock::now() + cfg->connection_cap;
  int broker = -1;
  std::string buf;
  std::size_t head_len = 0;
  int status = 400;
  native::proxy_refusal why;
  std::optional<native::proxy_request> req;
  std::optional<std::size_t> idx;
  if (!read_head(client_fd, *cfg, stop_fd, buf, head_len, status)) {
    answer(client_fd, status, status == 408 ? "no complete request head within 10 s" : "the request head is too large");
  } else if (!(req = native::parse_proxy_head(std::string_view(buf).substr(0, head_len), why))) {
    answer(client_fd, why.status, why.reason);
  } else if (!(idx = native::match_target(cfg->targets, req->host, req->port))) {
    answer(client_fd, 403, req->host + ":" + std::to_string(req->port) + " is not one of this scope's network targets");
  } else {
    std::string err;
    broker = native::connect_unix(cfg->broker_socket, err);
    const std::string dial = "DIAL " + std::to_string(*idx) + "\n";
    if (broker < 0 || !native::write_all_bounded(broker, dial.data(), dial.size(), {until, stop_fd})) {
      answer(client_fd, 502, "the scope's network broker cannot be reached");
    } else {
      const auto reply = native::read_line(broker, 64, std::chrono::steady_clock::now() + cfg->broker_bound, stop_fd);
      if (!reply || *reply != "OK\n") {
        std::string code = reply && reply->rfind("ERR ", 0) == 0 ? reply->substr(4, reply->size() - 5) : "broker_failed";
        answer(client_fd, proxy_status_of(code), "the scope's network broker refused: " + code);
      } else {
        bool ok = true;
        if (req->what == native::proxy_request::kind::connect) {
          static const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
          ok = native::write_all_bounded(client_fd, established.data(), established.size(), {until, stop_fd});
        } else {
          ok = native::write_all_bounded(broker, req->forward_head.data(), req->forward_head.size(), {until, stop_fd});
        }
        // Bytes the client sent after its head (a TLS hello, a body) go first.
        if (ok && buf.size() > head_len)
          ok = native::write_all_bounded(broker, buf.data() + head_len, buf.size() - head_len, {until, stop_fd});
        if (ok) native::relay(client_fd, broker, {until, stop_fd}, nullptr);
      }
    }
  }
  if (broker >= 0) ::close(broker);
  ::close(client_fd);
  ::close(stop_fd);
  self->send(proxy, link_closed::value);
}

}  // namespace shellctl::actors
