#pragma once
// The actor protocol: every message struct, who sends it and who answers it. The typed
// interfaces that say which actor accepts which message are in actors/protocol/interfaces.hpp;
// what the request messages are answered with (domain values, job_errc errors) is in
// actors/protocol/domain.hpp. Nothing here knows HTTP except `http_call`, the edge's input.
//
//   libuv loop ─http_call→ api_edge ─*_request→ job_registry ─delegate→ job_actor
//   job_actor ─store_*→ job_store (one SQLite connection, request/response)
//   job_actor ─tmux_command→ tmux_server (one tmux control-mode client, request/response)
//   job_actor ─watch_dir→ fs_watcher (one inotify fd) ─dir_changed→ job_actor
//   tmux_server ─session_gone→ job_actor (the owner of the session that ended)
//   retention_gc ─store_expired→ job_store, ─collect_jobs→ job_registry ─collect_if_expired→ job_actor
//   loop, job_actor, snapshot_gate, retention_gc ─events→ metrics_registry ─store_count_jobs→ job_store
#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "actors/protocol/job_timeline.hpp"
#include "actors/protocol/domain.hpp"
#include "io/native/worker/worker_budget.hpp"
#include "actors/protocol/wait_params.hpp"
#include "actors/protocol/metrics_model.hpp"
#include "actors/protocol/routes.hpp"
#include "io/fs/inotify_source.hpp"
#include "io/fs/unique_fd.hpp"
#include "io/http/server.hpp"
#include "io/log/log_line.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/store/jobs_db.hpp"

