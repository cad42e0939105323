// The long-poll rules (docs/api.md "Long-polls") on an artificial clock: completion, full window,
// idle flush, timeout, invalid offset, and the wake-ups the job actor schedules.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "actors/jobs/job_actor/long_poll.hpp"

using namespace shellctl::actors;
using namespace std::chrono_literals;
using set_type = long_poll_set<std::string>;
using clock_type = set_type::clock;

namespace {

struct run {
  std::map<std::string, poll_verdict> answered;
  std::map<std::uint64_t, clock_type::time_point> wakes;

  void evaluate(set_type& s, bool done, std::uint64_t size, clock_type::time_point now,
                bool blocked_on_terminal = false) {
    wakes.clear();
    s.evaluate(
        done, size, now, [&](const set_type::waiter& w, poll_verdict v) { answered[w.answer] = v; },
        [&](std::uint64_t id, clock_type::time_point at) { wakes[id] = at; }, blocked_on_terminal);
  }
};

wait_params params(std::uint64_t offset, double timeout, std::uint64_t limit = 100,
                   double idle = 0.5) {
  return wait_params{offset, timeout, limit, idle};
}

const clock_type::time_point t0{std::chrono::seconds(1000)};

}  // namespace

TEST_CASE("completion answers every waiter at once, whatever its window") {
  set_type s;
  run r;
  s.add(params(0, 30), "a", 0, t0);
  s.add(params(5, 30), "b", 10, t0);
  r.evaluate(s, false, 10, t0);
  CHECK(r.answered.empty());
  r.evaluate(s, true, 10, t0 + 1ms);
  CHECK(r.answered.at("a") == poll_verdict::done);
  CHECK(r.answered.at("b") == poll_verdict::done);
  CHECK(s.empty());
}

TEST_CASE("timeout: a quiet job is answered at the deadline, with a wake-up scheduled for it") {
  set_type s;
  run r;
  s.add(params(0, 2), "w", 0, t0);
  r.evaluate(s, false, 0, t0);
  REQUIRE(r.wakes.size() == 1);
  const auto id = r.wakes.begin()->first;
  CHECK(r.wakes.begin()->second == t0 + 2s);
  r.evaluate(s, false, 0, t0 + 1s);
  CHECK(r.answered.empty());
  CHECK(r.wakes.empty());  // the wake-up already scheduled still stands
  s.ticked(id);
  r.evaluate(s, false, 0, t0 + 2s);
  CHECK(r.answered.at("w") == poll_verdict::timeout);
}

TEST_CASE("a run's timeout counts from its arrival: a slow start takes its share") {
  set_type s;
  run r;
  // Arrived at t0 with 5 s; its start took 3 s: 2 s are left, and the idle flush counts
  // from now (no output has been seen yet, so none is due).
  s.add(params(0, 5), "run", 0, t0 + 3s, t0);
  r.evaluate(s, false, 0, t0 + 3s);
  REQUIRE(r.wakes.size() == 1);
  CHECK(r.wakes.begin()->second == t0 + 5s);
  s.ticked(r.wakes.begin()->first);
  r.evaluate(s, false, 0, t0 + 5s);
  CHECK(r.answered.at("run") == poll_verdict::timeout);
  // A start that outlasted the whole timeout: answered at once, with what there is.
  s.add(params(0, 5), "late", 0, t0 + 6s, t0);
  r.evaluate(s, false, 0, t0 + 6s);
  CHECK(r.answered.at("late") == poll_verdict::timeout);
}

TEST_CASE("a zero timeout checks once") {
  set_type s;
  run r;
  s.add(params(0, 0), "once", 3, t0);
  r.evaluate(s, false, 3, t0);
  CHECK(r.answered.at("once") == poll_verdict::timeout);
}

TEST_CASE("idle flush: output that stops growing is answered after idle_flush seconds") {
  set_type s;
  run r;
  s.add(params(0, 30, 100, 0.5), "w", 0, t0);
  r.evaluate(s, false, 0, t0);
  r.evaluate(s, false, 10, t0 + 100ms);  // output arrives
  CHECK(r.answered.empty());
  REQUIRE(r.wakes.size() == 1);
  CHECK(r.wakes.begin()->second == t0 + 600ms);  // its idle flush, earlier than the deadline
  s.ticked(r.wakes.begin()->first);
  r.evaluate(s, false, 20, t0 + 400ms);  // still growing: the flush moves on
  CHECK(r.answered.empty());
  REQUIRE(r.wakes.size() == 1);
  CHECK(r.wakes.begin()->second == t0 + 900ms);
  r.evaluate(s, false, 20, t0 + 900ms);
  CHECK(r.answered.at("w") == poll_verdict::idle_flush);
}

