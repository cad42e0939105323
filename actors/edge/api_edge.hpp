#pragma once
// api_edge: the one place where HTTP meets the actors. The front hands it each matched,
// authorized request (http_call); it decodes the body or query into a domain request
// (actors/edge/requests.hpp), asks the registry with CAF's request/response, and turns
// the domain answer or job_errc error into the API's status and body
// (actors/edge/views.hpp). It earns its hop by being the requester: the libuv thread
// cannot be one, and each answer's timeout and error path live here. Home snapshots go to
// the snapshot_gate; their bytes flow between the connection and the snapshot's own actor,
// and the edge ends the answer (trailers, a cut, or an error) from the domain outcome.
// GET /metrics asks the metrics_registry and renders its sample (actors/metrics/prometheus_text.hpp).
// Each file API request gets a file_op of its own (actors/files/file_op.hpp); a download's head
// is written here, its bytes by the op. GET /v1/ports gets a port_scan of its own
// (actors/services/port_scan.hpp), given the job cgroup root ("" without containment).
#include <chrono>
#include <cstdint>
#include <unordered_map>

#include "actors/files/file_op.hpp"
#include "actors/protocol/interfaces.hpp"

namespace shellctl::actors {

struct api_edge_state {
  static inline const char* name = "api_edge";
  using clock = std::chrono::steady_clock;
  // Requests asked and not yet answered, with the bound by which they are answered 503.
  struct open_answer {
    clock::time_point deadline;
    io::http::responder resp;
  };
  std::unordered_map<std::uint64_t, open_answer> open;
  std::uint64_t next_id = 1;
  bool sweep_armed = false;
};

api_edge_actor::behavior_type api_edge(api_edge_actor::stateful_pointer<api_edge_state> self,
                                       job_registry_actor registry, snapshot_gate_actor gate,
                                       metrics_registry_actor metrics,
                                       std::chrono::nanoseconds snapshot_timeout,
                                       file_settings files, std::string job_root);

}  // namespace shellctl::actors
