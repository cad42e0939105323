// The rules of settle() (docs/jobs.md "Settling the status") as a table: facts in, the one
// decision out.
#include <doctest/doctest.h>

#include "actors/jobs/job_actor/settle_rules.hpp"

using namespace shellctl::actors;
using shellctl::io::store::job_status;

namespace {

job_facts live_pty(job_status s = job_status::running) {
  job_facts j;
  j.status = s;
  j.pty = true;
  return j;
}

disk_facts artifacts(bool code, bool ended, bool drained = false, bool failed = false) {
  disk_facts d;
  d.drained_marker = drained;
  d.failed_marker = failed;
  d.record.code_file = code;
  d.record.ended_file = ended;
  if (code) d.record.code = 0;
  if (ended) d.record.ended_at = "2026-08-04T10:00:05Z";
  return d;
}

}  // namespace

TEST_CASE("rules 1 and 2 decide from the row alone") {
  job_facts done = live_pty(job_status::terminated);
  CHECK_FALSE(needs_disk(done));
  CHECK(decide_settle(done, std::nullopt) == settle_action::fill_ended_at);
  done.has_ended_at = true;
  CHECK(decide_settle(done, std::nullopt) == settle_action::nothing);
  job_facts coded = live_pty();
  coded.has_exit_code = true;
  CHECK_FALSE(needs_disk(coded));
  CHECK(decide_settle(coded, std::nullopt) == settle_action::exited_from_code);
  CHECK(needs_disk(live_pty()));
}

TEST_CASE("rule 3: complete artifacts end the job; a PTY job's only once the pipe drained") {
  auto j = live_pty();
  j.session_alive = true;
  CHECK(decide_settle(j, artifacts(true, true, true)) == settle_action::record_exit);
  CHECK(decide_settle(j, artifacts(true, true, false)) == settle_action::nothing);
  j.pty = false;  // stdio: no pipe to drain
  CHECK(decide_settle(j, artifacts(true, true, false)) == settle_action::record_exit);
  // A code that is not a number is no exit record.
  auto garbled = artifacts(true, true, true);
  garbled.record.code.reset();
  j.pty = true;
  CHECK(decide_settle(j, garbled) == settle_action::nothing);
}

TEST_CASE("unreadable artifacts are no evidence: read again, never lost") {
  auto j = live_pty();
  auto d = artifacts(false, false);
  d.record.unreadable = true;
  CHECK(decide_settle(j, d) == settle_action::read_again);
}

TEST_CASE("rule 4: while the session lives") {
  auto j = live_pty();
  j.session_alive = true;
  CHECK(decide_settle(j, artifacts(false, false)) == settle_action::nothing);
  CHECK(decide_settle(j, artifacts(false, false, false, true)) == settle_action::pipe_failed);
  j.starting = true;  // a start in progress decides for itself
  CHECK(decide_settle(j, artifacts(false, false, false, true)) == settle_action::nothing);
  // 4b: recovery found a session for a row still created/starting.
  auto r = live_pty(job_status::starting);
  r.session_alive = true;
  CHECK(decide_settle(r, artifacts(false, false)) == settle_action::running);
  r.starting = true;
  CHECK(decide_settle(r, artifacts(false, false)) == settle_action::nothing);
}

TEST_CASE("rule 5: the session is gone") {
  auto j = live_pty();
  // 5a: the runner wrote its artifacts, the finalizer has not marked the pipe yet.
  CHECK(decide_settle(j, artifacts(true, true)) == settle_action::await_finalizer);
  j.finalizer_expired = true;  // D8: it never will; the exit still happened
  CHECK(decide_settle(j, artifacts(true, true)) == settle_action::record_exit);
  // The pipe failed after the runner's end: its output is incomplete, but the exit was
  // recorded before; without a drained marker rule 3 does not apply and nothing says
  // "finalized successfully": lost.
  CHECK(decide_settle(live_pty(), artifacts(true, true, false, true)) == settle_action::lost);
  // 5b: no exit record at all.
  CHECK(decide_settle(live_pty(), artifacts(false, false)) == settle_action::lost);
  CHECK(decide_settle(live_pty(), artifacts(true, false)) == settle_action::lost);
  auto stdio = live_pty();
  stdio.pty = false;
  CHECK(decide_settle(stdio, artifacts(true, false)) == settle_action::lost);
  // A start in progress whose pane died is the start's failure, not a lost job.
  auto s = live_pty(job_status::starting);
  s.starting = true;
  CHECK(decide_settle(s, artifacts(false, false)) == settle_action::nothing);
  // But a running row is lost even while a (recovery) start phase runs.
  auto r = live_pty(job_status::running);
  r.starting = true;
  CHECK(decide_settle(r, artifacts(false, false)) == settle_action::lost);
}

TEST_CASE("rule 2b: a native scope's job that spent its output budget is failed, whatever else") {
  for (bool alive : {true, false})
    for (bool pty : {true, false}) {
      job_facts j = live_pty();
      j.session_alive = alive;
      j.pty = pty;
      disk_facts d = artifacts(true, true, true);  // even with complete artifacts
      d.overflow_marker = true;
      CHECK(decide_settle(j, d) == settle_action::output_overflow);
      d = artifacts(false, false);
      d.overflow_marker = true;
      CHECK(decide_settle(j, d) == settle_action::output_overflow);
    }
  // A terminal row stays what it is.
  job_facts done = live_pty(job_status::exited);
  done.has_ended_at = true;
  CHECK(decide_settle(done, std::nullopt) == settle_action::nothing);
}
