#pragma once
// worker_proxy: a scope's loopback proxy (docs/native-scopes.md "The network broker", S21), in
// its worker. The scope's network namespace has only `lo`; with targets, jobs (which share that
// namespace) get HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (lowercase too) = http://127.0.0.1:3128,
// and this is what listens there. At most four connections live at once; a fifth is answered
// `503` and closed. Each one is a proxy_link. It runs inside the worker process itself: the
// broker admits only the worker's PID, so the dial cannot come from anywhere else. Blocking
// (detached): accept and poll; it ends when the stop descriptor hangs up.
#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "io/native/net/proxy_request.hpp"

namespace shellctl::actors {

struct proxy_settings {
  std::vector<io::native::proxy_target> targets;  // by index, as the broker pinned them
  std::string broker_socket;                      // /run/dify-native/host/broker.sock
  std::size_t max_concurrent = 4;
  std::chrono::seconds connection_cap{60};
  std::chrono::milliseconds head_bound{10000};    // the client's request head
  std::chrono::milliseconds broker_bound{15000};  // the broker's OK (its dial included)
};

inline constexpr const char* kProxyAddress = "127.0.0.1:3128";

// A listening TCP socket at 127.0.0.1:3128 in our network namespace; -1 with `err`.
int listen_proxy(std::string& err);

// Owns `listen_fd` and `stop_fd`.
void worker_proxy(caf::blocking_actor* self, std::shared_ptr<const proxy_settings> cfg, int listen_fd,
                  int stop_fd);

}  // namespace shellctl::actors