namespace shellctl::actors {

// ---------------------------------------------------------------- HTTP front → api_edge
// A request the front has matched to a route and authorized; the edge decodes it, asks
// the actor that owns the answer and encodes the reply through `resp`.
struct http_call {
  io::http::request req;
  route_match route;
  io::http::responder resp;
};

// api_edge → itself: answer the requests whose bound passed (once a second while any is open).
struct edge_sweep {};

// ---------------------------------------------------------------- api_edge → snapshot_gate
// One home snapshot operation (docs/snapshots.md). The op streams through `out`/`in` itself
// (io/http's responder: the bytes go straight to the connection); the edge ends the
// answer from the op's domain answer (trailers, cut, or an error).
// POST /v1/snapshot/save → snapshot_saved
struct snapshot_save_request {
  std::vector<std::string> excludes;  // gitignore patterns (docs/snapshots.md "Excludes")
  io::http::responder out;
};
// POST /v1/snapshot/restore → snapshot_restored
struct snapshot_restore_request {
  io::http::responder in;  // the body, piece by piece (request::stream_body)
  bool streamed = false;   // false: the body is `body` (a request without one)
  std::string body;
};
// snapshot_op, internal: the connection wrote the save's bytes (look at stream_acked), or
// a piece of the restore's body arrived.
struct stream_drained {};
struct body_arrived {
  io::http::body_piece piece;
};

// ---------------------------------------------------------------- api_edge → port_scan
// GET /v1/ports → job_ports (actors/services/port_scan.hpp).
struct ports_request {};

// ---------------------------------------------------------------- api_edge → file_op
// One file API request (docs/api.md "Files"), each answered by a file_op actor of its own
// (actors/files/file_op.hpp); paths are the client's, resolved by the op beneath the roots.
struct file_stat_request {  // → file_stat
  std::string path;
};
struct file_list_request {  // → file_listing
  std::string path;
  std::size_t limit = 1000;
};
struct file_mkdir_request {  // → file_done
  std::string path;
  bool parents = false;
  unsigned mode = 0755;
};
struct file_delete_request {  // → file_done (deleted)
  std::string path;
  bool recursive = false;
};
struct file_move_request {  // → file_done
  std::string from;
  std::string to;
  bool overwrite = false;
};
// GET /v1/files/content → file_opened; then the edge, having written the head, sends
// file_send (or file_send with `send` false when it answered something else, e.g. 416).
struct file_read_request {
  std::string path;
};
struct file_send {
  io::http::responder out;  // the answer the edge began (lend_socket): its head goes first
  bool send = true;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
// file_op, internal: the connection's socket for a download's body, once its head is
// written (responder::lend_socket); empty when no body goes (HEAD, the client gone).
struct socket_lent {
  std::shared_ptr<io::fs::unique_fd> socket;
};
// PUT /v1/files/content → file_written; the op reads the body from `in` as it arrives.
struct file_write_request {
  std::string path;
  std::optional<unsigned> mode;  // nullopt: keep an existing file's mode, else 0644
  bool parents = false;
  io::http::responder in;
  bool streamed = false;  // false: the body is `body`
  std::string body;
};

// ---------------------------------------------------------------- file_op → home_files
// A channel to the confined file worker (actors/files/home_files.hpp): a Unix socket of its own,
// on which the op sends its requests (io/home/wire.hpp) one at a time, and closes when done.
struct file_channel_request {};
struct file_channel {
  std::shared_ptr<io::fs::unique_fd> socket;
};

// ---------------------------------------------------------------- api_edge → registry → job
using io::store::job_mode;
using io::store::job_status;

struct run_spec {
  std::string script;
  std::string cwd;  // as given ("" = default); the registry resolves it
  std::vector<std::pair<std::string, std::string>> env;
  job_mode mode = job_mode::pty;
  std::int64_t cols = 200;
  std::int64_t rows = 50;
  wait_params wait;
  bool stdin_pipe = false;  // "stdin": "pipe" (stdio jobs): /input writes to the job's stdin
  io::sandbox::cgroups::run_limits limits;  // "limits": the registry checks them
  // Set by the registry: where this job's output is linked for later jobs of the same
  // HOME (io/fs/home_views.hpp); "" = no view.
  std::string home_view;
};

// POST /v1/jobs/run → job_result. The registry admits it and delegates it to the new
// job's actor.
struct run_request {
  run_spec spec;
  // Its Idempotency-Key header and the SHA-256 of its job fields ("" without the header):
  // a repeat answers for the job the first one started (the registry keeps the keys).
  std::string idempotency_key;
  std::string fields_sha256;
};
// POST /v1/jobs/{id}/wait → job_result
struct wait_request {
  std::string job_id;
  wait_params p;
};
// GET /v1/jobs/{id}/log/tail → job_result
struct tail_request {
  std::string job_id;
  std::uint64_t limit;
};
// GET /v1/jobs/{id}/stream → stream_opened (docs/api.md "Live output stream"). The job actor
// checks the offset and hands `out` to a job_stream actor of its own, which answers from then
// on.
struct stream_request {
  std::string job_id;
  std::uint64_t offset = 0;  // ?offset=N, or Last-Event-ID on a reconnect
  io::http::responder out;
};
// GET /v1/jobs/{id} → job_status_view
struct status_request {
  std::string job_id;
};
// POST /v1/jobs/{id}/input → job_result
struct input_request {
  std::string job_id;
  std::string text;
  wait_params p;
  bool charged = false;  // a scope's worker: the text was charged to the input budget
  bool eof = false;  // then the end: a piped stdin closes, a terminal gets its EOF character
};
// POST /v1/jobs/{id}/terminate → job_status_view
struct terminate_request {
  std::string job_id;
  double grace_s;
};
// POST /v1/jobs/{id}/signal → job_status_view (docs/api.md "Job control")
struct signal_request {
  std::string job_id;
  int signo = 0;  // one of job_signals (actors/edge/requests.hpp)
};
// GET /v1/jobs/{id}/activity → job_activity (docs/api.md "Job control")
struct activity_request {
  std::string job_id;
  double idle_flush_s = 0.5;  // ?idle_flush_seconds=: how long quiet counts as waiting
};
// POST /v1/jobs/{id}/resize → job_status_view (docs/api.md "Job control")
struct resize_request {
  std::string job_id;
  int cols = 0;  // 1..4096 each
  int rows = 0;
};
// DELETE /v1/jobs/{id} → job_deleted
struct delete_request {
  std::string job_id;
  bool force;
  double grace_s;
};
// GET /v1/jobs → job_list. The registry asks every job actor for its info and answers.
struct list_request {
  // ?status=: only jobs with that status. A word that is no status matches no job.
  bool filtered = false;
  std::optional<job_status> status;
  std::size_t limit;
};

// registry → job_actor, answered with job_info.
struct info_request {};

// ---------------------------------------------------------------- job_store (SQLite)
struct store_insert {
  job_row row;
  std::optional<io::store::run_key> key;  // inserted with the row
  // In a native scope's worker: the input bytes admission charges (script + env JSON).
  std::uint64_t input_charge = 0;
};
// A native scope's worker: /input's text is charged to the input budget before it is typed.
struct store_charge_input {
  std::uint64_t bytes = 0;
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
// The store's answer to a write (insert, charge_input, apply, record_exit, remove):
// whether it changed anything, and the row after it (nullopt: no such row). A write that
// failed is a caf::error with its domain code: storage_unavailable when the reason passes
// (disk full, I/O, busy: the writer retries), job_capacity_exhausted or
// input_budget_exhausted when a native scope's budget refused it (nothing was done),
// internal_error otherwise; SQLite's message is its text.
struct store_outcome {
  bool changed = false;
  std::optional<job_row> row;
};
struct store_rows {
  std::vector<job_row> rows;
  std::vector<io::store::run_key> run_keys;  // each of a row in `rows`
};
struct store_ids {
  std::vector<std::string> ids;
};

// ---------------------------------------------------------------- tmux_server
// tmux_server → job_actor: the job's session no longer exists (killed, exited, server died).
struct session_gone {
  bool server_died = false;  // the tmux server itself went away (killed, crashed)
};
// Whoever owns a session and is told of its end (a job_actor).
using session_owner = caf::typed_actor<caf::reacts_to<session_gone>>;

// Runs the command lines in order; answers tmux_output, or the first failure as a
// tmux_errc error (actors/protocol/domain.hpp) with tmux's text.
struct tmux_command {
  std::vector<std::string> lines;
  // Set when lines[0] is a new-session: the tmux_server then tracks that session and tells
  // `owner` of its end, even if it is over before the next session listing.
  std::string creates_session;
  session_owner owner;
};
// A session that exists already (found at recovery): tell `owner` of its end; at once if
// it has ended meanwhile.
struct track_session {
  std::string name;
  session_owner owner;
};
struct tmux_output {
  std::vector<std::vector<std::string>> output;  // one entry per line that ran
};
using tmux_result = caf::expected<tmux_output>;
// What tmux_server's failures mean (the CAF category `tmux`), decided once where tmux's
// answer arrives, so that no requester reads tmux's text to branch: each requester turns
// them into the job_errc its own client hears. The error carries tmux's text and the
// output of the lines that ran before the failing one (a new-session that worked before
// its pipe-pane failed still tells its pane's pid).
enum class tmux_errc : std::uint8_t {
  unavailable = 1,  // no tmux server, and none could be started (or the client is gone)
  server_exited,    // the tmux server died while the command was owed: a start may begin again
  target_missing,   // the session, window or pane the command names does not exist
  command_failed,   // tmux refused the command
};
inline constexpr caf::atom_value tmux_error_category = caf::atom("tmux");
caf::error make_tmux_error(tmux_errc code, std::string text, tmux_output ran = {});
bool is_tmux_error(const caf::error& e, tmux_errc code);
// The output of the lines that ran before the failure (empty for other errors).
tmux_output output_before(const caf::error& e);
// Sent by the control client's reader thread.
struct tmux_lines {
  std::vector<std::string> lines;
};
struct tmux_client_exited {
  std::uint64_t generation;
};
// Answered with session_list: the sessions that exist now (or a tmux_errc error).
struct list_sessions_request {};
struct session_list {
  std::set<std::string> names;
};
// Starts the control client; answered with tmux_ready, or the reason it failed
// (tmux_errc::unavailable).
struct tmux_start {};
struct tmux_ready {};
// Answered with tmux_silence: how long commands have been owed an answer while tmux said
// nothing at all. A busy tmux (a hundred starts queued) keeps answering, one command
// after another; a stopped or hung one goes silent. A slow start is told apart from a
// stuck one by this, not by its own age.
struct tmux_silence_query {};
struct tmux_silence {
  std::int64_t ms = 0;  // 0: nothing is owed, or tmux spoke just now
};

// ---------------------------------------------------------------- fs_watcher
// fs_watcher → job_actor: these files in the job dir changed.
struct dir_changed {
  std::set<std::string> names;
  std::set<std::string> closed;  // of `names`, those closed after writing (IN_CLOSE_WRITE)
};
// Whoever is told of changes in a watched directory (a job_actor).
using dir_listener = caf::typed_actor<caf::reacts_to<dir_changed>>;
struct watch_dir {
  std::string path;
  dir_listener owner;
};
// The watch is set; a failure (inotify's) is an internal_error with its text.
struct watch_set {};
struct unwatch_dir {
  std::string path;
};
struct fs_batch {
  std::vector<io::fs::dir_event> events;
};

// ---------------------------------------------------------------- registry ↔ job_actor
struct job_removed {
  std::string job_id;
};
struct removal_ack {};
// Sent to each job actor after recovery; `alive` tells whether its session exists.
struct recover_job {
  bool session_alive;
};
// The job actor's answer once recovery's first settle is carried out (its row stored, or
// nothing to store): the startup retention GC must read rows recovery has made true.
struct job_recovered {};
// Asks the registry to load every row and settle it (startup, D8). Answered with
// `recovered` (or the store's or tmux's error) once every job actor has settled its row
// (or 30 s passed); job requests are served from the moment every job actor exists.
struct recover_all {};
struct recovered {};
struct shutdown_jobs {};

// ---------------------------------------------------------------- stdin_feeder
// An /input's text for a piped stdin, then its end when `eof`.
struct stdin_write {
  std::string text;
  bool eof = false;
};
// All of the text was written. A write that stopped short is an input_unsupported error
// saying why (the job ended, the pipe broke); the bytes the job took are counted in
// /metrics by the feeder either way.
struct stdin_written {
  std::size_t bytes = 0;
};

// ---------------------------------------------------------------- cleanup_worker
// rm -rf of a tree already moved aside (io::fs::move_aside).
struct remove_tree {
  std::string path;
};
// SIGKILL the process groups of processes whose command line names `owner` (a job dir).
struct kill_groups_naming {
  std::string owner;
};

// ---------------------------------------------------------------- cgroup_reaper
// Ends a job's cgroup (docs/jobs.md "Containment"): cgroup.kill, populated 0, rmdir.
struct end_cgroup {
  std::string path;
};
// The cgroup is killed, empty and removed; a failure is an internal_error saying why.
struct cgroup_ended {};

// ---------------------------------------------------------------- retention
struct gc_tick {};
struct collect_jobs {
  std::vector<std::string> ids;
  std::string cutoff;
};
struct collect_if_expired {
  std::string cutoff;
};

// ---------------------------------------------------------------- job_actor → job_stream
// What the job's output is now: its size and, once the output is final, how the job ended
// (the stream's `exit` event). Sent when the stream starts and whenever the job actor's
// own output events (fs_watcher) or its status change.
struct output_progress {
  std::uint64_t size = 0;
  bool done = false;  // the output is final: `status` and `exit_code` are the last word
  std::string status;
  std::optional<std::int64_t> exit_code;
};
// job_stream, internal: the keep-alive timer. (Its connection's writes wake it with
// stream_drained, as they wake a snapshot save.)
struct stream_keepalive {};

// ---------------------------------------------------------------- → metrics_registry
// Events for /metrics (docs/api.md "Metrics"), sent and forgotten: a lost one skews a counter,
// never an answer. The loop thread sends the first two (the libuv↔CAF bridge direction).
struct http_observed {  // a request was answered
  std::string method;
  std::string route;  // the route pattern, "-" for none
  int status = 0;
  std::uint64_t duration_us = 0;
};
struct connections_changed {  // a connection was accepted (accepted = true) or closed
  std::uint64_t open = 0;
  bool accepted = false;
};
struct connection_refused {  // the loop closed a connection at once (server_config::on_refused)
  std::string reason;
};
struct job_started_event {  // job_actor: the job reached running
  io::store::job_mode mode = io::store::job_mode::pty;
  double seconds = 0;  // from admission (the run request) to running
};
struct job_timeline_event {  // job_actor: its timeline, with its first answer that says done
  io::store::job_mode mode = io::store::job_mode::pty;
  job_timeline marks;
};
struct job_output_final {  // job_actor: the job's output can no longer grow
  std::uint64_t bytes = 0;
};
struct job_input_event {  // job_actor: text was pasted into the job
  std::uint64_t bytes = 0;
};
struct snapshot_ended {  // snapshot_gate: an operation answered
  bool save = true;    // false: restore
  bool succeeded = false;
  std::uint64_t bytes = 0;  // save: archive bytes streamed; restore: bytes written
  double seconds = 0;
};
struct gc_swept {  // retention_gc: a sweep ran
  std::uint64_t expired = 0;
};
// job_actor → event_log: one line of the operational log (a lifecycle event or a warning).
struct log_event {
  io::log::level severity = io::log::level::info;
  std::string msg;  // "job" for lifecycle events, else the warning's text
  std::vector<io::log::field> fields;
};
// api_edge → metrics_registry: GET /metrics → metrics_sample (actors/protocol/metrics_model.hpp).
struct metrics_scrape {};
// metrics_registry → job_store: how many rows there are per status and mode.
// A native scope worker's budget counters (GET /v1/worker/usage,
// docs/native-scopes.md "The scope worker").
struct store_usage {};
// A scope worker's budget counters; an error where there is no budget or it cannot be read.
struct store_usage_reply {
  io::native::budget_usage usage;
};
struct store_count_jobs {};
// Rows by status and mode; an error when they cannot be counted (/metrics then leaves the
// family out rather than report zero jobs).
struct store_job_counts {
  std::vector<job_count> counts;
};

// ---------------------------------------------------------------- job_actor internals
struct waiter_tick {
  std::uint64_t waiter_id;
};
struct pipe_ready_timeout {};
// job_actor → itself: a scoped job's wall deadline passed
// (docs/native-scopes.md "The scope worker").
struct wall_deadline {};
struct terminate_deadline {
  std::uint64_t generation;
};
struct finalizer_timeout {};
struct output_final_deadline {};
struct store_retry_tick {};
struct remove_retry_tick {};
struct settle_retry {};
// A start still under way at this moment is looked at: stuck (tmux silent, the store
// failing) it fails; only slow (queued behind other starts) it goes on.
struct start_deadline {};
// The run's own timeout, counted from its arrival, passed while its start is under way:
// it is answered with the job as it stands ("starting", not done) and its client waits on.
struct run_deadline {};
// An answer that waits on tmux or the store is given a 503 at this deadline, unless the
// step it waited on completed first.
struct answer_deadline {
  std::uint64_t guard_id;
};
// Sent to itself by a removed job actor: requests already in its mailbox (forwarded by
// the registry before it forgot the job) are answered 404 first, then it quits.
struct retire {};

}  // namespace shellctl::actors

// Local messages only: they never cross a process boundary, so CAF needs no serializer.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::http_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_channel_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_channel)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::edge_sweep)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::snapshot_save_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::snapshot_restore_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stream_drained)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::body_arrived)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_timeline_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::ports_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_stat_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_list_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_mkdir_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_delete_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_move_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_read_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_send)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::socket_lent)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::file_write_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::run_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::wait_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tail_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::status_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::input_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stdin_write)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stdin_written)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::signal_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::resize_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::activity_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::terminate_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::delete_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::list_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::info_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_insert)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_charge_input)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_apply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_record_exit)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_remove)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_load_all)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_expired)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_rows)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_ids)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_output)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_ready)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_lines)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_client_exited)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::track_session)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::list_sessions_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::session_list)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_start)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_silence_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::tmux_silence)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::watch_dir)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::watch_set)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::recovered)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::unwatch_dir)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::fs_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::dir_changed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::session_gone)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_removed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::removal_ack)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::recover_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_recovered)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::recover_all)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::shutdown_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::remove_tree)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::kill_groups_naming)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::end_cgroup)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::cgroup_ended)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::gc_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::collect_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::collect_if_expired)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::waiter_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::pipe_ready_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::terminate_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::wall_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::finalizer_timeout)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::output_final_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_retry_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::remove_retry_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::settle_retry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::start_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::run_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::answer_deadline)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::retire)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::http_observed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::connections_changed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::connection_refused)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_started_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_output_final)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::job_input_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::snapshot_ended)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::gc_swept)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::log_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stream_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stream_opened)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::output_progress)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::stream_keepalive)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::metrics_scrape)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::metrics_sample)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_usage)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_usage_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_count_jobs)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(shellctl::actors::store_job_counts)
