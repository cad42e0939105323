#pragma once
// job_actor: one per job. Owns the job's status state machine
// (created → starting → running → exited|terminated|failed|lost) and answers every
// request about the job. What it is doing about the status is its phase (job_phase.hpp:
// the table of phases, what enters each and what each acts on). It learns of progress from events, never by polling (D12):
// fs_watcher reports files in the job dir (output growth, exit artifacts, pipe markers),
// tmux_server reports the session's end. Long-polls wait as `waiter`s and are answered
// on completion, idle flush, a full window or their deadline, whichever comes first.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/protocol/job_timeline.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/jobs/job_actor/job_phase.hpp"
#include "actors/jobs/job_actor/long_poll.hpp"
#include "actors/protocol/settings.hpp"
#include "io/fs/job_dir.hpp"

namespace shellctl::actors {

struct job_peers {
  job_store_actor store;
  tmux_server_actor tmux;
  fs_watcher_actor watcher;
  job_registry_actor registry;
  cleanup_worker_actor cleanup;
  metrics_registry_actor metrics;  // told of starts, final output sizes and input
  event_log_actor log;             // lifecycle events and warnings, one line each
  cgroup_reaper_actor reaper;      // ends the job's cgroup (extensions.md §E5)
};

struct job_state {
  static inline const char* name = "job_actor";
  using clock = std::chrono::steady_clock;

  using waiter = long_poll_set<answer<job_result>>::waiter;

  job_settings cfg;
  job_peers peers;
  job_row row;
  std::string dir;         // S/jobs/<id>
  io::fs::job_dir files{""};  // its files (io/fs/job_dir.hpp)
  std::string output_abs;  // S/jobs/<id>/output.log
  // The run request that created this job, until answered.
  struct pending_run {
    run_spec spec;
    answer<job_result> reply;
    std::optional<io::store::run_key> key;  // its Idempotency-Key, stored with the row
  };
  std::optional<pending_run> run;
  // A stdio job's piped stdin ("stdin": "pipe"): its writer while the pipe is open, and
  // the eventfd that cancels a write the job will never read (the job ended). The pipe
  // is none (/dev/null, or a PTY), open, or closed (eof sent, the job ended, a restart).
  enum class stdin_pipe_state { none, open, closed };
  stdin_pipe_state stdin_state = stdin_pipe_state::none;
  std::optional<stdin_feeder_actor> stdin_feeder;
  int stdin_cancel = -1;
  answer<job_recovered> recovery;  // a recovered job: answered once its first settle is done
  clock::time_point admitted_at;  // when the run request arrived (/metrics: start latency)
  clock::time_point run_arrived;  // the same, on the actor's clock (the run's timeout)
  timeline_recorder timeline;     // where its milliseconds go (actors/protocol/job_timeline.hpp)

  job_phase phase = job_phase::spawned;  // what the actor is doing (actors/jobs/job_actor/job_phase.hpp)
  job_phase phase_before_removal = job_phase::spawned;  // where a failed row removal returns
  bool session_alive = false;  // as far as tmux_server has told us
  long pane_pid = 0;
  bool busy = false;   // a store transition is in flight
  bool dirty = false;  // something happened meanwhile: settle again afterwards
  bool watching = false;
  bool finalizer_timer_armed = false;
  bool finalizer_expired = false;
  int start_attempts = 0;  // starts begun; a start that died with the tmux server is retried

  // "Once an answer says done, its offset is final": a terminal row is reported as done
  // only when the job's output can no longer grow (output_final in job_actor.cpp). Until
  // then answers show the job as it was before (`shown_live_status`).
  bool pipe_attached = false;    // PTY: a pipe-pane sanitizer was (or may have been) started
  bool gate_opened = false;      // the runner was let go: the script may have printed
  bool output_settled = false;   // latched once the output is final
  bool output_deadline = false;  // the bound on waiting for that passed
  bool output_timer_armed = false;
  io::store::job_status shown_live_status = io::store::job_status::created;
  std::vector<std::function<void()>> when_output_final;

  // Live output streams (GET .../stream), each a job_stream actor this one monitors; they
  // hear of the output's size and end from here (what was last told, to tell only news).
  std::vector<job_stream_actor> streams;
  std::uint64_t streams_told_size = 0;
  // The furthest offset an answer handed out past the log (a prompt's pending line, shown
  // while the job waited for its terminal): a wait from there is valid until the log
  // catches up.
  std::uint64_t output_shown_end = 0;
  // Who began the job's end, when this server did (a client's terminate or delete, or the
  // scope's wall deadline), and what its cgroup counted against its limits by its end
  // (OOM kills, refused forks): the activity view says why a finished job ended.
  enum class end_cause { none, terminate, deadline };
  end_cause ended_by = end_cause::none;
  io::sandbox::cgroups::limit_events limit_events;
  // The values its cgroup is made with: the server's limits narrowed by the run's own.
  io::sandbox::cgroups::job_limits limits;
  bool streams_told_done = false;

  // A store write that failed for a passing reason (disk full...) is retried until it
  // succeeds; meanwhile `pending_row` is what it will make of the row, and answers show it.
  std::function<void()> store_retry;  // sends the failed write again
  std::optional<job_row> pending_row;
  bool store_failing = false;  // logged once per failing stretch
  std::function<void()> remove_retry;  // a delete whose row removal is being retried
  bool settle_retry_armed = false;     // settle() met unreadable artifacts: try again

  // The start's bound: a start that is stuck (tmux silent, the store failing) is failed,
  // and its run answered; one that is only slow (queued behind other starts on a busy
  // machine) goes on, and its run is answered at its own timeout with the job as it stands.
  bool start_abandoned = false;
  bool row_stored = false;  // the insert answered: the job id can be handed out
  bool start_failed = false;  // fail_start ran: later failures only clean up
  // Answers that wait on tmux or the store: each gets a 503 at its deadline unless the
  // step it waits on completed first (answer_deadline).
  struct guarded_answer {
    held_answer reply;
    std::string outcome;  // what becomes of the request, for the 503's message
  };
  std::map<std::uint64_t, guarded_answer> guarded_answers;
  std::uint64_t start_guard = 0;
  std::uint64_t next_guard_id = 1;

  long_poll_set<answer<job_result>> waiters;
  // Requests that arrived while the job was being removed: answered once the removal is
  // complete (404 when it succeeded), never while its files still exist.
  struct held_request {
    std::function<void()> serve;  // serves it as if it arrived now
    held_answer reply;
  };
  std::vector<held_request> during_removal;

  // The job's cgroup (extensions.md §E5): its path ("" without containment), whether it
  // exists as far as this actor knows (made by the start, or found at recovery), and what
  // waits for its end. It is ended when the job's row turns terminal (after a terminate's
  // grace, for a terminate), and before a delete removes the row.
  std::string cgroup;
  bool cgroup_exists = false;
  bool cgroup_ending = false;
  std::vector<std::function<void()>> after_cgroup_end;

  // terminate in progress: answered when the session is gone or the grace ran out (D9)
  bool terminating = false;
  std::uint64_t terminate_generation = 0;
  std::vector<std::function<void()>> after_terminate;
};

// A new job (the registry created its directory) gets `run_request` first; a job
// recovered from the database gets `recover_job`.
job_actor_type::behavior_type job_actor(job_actor_type::stateful_pointer<job_state> self,
                                        job_settings cfg, job_peers peers, job_row row);

}  // namespace shellctl::actors
