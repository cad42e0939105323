#pragma once
// Domain answers → HTTP: the JSON bodies of the API (docs/api.md "Jobs") with their exact
// field sets and order (decision D3 for exit codes), and job_errc errors as the API's
// status and error body. Pure functions, used by the api_edge actor and the front.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/protocol/domain.hpp"
#include "io/http/server.hpp"
#include "io/native/worker/worker_budget.hpp"
#include "io/sandbox/cgroups.hpp"

namespace shellctl::actors {

std::string job_result_json(const job_result& r);
std::string job_status_json(const job_status_view& v);
std::string job_list_json(const job_list& list);
std::string job_deleted_json(const job_deleted& d);
// A native scope worker's GET /v1/worker/usage: {"input_bytes","output_bytes","jobs_admitted"}.
std::string worker_usage_json(const io::native::budget_usage& u);
// {"job_id","status","done","offset","waiting_for_input","idle_seconds","foreground",
//  "terminal","processes"} (docs/api.md "Job control"); foreground and terminal null without
//  a pane.
std::string job_activity_json(const job_activity& a);
std::string job_ports_json(const job_ports& p);
// {"entries":N,"bytes_written":M} (docs/snapshots.md "Restore").
std::string snapshot_restored_json(const snapshot_restored& r);
// The trailers that say a save succeeded (docs/snapshots.md "Trailers": a pinned wire contract).
std::vector<io::http::header> snapshot_trailers(const snapshot_saved& s);

// GET /v1/info (docs/api.md "Info"): what this server can do, fixed for its lifetime.
struct server_info {
  std::string version;
  std::optional<int> landlock_abi;  // the ABI jobs are confined with; none: no path isolation
  bool cgroups = false;             // per-job cgroup v2 containment (docs/jobs.md "Containment")
  std::optional<bool> nsdelegate;   // the host's cgroup2 mount option; none: no containment
  bool api_refuses_jobs = false;    // jobs' connections to the API are told apart and refused
  // The OOM score adjustments in force (io/proc/oom_score.hpp): the server's own (its tmux
  // server and helpers inherit it) and every job process's; none: /proc could not tell.
  std::optional<int> server_oom_score_adj;
  int job_oom_score_adj = 0;
  // What a run may ask for in "limits" (the controllers its cgroup has) and the server's
  // own limits, which are the ceilings of a run's.
  io::sandbox::cgroups::job_controllers job_controllers;
  io::sandbox::cgroups::job_limits job_ceilings;
  // What the startup probe found that fails every job's start (a root that is not a mount
  // point, user namespaces refused, Landlock missing where isolation needs it); "" = nothing.
  std::string sandbox_problem;
};
std::string server_info_json(const server_info& i);

io::http::response json_response(int status, std::string body);
io::http::response error_response(int status, std::string_view code, std::string_view message);
io::http::response error_response(const job_error_view& e);

}  // namespace shellctl::actors
