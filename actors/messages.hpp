#pragma once
// The whole actor protocol in one place: every message struct, who sends it and who
// answers it. Actors exchange these typed structs (never loose tuples); the HTTP front
// enters through `http_call`, and answers leave through the `responder` a message carries.
//
//   libuv loop ─http_call→ router ─run_call/job_call/list_call→ job_registry ─→ job_actor
//   job_actor ─store_*→ job_store (one SQLite connection, request/response)
//   job_actor ─tmux_command→ tmux_server (one tmux control-mode client, request/response)
//   job_actor ─watch_dir→ fs_watcher (one inotify fd) ─dir_changed→ job_actor
//   tmux_server ─sessions_gone→ job_registry ─session_gone→ job_actor
//   retention_gc ─store_expired→ job_store, ─collect_jobs→ job_registry ─collect_if_expired→ job_actor
#include <caf/all.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "io/fs/inotify_source.hpp"
#include "io/http/server.hpp"
#include "io/store/jobs_db.hpp"

namespace shellctl::actors {

using io::http::responder;
using io::store::job_row;

// ---------------------------------------------------------------- HTTP → router
struct http_call {
  io::http::request req;
  responder resp;
};

// ---------------------------------------------------------------- router → registry → job
// Long-poll parameters after defaulting and clamping (http-api.md §5.2, D5).
struct wait_params {
  std::uint64_t offset = 0;
  double timeout_s = 0;
  std::uint64_t limit = 16384;
  double idle_flush_s = 0.5;
};

struct run_spec {
  std::string script;
  std::string cwd;  // as given ("" = default); the registry resolves it
  std::vector<std::pair<std::string, std::string>> env;
  std::string mode = "pty";
  std::int64_t cols = 200;
  std::int64_t rows = 50;
  wait_params wait;
  // Set by the registry: where this job's output is linked for later jobs of the same
  // HOME (io/fs/home_views.hpp); "" = no view.
  std::string home_view;
};

// POST /v1/jobs/run. Answered by the new job_actor (or the registry on admission errors).
struct run_call {
  run_spec spec;
  responder resp;
};

struct op_wait {
  wait_params p;
};
struct op_tail {
  std::uint64_t limit;
};
struct op_status {};
struct op_input {
  std::string text;
  wait_params p;
};
struct op_terminate {
  double grace_s;
};
struct op_delete {
  bool force;
  double grace_s;
};
using job_op = std::variant<op_wait, op_tail, op_status, op_input, op_terminate, op_delete>;

// A request about one existing job. The registry answers 404 job_not_found itself when
// the id is unknown; otherwise the job_actor answers.
struct job_call {
  std::string job_id;
  job_op op;
  responder resp;
};

// GET /v1/jobs. The registry asks every job actor for its info and answers.
struct list_call {
  std::optional<std::string> status;
  std::size_t limit;
  responder resp;
};

// registry → job_actor, answered with job_info.
struct info_request {};
struct job_info {
  std::string job_id;
  std::string status;
  std::string created_at;
  std::optional<std::string> started_at;
  std::optional<std::string> ended_at;
};

// ---------------------------------------------------------------- job_store (SQLite)
struct store_insert {
  job_row row;
};
struct store_apply {
  std::string job_id;
  io::store::transition t;
};
struct store_record_exit {
  std::string job_id;
  std::int64_t code;
  std::string ended_at;
};
struct store_remove {
  std::string job_id;
};
struct store_load_all {};
struct store_expired {
  std::string cutoff;  // terminal rows with ended_at <= cutoff
};
// The answer to every store_* request except load_all/expired.
struct store_reply {
  bool ok = true;
  std::string error;       // SQLite's message when !ok
  bool transient = false;  // !ok for a reason that passes (disk full, I/O, busy): retry
  bool changed = false;
  std::optional<job_row> row;  // the row after the operation (nullopt: no such row)
};
struct store_rows {
  bool ok = true;
  std::string error;
  std::vector<job_row> rows;
};
struct store_ids {
  std::vector<std::string> ids;
};

// ---------------------------------------------------------------- tmux_server
// Runs the command lines in order; answers tmux_reply.
struct tmux_command {
  std::vector<std::string> lines;
  // Set when lines[0] is a new-session: the tmux_server then tracks that session, so
  // that its end is reported even if it is over before the next session listing.
  std::string creates_session;
};
struct tmux_reply {
  bool ok = true;
  std::string error;                            // text of the first failing command
  std::vector<std::vector<std::string>> output;  // one entry per line that ran
};
// Sent by the control client's reader thread.
struct tmux_lines {
  std::vector<std::string> lines;
};
struct tmux_client_exited {
  std::uint64_t generation;
};
// tmux_server → registry: these sessions no longer exist (killed, exited, server died).
struct sessions_gone {
  std::vector<std::string> names;
  bool server_died = false;  // the tmux server itself went away (killed, crashed)
};
// Answered with session_list: the sessions that exist now.
struct list_sessions_request {};
struct session_list {
  bool ok = true;
  std::string error;
  std::set<std::string> names;
};
// Starts the control client; answered with tmux_reply (ok or the reason it failed).
struct tmux_start {
  caf::actor registry;
};

// ---------------------------------------------------------------- fs_watcher
struct watch_dir {
  std::string path;
  caf::actor owner;
};
struct watch_ack {
  bool ok;
  std::string error;
};
struct unwatch_dir {
  std::string path;
};
struct fs_batch {
  std::vector<io::fs::dir_event> events;
};
// fs_watcher → job_actor: these files in the job dir changed.
struct dir_changed {
  std::set<std::string> names;
};

// ---------------------------------------------------------------- registry ↔ job_actor
struct session_gone {
  bool server_died = false;
};
struct job_removed {
  std::string job_id;
};
struct removal_ack {};
// Sent to each job actor after recovery; `alive` tells whether its session exists.
struct recover_job {
  bool session_alive;
};
// Asks the registry to load every row and settle it (startup, D8). Answered with
// store_rows (ok/error) once every job actor exists.
struct recover_all {};
struct shutdown_jobs {};

// ---------------------------------------------------------------- retention
struct gc_tick {};
struct collect_jobs {
  std::vector<std::string> ids;
  std::string cutoff;
};
struct collect_if_expired {
  std::string cutoff;
};

// ---------------------------------------------------------------- job_actor internals
struct waiter_tick {
  std::uint64_t waiter_id;
};
struct pipe_ready_timeout {};
struct terminate_deadline {
  std::uint64_t generation;
};
struct finalizer_timeout {};
struct output_final_deadline {};
struct store_retry_tick {};
struct remove_retry_tick {};
struct settle_retry {};
struct start_deadline {};
// An answer that waits on tmux or the store is given a 503 at this deadline, unless the
// step it waited on completed first.
struct answer_deadline {
  std::uint64_t guard_id;
};
// Sent to itself by a removed job actor: requests already in its mailbox (forwarded by
// the registry before it forgot the job) are answered 404 first, then it quits.
struct retire {};

}  // namespace shellctl::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::http_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::run_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::list_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::info_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_info)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_insert)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_apply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_record_exit)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_remove)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_load_all)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_expired)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_rows)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_ids)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_lines)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_client_exited)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::sessions_gone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::list_sessions_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::session_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_start)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::watch_dir)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::watch_ack)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::unwatch_dir)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::fs_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::dir_changed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::session_gone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_removed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::removal_ack)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::recover_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::recover_all)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::shutdown_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::gc_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::collect_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::collect_if_expired)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::waiter_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::pipe_ready_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::terminate_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::finalizer_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::output_final_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_retry_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::remove_retry_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::settle_retry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::start_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::answer_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::retire)
