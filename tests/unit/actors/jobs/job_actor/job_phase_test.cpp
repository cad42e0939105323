// The phase table of job_actor (actors/jobs/job_actor/job_phase.hpp): the starting set, the one way out of
// a removal, and a start's steps in order.
#include <doctest/doctest.h>

#include "actors/jobs/job_actor/job_phase.hpp"

using shellctl::actors::can_move;
using shellctl::actors::is_starting;
using shellctl::actors::job_phase;
using shellctl::actors::phase_name;

TEST_CASE("a start's phases in order, for PTY and stdio, and the starting set") {
  const job_phase pty[] = {job_phase::spawned,       job_phase::admitting,
                           job_phase::creating_session, job_phase::awaiting_pipe,
                           job_phase::opening_gate,  job_phase::live};
  for (std::size_t i = 0; i + 1 < std::size(pty); ++i) {
    CAPTURE(phase_name(pty[i]));
    CHECK(can_move(pty[i], pty[i + 1]));
  }
  CHECK(can_move(job_phase::creating_session, job_phase::opening_gate));  // stdio: no pipe
  CHECK(can_move(job_phase::spawned, job_phase::live));                  // recovered
  for (auto p : {job_phase::admitting, job_phase::creating_session, job_phase::awaiting_pipe,
                 job_phase::opening_gate, job_phase::failing_start})
    CHECK(is_starting(p));
  for (auto p : {job_phase::spawned, job_phase::live, job_phase::removing, job_phase::removed})
    CHECK_FALSE(is_starting(p));
}

TEST_CASE("failures, removals and the moves that are not made") {
  // Any start step may fail, and so may a start recovery finds interrupted.
  for (auto p : {job_phase::admitting, job_phase::creating_session, job_phase::awaiting_pipe,
                 job_phase::opening_gate, job_phase::spawned, job_phase::live})
    CHECK(can_move(p, job_phase::failing_start));
  CHECK(can_move(job_phase::failing_start, job_phase::live));
  // A removal can begin anywhere but in a removal, and ends only in removed.
  for (auto p : {job_phase::admitting, job_phase::awaiting_pipe, job_phase::live})
    CHECK(can_move(p, job_phase::removing));
  CHECK_FALSE(can_move(job_phase::removing, job_phase::removing));
  CHECK(can_move(job_phase::removing, job_phase::removed));
  for (auto p : {job_phase::awaiting_pipe, job_phase::opening_gate, job_phase::failing_start})
    CHECK_FALSE(can_move(job_phase::removing, p));
  // The one move back: a row removal that failed leaves the (terminal) job live.
  CHECK(can_move(job_phase::removing, job_phase::live));
  CHECK_FALSE(can_move(job_phase::removed, job_phase::live));
  CHECK_FALSE(can_move(job_phase::live, job_phase::removed));  // only through removing
  // No way back into a start once live, and no skipping the handshake's steps.
  CHECK_FALSE(can_move(job_phase::live, job_phase::creating_session));
  CHECK_FALSE(can_move(job_phase::admitting, job_phase::live));
  CHECK_FALSE(can_move(job_phase::awaiting_pipe, job_phase::live));
  CHECK(phase_name(job_phase::awaiting_pipe) == "awaiting_pipe");
}
