#pragma once
// The typed interface of every actor: which messages it accepts and what it answers. A
// message sent to an actor that does not accept it, or an answer of the wrong type, is a
// compile error. Messages marked "internal" are sent by the actor to itself (timers) or by
// the thread it owns (a reader thread, the inotify thread); nobody else sends them.
#include <caf/all.hpp>

#include "actors/protocol/domain.hpp"
#include "actors/protocol/messages.hpp"

namespace shellctl::actors {

using caf::reacts_to;
using caf::replies_to;

// metrics_registry: the counters behind /metrics (detached: a scrape reads /proc).
using metrics_registry_actor = caf::typed_actor<
    reacts_to<http_observed>, reacts_to<connections_changed>, reacts_to<connection_refused>,
    reacts_to<job_started_event>,
    reacts_to<job_timeline_event>,
    reacts_to<job_output_final>, reacts_to<job_input_event>, reacts_to<snapshot_ended>,
    reacts_to<gc_swept>,
    replies_to<metrics_scrape>::with<metrics_sample>,  // the counters now, with the jobs' counts
    reacts_to<shutdown_jobs>>;

// event_log: the operational log's lines from actors (detached: it writes stderr).
using event_log_actor = caf::typed_actor<reacts_to<log_event>, reacts_to<shutdown_jobs>>;

// job_store: the one SQLite connection (detached: a write may wait for a busy database).
using job_store_actor = caf::typed_actor<
    replies_to<store_insert>::with<store_outcome>,       // the row after the insert
    replies_to<store_charge_input>::with<store_outcome>,  // changed = charged (a scope's worker)
    replies_to<store_apply>::with<store_outcome>,        // a CAS transition and the row after it
    replies_to<store_record_exit>::with<store_outcome>,  // the server records a runner's exit
    replies_to<store_remove>::with<store_outcome>,       // changed = a row was deleted
    replies_to<store_load_all>::with<store_rows>,      // every row, newest first (recovery)
    replies_to<store_expired>::with<store_ids>,        // terminal rows past retention
    replies_to<store_count_jobs>::with<store_job_counts>,  // rows by status and mode (/metrics)
    replies_to<store_usage>::with<store_usage_reply>,      // a scope worker's budget counters
    reacts_to<shutdown_jobs>>;

// tmux_server: the one tmux control-mode client.
using tmux_server_actor = caf::typed_actor<
    replies_to<tmux_start>::with<tmux_ready>,        // the client is up (or why not)
    replies_to<tmux_command>::with<tmux_output>,     // each line's output, or the first error
    replies_to<list_sessions_request>::with<session_list>,  // the sessions that exist now
    replies_to<tmux_silence_query>::with<tmux_silence>,     // stuck, or only busy?
    reacts_to<track_session>,                        // a recovered job's session
    reacts_to<tmux_lines>,                           // internal: the reader thread's lines
    reacts_to<tmux_client_exited>,                   // internal: the client (or server) died
    reacts_to<shutdown_jobs>>;

// fs_watcher: the one inotify descriptor.
using fs_watcher_actor = caf::typed_actor<
    replies_to<watch_dir>::with<watch_set>,  // the owner is told of changes from now on
    reacts_to<unwatch_dir>,
    reacts_to<fs_batch>,  // internal: events read by the inotify thread
    reacts_to<shutdown_jobs>>;

// cleanup_worker: blocking clean-ups off the scheduler threads (detached).
using cleanup_worker_actor = caf::typed_actor<reacts_to<remove_tree>, reacts_to<kill_groups_naming>,
                                              reacts_to<shutdown_jobs>>;

// cgroup_reaper: ends job cgroups (detached: it waits for the kernel to empty them).
using cgroup_reaper_actor = caf::typed_actor<
    replies_to<end_cgroup>::with<cgroup_ended>,  // once killed, empty and removed (or why not)
    reacts_to<shutdown_jobs>>;

// job_stream: one per GET /v1/jobs/{id}/stream; owns its connection's answer and reads the
// log as the connection drains (actors/jobs/job_stream.hpp).
using job_stream_actor = caf::typed_actor<reacts_to<output_progress>,  // from its job_actor
                                          reacts_to<stream_drained>,   // from the loop thread
                                          reacts_to<stream_keepalive>,  // internal: its timer
                                          reacts_to<shutdown_jobs>>;

// stdin_feeder: one per stdio job whose run asked for `"stdin": "pipe"` (detached: a write
// waits for the job to read). Writes each text in mailbox order; owns the pipe's end.
using stdin_feeder_actor = caf::typed_actor<
    replies_to<stdin_write>::with<stdin_written>,  // all written (or how much, and why not)
    reacts_to<shutdown_jobs>>;

// The requests about one job a client makes, each with its answer, written once: the
// registry (which jobs exist) delegates each to the job's own actor, which answers it, and
// the edge waits for that answer (actors/protocol/job_requests.hpp derives all three).
using job_request_interface = caf::typed_actor<
    replies_to<wait_request>::with<job_result>,       // a long-poll window
    replies_to<tail_request>::with<job_result>,       // the last bytes of output
    replies_to<status_request>::with<job_status_view>,
    replies_to<input_request>::with<job_result>,      // pastes, then waits as asked
    replies_to<terminate_request>::with<job_status_view>,  // once ended and output final
    replies_to<signal_request>::with<job_status_view>,     // once sent (docs/api.md "Job control")
    replies_to<resize_request>::with<job_status_view>,     // once tmux resized
    replies_to<activity_request>::with<job_activity>,      // from /proc and tmux
    replies_to<delete_request>::with<job_deleted>,
    replies_to<stream_request>::with<stream_opened>>;  // a job_stream now writes the answer

// job_actor: one per job; owns its status and answers every request about it.
using job_actor_type = job_request_interface::extend<
    replies_to<run_request>::with<job_result>,        // starts the job, then waits as asked
    replies_to<info_request>::with<job_info>,         // the row for GET /v1/jobs
    reacts_to<dir_changed>,                           // from fs_watcher
    reacts_to<session_gone>,                          // from tmux_server
    replies_to<recover_job>::with<job_recovered>,     // from the registry: once settled
    reacts_to<collect_if_expired>,                    // from the registry, for retention
    reacts_to<shutdown_jobs>,
    // internal: timers
    reacts_to<waiter_tick>, reacts_to<pipe_ready_timeout>, reacts_to<terminate_deadline>, reacts_to<wall_deadline>,
    reacts_to<finalizer_timeout>, reacts_to<store_retry_tick>, reacts_to<settle_retry>,
    reacts_to<remove_retry_tick>, reacts_to<answer_deadline>, reacts_to<start_deadline>, reacts_to<run_deadline>,
    reacts_to<output_final_deadline>, reacts_to<retire>>;

// job_registry: which jobs exist. Admits runs, hands each job request to its actor
// (CAF delegation: the job actor answers the requester directly), lists jobs.
using job_registry_actor = job_request_interface::extend<
    replies_to<run_request>::with<job_result>,
    replies_to<list_request>::with<job_list>,
    replies_to<store_usage>::with<store_usage_reply>,  // a scope worker's counters (the store's)
    replies_to<recover_all>::with<recovered>,    // settle every row (startup, D8)
    replies_to<job_removed>::with<removal_ack>,  // from a job actor that is gone
    reacts_to<collect_jobs>,                     // from retention_gc
    reacts_to<shutdown_jobs>>;

// retention_gc: the retention timer (D1).
using retention_gc_actor = caf::typed_actor<reacts_to<gc_tick>, reacts_to<shutdown_jobs>>;

// snapshot_gate: one home snapshot operation at a time (docs/api.md "Home snapshots"). Each
// operation is a snapshot_op of its own (actors/snapshot/snapshot_op.hpp); the gate is free
// again when it ends.
using snapshot_gate_actor = caf::typed_actor<
    replies_to<snapshot_save_request>::with<snapshot_saved>,       // or snapshot_busy, ...
    replies_to<snapshot_restore_request>::with<snapshot_restored>, // or snapshot_busy, ...
    reacts_to<shutdown_jobs>>;

// home_files: the confined file worker (io/home/helper.hpp), one process for the server's
// Home and granted trees; each file_op gets a channel of its own to it. Started when first
// asked for, started again when it is found gone.
using home_files_actor = caf::typed_actor<
    replies_to<file_channel_request>::with<file_channel>,  // or file_io_failed: why not
    reacts_to<shutdown_jobs>>;

// api_edge: HTTP requests in, domain requests out, domain answers back to HTTP.
using api_edge_actor = caf::typed_actor<reacts_to<http_call>,
                                        reacts_to<edge_sweep>,  // internal: its timer
                                        reacts_to<shutdown_jobs>>;

}  // namespace shellctl::actors
