#pragma once
// What one job actor holds (actors/jobs/job_actor/job_actor.hpp). Three kinds of state:
// * what the job is, fixed when the actor is spawned: its settings, peers, paths;
// * its phase: one of the structs of `phases`, each holding what only that phase needs
//   (the pending run lives in a start, the held requests in a removal), changed only by
//   enter() (job_actor/sections.hpp), which checks the move against job_phase.hpp;
// * the small machines that run beside the phase, each a variant of its own states: the
//   store link (one write in flight, passing failures retried), the output's finality,
//   the job's cgroup, a terminate, a piped stdin.
// Facts the kernel, tmux or the files told the actor (the pane's pid, whether the gate
// was opened) are plain values: they are what happened, not what the actor is doing.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/jobs/job_actor/job_phase.hpp"
#include "actors/jobs/job_actor/long_poll.hpp"
#include "actors/protocol/interfaces.hpp"
#include "actors/protocol/job_timeline.hpp"
#include "actors/protocol/settings.hpp"
#include "io/fs/job_dir.hpp"
#include "io/sandbox/cgroups.hpp"

namespace shellctl::actors {

struct job_peers {
  job_store_actor store;
  tmux_server_actor tmux;
  fs_watcher_actor watcher;
  job_registry_actor registry;
  cleanup_worker_actor cleanup;
  metrics_registry_actor metrics;  // told of starts, final output sizes and input
  event_log_actor log;             // lifecycle events and warnings, one line each
  cgroup_reaper_actor reaper;      // ends the job's cgroup (docs/jobs.md "Containment")
};

// The run request that created a job, until it is answered.
struct pending_run {
  run_spec spec;
  answer<job_result> reply;
  std::optional<io::store::run_key> key;  // its Idempotency-Key, stored with the row
  std::chrono::steady_clock::time_point admitted_at;  // wall clock: /metrics' start latency
  std::chrono::steady_clock::time_point arrived;      // actor clock: the run's own timeout
  std::uint64_t guard = 0;  // the guard on its answer once its start is stuck (0: none)
};

// A request that arrived while the job was being removed: answered once the removal is
// complete (404 when it succeeded), never while its files still exist.
struct held_request {
  std::function<void()> serve;  // serves it as if it arrived now
  held_answer reply;
};

namespace phases {

struct spawned {};

// A new job from its admission until its "running" row is stored (or its start fails).
struct starting {
  job_phase step = job_phase::admitting;  // admitting .. opening_gate
  pending_run run;
  int attempts = 0;           // sessions begun: a start that died with the tmux server is retried
  bool row_stored = false;    // the insert answered: the job id can be handed out
  // start_deadline found the start stuck (tmux silent, the store failing): its next step
  // fails it instead of going on. A slow start is not stuck.
  bool stuck = false;
};

// A start step failed (or recovery found a start a crash interrupted): the "failed" row is
// being written; late answers of the start only undo what it began.
struct failing_start {
  std::optional<pending_run> run;  // none for a recovered start
};

// Started, or recovered: every event settles the stored status.
struct live {};

// A delete or retention took the job: its tree ends, then its row goes, then its files.
struct removing {
  std::optional<pending_run> run;  // a start a forced delete cut short: answered at the end
  std::vector<held_request> held;
  std::function<void()> retry;  // the row removal again, after a passing store failure
};

// Row and files are gone: only 404s until the registry's `retire`.
struct removed {};

}  // namespace phases

using phase_state = std::variant<phases::spawned, phases::starting, phases::failing_start,
                                 phases::live, phases::removing, phases::removed>;

// The job's one link to the store: a status change at a time, and events that arrive
// meanwhile settle again afterwards, so nothing is decided on stale state. A write that
// failed for a passing reason (disk full, busy) is sent again until it succeeds; meanwhile
// answers show what it will make of the row (`expected`).
struct store_link {
  struct idle {};
  struct writing {
    bool settle_after = false;
  };
  struct retrying {
    bool settle_after = false;
    std::function<void()> again;
    std::optional<job_row> expected;
  };
  std::variant<idle, writing, retrying> at;
};

// Whether answers may say the job is done: only once its output can grow no more (docs/
// jobs.md "The output pipe"). Open until then, with what waits for it and the bound on
// the wait (the finalizer grace); final for good once reached.
namespace output_states {
struct open {
  bool deadline_armed = false;
  bool deadline_passed = false;  // the log is taken as it is
  std::vector<std::function<void()>> then;
};
struct final {};
}  // namespace output_states
struct output_finality {
  using open = output_states::open;
  using final = output_states::final;
  std::variant<open, final> at;
};

// The job's cgroup (docs/jobs.md "Containment"): none made (no containment, not yet, or
// ended), present, or being ended with what waits for that. An end that did not empty it
// in time leaves it present: the next end, or the next startup, tries again.
struct cgroup_life {
  struct absent {};
  struct present {};
  struct ending {
    std::vector<std::function<void()>> then;
  };
  std::variant<absent, present, ending> at;
};

// A terminate under way (docs/jobs.md "Terminate and delete"): answered when the session is
// gone or its grace ran out. Its generation tells its own grace timer from an earlier one's.
struct terminate_run {
  std::uint64_t generation = 0;
  std::vector<std::function<void()>> then;
};

// A stdio job's piped stdin ("stdin": "pipe"): none (/dev/null, or a PTY), open (its writer
// and the eventfd that cancels a write the job will never read), draining (the "eof" write
// is the last: no more input is taken, but that write can still be cancelled), or closed.
struct stdin_pipe {
  struct none {};
  struct open {
    stdin_feeder_actor feeder;
    int cancel = -1;
  };
  struct draining {
    int cancel = -1;
  };
  struct closed {};
  std::variant<none, open, draining, closed> at;
};

// The wait for a PTY job's pipe finalizer once its runner exited (docs/compatibility.md
// "Decisions", D8: never stuck): not needed, armed, or over (the exit is recorded without it).
enum class finalizer_wait : std::uint8_t { none, armed, expired };

struct job_state {
  static inline const char* name = "job_actor";
  using clock = std::chrono::steady_clock;
  using waiter = long_poll_set<answer<job_result>>::waiter;

