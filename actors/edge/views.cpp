#include "actors/edge/views.hpp"

#include <cstring>

#include "io/json/json.hpp"

namespace shellctl::actors {
namespace {

using io::json::writer;

bool is_done(const job_row& row) { return io::store::is_terminal(row.status); }

// Decision D3: only `exited` reports a number; terminated/failed/lost report null
// (the original's filled-in 0 reads as success).
void write_exit_code(writer& w, const job_row& row) {
  w.key("exit_code");
  if (row.status == io::store::job_status::exited && row.exit_code)
    w.value(*row.exit_code);
  else
    w.null();
}

void write_opt(writer& w, std::string_view key, const std::optional<std::string>& v) {
  w.key(key);
  if (v)
    w.value(*v);
  else
    w.null();
}


}  // namespace

std::string job_result_json(const job_result& r) {
  const auto& row = r.row;
  const auto& win = r.window;
  const auto& output_path = r.output_path;
  writer w;
  w.begin_object();
  w.key("job_id").value(row.job_id);
  w.key("done").value(is_done(row));
  w.key("status").value(io::store::status_text(row.status));
  write_exit_code(w, row);
  w.key("output_path").value(output_path);
  w.key("output").value(win.text);
  w.key("offset").value(win.offset);
  w.key("truncated").value(win.truncated);
  w.end_object();
  return w.finish();
}

std::string job_status_json(const job_status_view& v) {
  const auto& row = v.row;
  const auto offset = v.offset;
  writer w;
  w.begin_object();
  w.key("job_id").value(row.job_id);
  w.key("status").value(io::store::status_text(row.status));
  w.key("done").value(is_done(row));
  write_exit_code(w, row);
  w.key("created_at").value(row.created_at);
  write_opt(w, "started_at", row.started_at);
  write_opt(w, "ended_at", row.ended_at);
  w.key("offset").value(offset);
  w.end_object();
  return w.finish();
}

std::string job_list_json(const job_list& list) {
  const auto& jobs = list.jobs;
  writer w;
  w.begin_object();
  // Decision D4: an empty list is [], not the original's null.
  w.key("jobs").begin_array();
  for (auto& j : jobs) {
    w.begin_object();
    w.key("job_id").value(j.job_id);
    w.key("status").value(io::store::status_text(j.status));
    w.key("created_at").value(j.created_at);
    if (j.started_at) w.key("started_at").value(*j.started_at);
    if (j.ended_at) w.key("ended_at").value(*j.ended_at);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.finish();
}

std::string job_deleted_json(const job_deleted& d) {
  writer w;
  w.begin_object().key("job_id").value(d.job_id).key("deleted").value(true);
  w.end_object();
  return w.finish();
}

std::string worker_usage_json(const io::native::budget_usage& u) {
  writer w;
  w.begin_object().key("input_bytes").value(u.input_used).key("output_bytes").value(u.output_used);
  w.key("jobs_admitted").value(u.jobs_admitted).end_object();
  return w.finish();
}

std::string server_info_json(const server_info& i) {
  writer w;
  w.begin_object().key("version").value(i.version).key("api").begin_array();
  // Only what this build serves.
  for (const char* a : {"jobs", "snapshot", "files", "stream", "resize", "signal", "activity", "ports"}) w.value(a);
  w.end_array().key("isolation").begin_object().key("landlock_abi");
  if (i.landlock_abi)
    w.value(*i.landlock_abi);
  else
    w.null();
  w.key("cgroup").value(i.cgroups ? "v2" : "none").key("cgroup_nsdelegate");
  if (i.nsdelegate)
    w.value(*i.nsdelegate);
  else
    w.null();
  w.key("api_refuses_jobs").value(i.api_refuses_jobs);
  w.key("oom_score_adj").begin_object().key("server");
  if (i.server_oom_score_adj)
    w.value(*i.server_oom_score_adj);
  else
    w.null();
  w.key("jobs").value(i.job_oom_score_adj).end_object();
  w.key("job_sandbox").begin_object().key("ok").value(i.sandbox_problem.empty()).key("problem");
  if (i.sandbox_problem.empty())
    w.null();
  else
    w.value(i.sandbox_problem);
  w.end_object();
  w.end_object();
  w.key("limits").begin_object().key("timeout_max").value(600).key("output_limit_max").value(524288);
  w.end_object();
  // A run's "limits": the fields this server can give, and the ceiling of each (null: none).
  namespace cg = io::sandbox::cgroups;
  w.key("job_limits").begin_object().key("available").begin_array();
  if (i.job_controllers.memory) w.value("memory_bytes");
  if (i.job_controllers.pids) w.value("pids");
  if (i.job_controllers.cpu) w.value("cpu");
  w.end_array().key("ceilings").begin_object();
  auto whole = [&w](const char* key, std::optional<std::uint64_t> v) {
    w.key(key);
    if (v)
      w.value(*v);
    else
      w.null();
  };
  whole("memory_bytes", cg::memory_bytes_of(i.job_ceilings.memory_max));
  whole("pids", cg::pids_of(i.job_ceilings.pids_max));
  w.key("cpu");
  if (const auto cpus = cg::cpus_of(i.job_ceilings.cpu_max))
    w.decimal(*cpus, 2);
  else
    w.null();
  w.end_object().end_object();
  w.end_object();
  return w.finish();
}

std::string job_activity_json(const job_activity& a) {
  writer w;
  w.begin_object();
  w.key("job_id").value(a.row.job_id);
  w.key("status").value(io::store::status_text(a.row.status));
  w.key("done").value(is_done(a.row));
  w.key("offset").value(a.offset);
  w.key("waiting_for_input").value(a.waiting_for_input);
  w.key("idle_seconds").decimal(a.idle_seconds, 1);
  w.key("foreground");
  if (a.foreground) {
    w.begin_object().key("pid").value(static_cast<std::int64_t>(a.foreground->pid));
    w.key("command").value(a.foreground->command).end_object();
  } else {
    w.null();
  }
  w.key("terminal");
  if (a.terminal)
    w.begin_object().key("cols").value(a.terminal->cols).key("rows").value(a.terminal->rows).end_object();
  else
    w.null();
  w.key("processes").value(static_cast<std::uint64_t>(a.processes));
  w.key("ended");
  if (a.ended) {
    w.begin_object().key("by").value(a.ended->by).key("signal");
    const char* name = a.ended->signal > 0 ? ::sigabbrev_np(a.ended->signal) : nullptr;
    if (name)
      w.value(name);
    else
      w.null();
    w.key("limits_hit").begin_array();
    for (const auto& l : a.ended->limits_hit) w.value(l);
    w.end_array().end_object();
  } else {
    w.null();
  }
  w.end_object();
  return w.finish();
}

std::string job_ports_json(const job_ports& p) {
  writer w;
  w.begin_object().key("ports").begin_array();
  for (const auto& port : p.ports) {
    w.begin_object().key("job_id").value(port.job_id).key("port").value(static_cast<std::uint64_t>(port.port));
    w.key("address").value(port.address).key("family").value(port.ipv6 ? "ipv6" : "ipv4").end_object();
  }
  w.end_array().end_object();
  return w.finish();
}

std::string snapshot_restored_json(const snapshot_restored& r) {
  writer w;
  w.begin_object().key("entries").value(r.entries).key("bytes_written").value(r.bytes_written);
  w.end_object();
  return w.finish();
}

std::vector<io::http::header> snapshot_trailers(const snapshot_saved& s) {
  return {{"X-Snapshot-Status", "ok"},
          {"X-Snapshot-Sha256", s.sha256_hex},
          {"X-Snapshot-Bytes", std::to_string(s.bytes)}};
}

io::http::response json_response(int status, std::string body) {
  io::http::response r;
  r.status = status;
  r.headers.push_back({"Content-Type", "application/json"});
  r.body = std::move(body);
  return r;
}

io::http::response error_response(int status, std::string_view code, std::string_view message) {
  return json_response(status, io::http::error_body(code, message));
}

}  // namespace shellctl::actors

namespace shellctl::actors {

io::http::response error_response(const job_error_view& e) {
  return error_response(http_status(e.code), code_text(e.code), e.text);
}

}  // namespace shellctl::actors