TEST_CASE("output up to the offset is not output for this waiter: no idle flush for it") {
  set_type s;
  run r;
  s.add(params(10, 30, 100, 0.1), "w", 10, t0);
  r.evaluate(s, false, 10, t0 + 1s);
  CHECK(r.answered.empty());
  r.evaluate(s, false, 15, t0 + 2s);
  CHECK(r.answered.empty());
  r.evaluate(s, false, 15, t0 + 2s + 100ms);
  CHECK(r.answered.at("w") == poll_verdict::idle_flush);
}

TEST_CASE("a full window is answered at once") {
  set_type s;
  run r;
  s.add(params(0, 30, 100), "w", 0, t0);
  r.evaluate(s, false, 100, t0);  // exactly the limit: not more than it
  CHECK(r.answered.empty());
  r.evaluate(s, false, 101, t0 + 1ms);
  CHECK(r.answered.at("w") == poll_verdict::full_window);
}

TEST_CASE("an offset beyond the output is refused, also when the job is done") {
  set_type s;
  run r;
  s.add(params(11, 30), "far", 10, t0);
  s.add(params(10, 30), "edge", 10, t0);
  r.evaluate(s, true, 10, t0);
  CHECK(r.answered.at("far") == poll_verdict::invalid_offset);
  CHECK(r.answered.at("edge") == poll_verdict::done);
}

TEST_CASE("take_all empties the set, ids stay unique") {
  set_type s;
  run r;
  s.add(params(0, 30), "a", 0, t0);
  s.add(params(0, 30), "b", 0, t0);
  r.evaluate(s, false, 0, t0);
  REQUIRE(r.wakes.size() == 2);
  auto all = s.take_all();
  CHECK(all.size() == 2);
  CHECK(all[0].id != all[1].id);
  CHECK(s.empty());
}

// ---------------------------------------------------------------- return_on_input_wait (prompts)

namespace {
wait_params on_input_wait(std::uint64_t offset, double timeout, double idle = 0.5) {
  auto p = params(offset, timeout, 100, idle);
  p.return_on_input_wait = true;
  return p;
}
void evaluate_blocked(run& r, set_type& s, std::uint64_t size, clock_type::time_point now, bool blocked) {
  r.evaluate(s, false, size, now, blocked);
}
}  // namespace

TEST_CASE("input wait: answered once the job reads its terminal, after one quiet idle flush") {
  set_type s;
  run r;
  s.add(on_input_wait(10, 30), "w", 10, t0);
  CHECK(s.wants_terminal_state());
  evaluate_blocked(r, s, 10, t0, true);  // blocked, but not yet quiet for an idle flush
  CHECK(r.answered.empty());
  REQUIRE(r.wakes.size() == 1);
  CHECK(r.wakes.begin()->second == t0 + 500ms);  // looked at again one idle flush later
  s.ticked(r.wakes.begin()->first);
  evaluate_blocked(r, s, 10, t0 + 500ms, true);
  CHECK(r.answered.at("w") == poll_verdict::input_wait);
  CHECK_FALSE(s.wants_terminal_state());
}

TEST_CASE("input wait: not while the job computes, nor while new output waits to be shown") {
  set_type s;
  run r;
  s.add(on_input_wait(10, 30), "computing", 10, t0);
  s.add(on_input_wait(4, 30), "unseen output", 10, t0);
  evaluate_blocked(r, s, 10, t0 + 200ms, false);
  CHECK(r.answered.empty());
  evaluate_blocked(r, s, 10, t0 + 400ms, false);
  CHECK(r.answered.empty());
  // Blocked now: the one with output past its offset gets it by the idle flush, as ever.
  evaluate_blocked(r, s, 10, t0 + 2s, true);
  CHECK(r.answered.at("computing") == poll_verdict::input_wait);
  CHECK(r.answered.at("unseen output") == poll_verdict::idle_flush);
}

TEST_CASE("input wait: a wait without the field is answered as it always was") {
  set_type s;
  run r;
  s.add(on_input_wait(10, 30), "flagged", 10, t0);
  s.add(params(10, 30), "plain", 10, t0);
  CHECK(s.wants_terminal_state());
  evaluate_blocked(r, s, 10, t0 + 1s, true);
  CHECK(r.answered.count("flagged") == 1);
  CHECK(r.answered.count("plain") == 0);  // an old-shaped wait waits for output or its timeout
  evaluate_blocked(r, s, 10, t0 + 29s, true);
  CHECK(r.answered.count("plain") == 0);
  evaluate_blocked(r, s, 10, t0 + 30s, true);
  CHECK(r.answered.at("plain") == poll_verdict::timeout);
}
