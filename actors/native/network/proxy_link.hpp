#pragma once
// proxy_link: one job connection to its scope's proxy
// (docs/native-scopes.md "The network broker"). It reads the request head (16 KiB, 10 s):
// `CONNECT host:port` or an absolute-form `http://` request whose authority is exactly one of
// the scope's targets, else `403` (`400` malformed). It then connects to the broker's socket,
// sends `DIAL <idx>\n` and waits for `OK`; a refusal is answered `429` (budget spent), `503`
// (connection cap) or `502`. CONNECT then answers `200 Connection established` and the bytes go
// through opaquely (S23: nothing inside is inspected); an http request is sent on in origin
// form. It ends at EOF both ways, at the 60 s cap, or when the stop descriptor hangs up, and
// tells its proxy (`link_closed`).
#include <caf/all.hpp>

#include <memory>

#include "actors/native/network/link_acceptor.hpp"
#include "actors/native/network/worker_proxy.hpp"

namespace shellctl::actors {

// The HTTP status a broker refusal code answers to the job.
int proxy_status_of(const std::string& broker_code);

// Owns `client_fd` and `stop_fd`.
void proxy_link(caf::blocking_actor* self, std::shared_ptr<const proxy_settings> cfg, int client_fd,
                int stop_fd, caf::actor proxy);

}  // namespace shellctl::actors
