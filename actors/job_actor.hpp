#pragma once
// job_actor: one per job. Owns the job's status state machine
// (created → starting → running → exited|terminated|failed|lost) and answers every
// request about the job. It learns of progress from events, never by polling (D12):
// fs_watcher reports files in the job dir (output growth, exit artifacts, pipe markers),
// tmux_server reports the session's end. Long-polls wait as `waiter`s and are answered
// on completion, idle flush, a full window or their deadline, whichever comes first.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "actors/messages.hpp"
#include "actors/settings.hpp"

namespace shellctl::actors {

struct job_peers {
  caf::actor store;
  caf::actor tmux;
  caf::actor watcher;
  caf::actor registry;
};

struct job_state {
  static inline const char* name = "job_actor";
  using clock = std::chrono::steady_clock;

  struct waiter {
    std::uint64_t id;
    wait_params p;
    responder resp;
    clock::time_point deadline;
    std::uint64_t last_size;
    bool saw_output;
    clock::time_point last_growth;
    std::optional<clock::time_point> tick_at;  // the earliest tick already scheduled
  };

  job_settings cfg;
  job_peers peers;
  job_row row;
  std::string dir;         // S/jobs/<id>
  std::string output_abs;  // S/jobs/<id>/output.log
  std::optional<run_call> run;  // the run request that created this job (until answered)

  bool starting = false;       // the "starting set" of runtime.md §7
  bool session_alive = false;  // as far as tmux_server has told us
  long pane_pid = 0;
  bool awaiting_pipe_ready = false;
  bool busy = false;   // a store transition is in flight
  bool dirty = false;  // something happened meanwhile: settle again afterwards
  bool removing = false;
  bool removed = false;  // row and files are gone; only answering 404 until `retire`
  bool watching = false;
  bool finalizer_timer_armed = false;
  bool finalizer_expired = false;
  int start_attempts = 0;  // starts begun; a start that died with the tmux server is retried

  std::vector<waiter> waiters;
  // Requests that arrived while the job was being removed: answered once the removal is
  // complete (404 when it succeeded), never while its files still exist.
  std::vector<job_call> during_removal;
  std::uint64_t next_waiter_id = 1;

  // terminate in progress: answered when the session is gone or the grace ran out (D9)
  bool terminating = false;
  std::uint64_t terminate_generation = 0;
  std::vector<std::function<void()>> after_terminate;
};

// `run` is set for a new job (the registry created its directory); unset for a job
// recovered from the database, which then gets `recover_job`.
caf::behavior job_actor(caf::stateful_actor<job_state>* self, job_settings cfg, job_peers peers,
                        job_row row, std::optional<run_call> run);

}  // namespace shellctl::actors