  // ---- what the job is
  job_settings cfg;
  job_peers peers;
  std::string dir;            // S/jobs/<id>
  io::fs::job_dir files{""};  // its files (io/fs/job_dir.hpp)
  std::string output_abs;     // S/jobs/<id>/output.log
  std::string cgroup_path;    // "" without containment
  io::sandbox::cgroups::job_limits limits;  // the server's, narrowed by the run's own

  // ---- its row, its phase and the machines beside it
  job_row row;  // as stored
  phase_state phase;
  store_link store;
  output_finality output;
  cgroup_life cgroup;
  std::optional<terminate_run> terminating;
  std::uint64_t terminates_begun = 0;
  stdin_pipe stdin;

  // ---- facts
  bool session_alive = false;  // as far as tmux_server has told us
  long pane_pid = 0;
  bool pipe_attached = false;  // PTY: a pipe-pane sanitizer was (or may have been) started
  bool gate_opened = false;    // the runner was let go: the script may have printed
  bool watching = false;       // the job dir's inotify watch is held
  finalizer_wait finalizer = finalizer_wait::none;
  bool settle_retry_armed = false;  // settle() met unreadable artifacts: a retry is due
  // Who began the job's end, when this server did (a client's terminate or delete, or the
  // scope's wall deadline), and what its cgroup counted against its limits by its end: the
  // activity view says why a finished job ended.
  enum class end_cause { none, terminate, deadline };
  end_cause ended_by = end_cause::none;
  io::sandbox::cgroups::limit_events limit_events;

  // ---- answers
  // A terminal row whose output is still growing is shown with the status it had before.
  io::store::job_status shown_live_status = io::store::job_status::created;
  long_poll_set<answer<job_result>> waiters;
  // The furthest offset an answer handed out past the log (a prompt's pending line, shown
  // while the job waited for its terminal): a wait from there is valid until the log
  // catches up.
  std::uint64_t output_shown_end = 0;
  // Live output streams (GET .../stream), each a job_stream actor this one monitors; they
  // hear of the output's size and end from here (what was last told, to tell only news).
  std::vector<job_stream_actor> streams;
  std::uint64_t streams_told_size = 0;
  bool streams_told_done = false;
  // Answers that wait on tmux or the store: each gets a 503 at its deadline unless the
  // step it waits on completed first (sections.hpp: guard_answer).
  struct guarded_answer {
    held_answer reply;
    std::string outcome;  // what becomes of the request, for the 503's message
  };
  std::map<std::uint64_t, guarded_answer> guarded_answers;
  std::uint64_t next_guard_id = 1;
  answer<job_recovered> recovery;  // a recovered job: answered once its first settle is done
  timeline_recorder timeline;      // where its milliseconds go (actors/protocol/job_timeline.hpp)
};

}  // namespace shellctl::actors
