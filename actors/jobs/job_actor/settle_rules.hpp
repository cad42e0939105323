#pragma once
// settle(): what a job's status becomes from what is known of it (docs/jobs.md "Settling
// the status", with the liveness facts coming from events instead of tmux probes). A pure function of the facts,
// so that every rule has a unit test (tests/unit/actors/jobs/job_actor/settle_rules_test.cpp); job_actor
// gathers the facts and carries the decision out.
#include <optional>

#include "io/fs/job_dir.hpp"
#include "io/store/job_status.hpp"

namespace shellctl::actors {

// What the row and the actor know.
struct job_facts {
  io::store::job_status status = io::store::job_status::created;
  bool has_exit_code = false;
  bool has_ended_at = false;
  bool pty = true;
  bool starting = false;           // in a start phase: the start decides, not settle
  bool session_alive = false;      // as far as tmux_server has told
  bool finalizer_expired = false;  // the pipe finalizer's grace is over
};

// What the job directory holds, looked at once per decision: a marker that appears between
// two looks would otherwise make the rules disagree (seen as "not drained" by rule 3 and
// "finalized" by 5a: lost). The markers are read first: the runner writes its artifacts
// before its pane closes and the finalizer its marker after, so a marker seen means the
// artifacts are visible too.
struct disk_facts {
  bool drained_marker = false;
  bool failed_marker = false;
  bool overflow_marker = false;  // a native scope's job spent its output budget
  io::fs::exit_record record;
};

// Rules 1 and 2 decide from the row alone: the directory need not be read.
constexpr bool needs_disk(const job_facts& j) {
  return !io::store::is_terminal(j.status) && !j.has_exit_code;
}

enum class settle_action {
  nothing,
  fill_ended_at,     // 1. a terminal row without ended_at gets one
  exited_from_code,  // 2. an exit code is recorded: exited
  record_exit,       // 3. complete artifacts (PTY: drained), or 5a after the finalizer's grace
  read_again,        // the artifacts could not be read (no evidence either way): try soon
  output_overflow,   // 2b. a native scope's job spent its output budget: failed, tree killed
  pipe_failed,       // 4a. the sanitizer failed while the job runs: failed
  running,           // 4b. a start a crash interrupted, whose session lives: running
  await_finalizer,   // 5a. the runner exited, the pipe is still draining: wait its grace
  lost,              // 5b. the session is gone without a usable exit record
};

// `disk` must be given when needs_disk(job).
settle_action decide_settle(const job_facts& job, const std::optional<disk_facts>& disk);

}  // namespace shellctl::actors
