#pragma once
// The phases of one job actor and the moves between them (docs/jobs.md "Lifecycle"). The
// stored status (io/store/job_status.hpp) is what clients see; the phase is what the actor
// is doing about it, and so which events and requests it acts on. Each phase is a struct
// of job_state.hpp holding what only that phase needs; this enum names them (a start's
// steps apart) for the move table, the log and the tests:
//
//   phase             entered when                         acts on
//   spawned           the registry spawned the actor       run_request (a new job) or
//                                                          recover_job (a row at startup)
//   admitting         run_request: files written           store answers (insert, "starting"),
//                                                          the watch; requests wait (no id yet)
//   creating_session  the watch is set; new-session sent   tmux's answer; a dead tmux server
//                                                          (start again, at most 3 times)
//   awaiting_pipe     PTY: the pipe is active              .pipe-ready (dir_changed), its
//                                                          timeout, the pane's end
//   opening_gate      the gate file is written             the "running" write
//   failing_start     a start step failed                  the "failed" write; late answers
//                                                          of the start only clean up
//   live              started, or recovered                settle() on every event: artifacts,
//                                                          markers, the session's end; input,
//                                                          terminate, delete, retention
//   removing          a delete or retention took it        the row removal; requests are held
//   removed           row and files are gone               only 404s, until `retire`
//
// A stuck start (start_deadline: tmux silent, the store failing) goes from any start step
// to failing_start; a slow one goes on. A terminate runs beside the phase (live, or a
// start a forced delete cuts short) as its own small machine (job_state::terminating).
#include <cstdint>
#include <string_view>

namespace shellctl::actors {

enum class job_phase : std::uint8_t {
  spawned,
  admitting,
  creating_session,
  awaiting_pipe,
  opening_gate,
  failing_start,
  live,
  removing,
  removed,
};

constexpr std::string_view phase_name(job_phase p) {
  constexpr std::string_view names[] = {"spawned",       "admitting",     "creating_session",
                                        "awaiting_pipe", "opening_gate",  "failing_start",
                                        "live",          "removing",      "removed"};
  return names[static_cast<std::uint8_t>(p)];
}

// The starting set (docs/jobs.md "Settling the status"): settle() leaves a job in these
// phases alone (its start decides), and a session end is the start's failure, not a lost
// job.
constexpr bool is_starting(job_phase p) {
  return p >= job_phase::admitting && p <= job_phase::failing_start;
}

// The moves the actor makes; any other is a bug (job_actor logs it and makes it anyway, so
// that a client is still answered).
constexpr bool can_move(job_phase from, job_phase to) {
  using P = job_phase;
  if (from == P::removed) return false;                // the end
  if (to == P::removed) return from == P::removing;
  if (to == P::removing) return from != P::removing;   // delete, retention, a failed admission
  // A start step failed; or, at recovery, a start a crash interrupted.
  if (to == P::failing_start) return is_starting(from) || from == P::spawned || from == P::live;
  switch (from) {
    case P::spawned: return to == P::admitting || to == P::live;
    case P::admitting: return to == P::creating_session;
    // A start the tmux server's death cut short begins again (creating_session).
    case P::creating_session:
      return to == P::awaiting_pipe || to == P::opening_gate || to == P::creating_session;
    case P::awaiting_pipe: return to == P::opening_gate || to == P::creating_session;
    case P::opening_gate: return to == P::live;
    case P::failing_start: return to == P::live;
    // The one move back: a row removal that failed leaves the job as it was (its row is
    // terminal, so it is live).
    case P::removing: return to == P::live;
    default: return false;
  }
}

}  // namespace shellctl::actors
