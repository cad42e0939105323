#include "actors/jobs/job_actor/settle_rules.hpp"

namespace shellctl::actors {

settle_action decide_settle(const job_facts& j, const std::optional<disk_facts>& disk) {
  using io::store::is_before_running;
  // 1. Terminal rows stay; only a missing ended_at is filled in.
  if (io::store::is_terminal(j.status))
    return j.has_ended_at ? settle_action::nothing : settle_action::fill_ended_at;
  // 2. An exit code is already recorded.
  if (j.has_exit_code) return settle_action::exited_from_code;
  const disk_facts& d = *disk;
  const auto& a = d.record;
  // Out of descriptors, say: a failed read is no evidence that the job is gone.
  if (a.unreadable) return settle_action::read_again;
  // 2b. Its output budget is spent (S16, docs/native-scopes.md): failed, whatever its exit was,
  // since its end is the kill that followed.
  if (d.overflow_marker) return settle_action::output_overflow;
  // 3. Complete exit artifacts (PTY: and the output pipe drained).
  const bool drained = !j.pty || d.drained_marker;
  if (a.complete() && drained) return settle_action::record_exit;
  if (j.session_alive) {
    // 4a. The sanitizer failed while the job runs: its output is lost.
    if (j.pty && !j.starting && d.failed_marker) return settle_action::pipe_failed;
    // 4b. A start that was interrupted but whose session lives (recovery).
    if (is_before_running(j.status) && !j.starting) return settle_action::running;
    return settle_action::nothing;
  }
  // 5a. The runner exited and the pipe finalizer is still draining output.
  const bool markers = d.drained_marker || d.failed_marker;
  if (j.pty && a.code_file && a.ended_file && !markers) {
    if (!j.finalizer_expired) return settle_action::await_finalizer;
    // Decision D8: the finalizer vanished without a marker; the exit still happened.
    if (a.complete()) return settle_action::record_exit;
  }
  // 5b. The session is gone without a usable exit record; but a start in progress
  // decides for itself (its own failure path).
  if (j.starting && is_before_running(j.status)) return settle_action::nothing;
  return settle_action::lost;
}

}  // namespace shellctl::actors
