#pragma once
// The long-poll rules (docs/api.md "Long-polls") as a CAF-free class, so that they are unit
// tested without actors, clocks or files: job_actor feeds it the output size and whether
// the job is done, and acts on what it decides. A waiter is answered on
//   (a) completion   — the job is done (and its output final): everything from offset;
//   (b) a full window — more than `limit` bytes past offset are ready;
//   (c) idle flush   — output arrived and then stayed quiet for idle_flush seconds;
//   (d) timeout      — its deadline passed;
//   (e) input wait   — opt-in (`return_on_input_wait`, docs/api.md "Prompts"): the job waits for
//                      its terminal, nothing new is there to show, and the waiter has seen
//                      no output for its idle flush (so a prompt is answered within one);
// and refused when its offset lies beyond the output (invalid_offset).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "actors/protocol/wait_params.hpp"

namespace shellctl::actors {


enum class poll_verdict { keep_waiting, done, full_window, idle_flush, timeout, input_wait, invalid_offset };

template <class Answer>
class long_poll_set {
 public:
  using clock = std::chrono::steady_clock;

  struct waiter {
    std::uint64_t id;
    wait_params p;
    Answer answer;
    clock::time_point deadline;
    std::uint64_t last_size;
    bool saw_output;
    clock::time_point last_growth;
    std::optional<clock::time_point> tick_at;  // the earliest wake-up already scheduled
  };

  // Adds a waiter for output of `size` bytes so far; evaluate() right after decides it.
  // Its timeout counts from `since` (a run's: from its arrival, its start included).
  void add(const wait_params& p, Answer answer, std::uint64_t size, clock::time_point now,
           std::optional<clock::time_point> since = std::nullopt) {
    waiters_.push_back(waiter{next_id_++, p, std::move(answer),
                              since.value_or(now) + std::chrono::duration_cast<clock::duration>(
                                                        std::chrono::duration<double>(p.timeout_s)),
                              size, size > p.offset, now, std::nullopt});
  }

  // Decides every waiter against the output `size` and `job_done` (done first: a done
  // job's log no longer grows, so the size read after it is final). `answer(w, verdict)`
  // is called for each waiter that is decided, which then leaves the set; `wake(id, at)`
  // for each one that needs a timer (a tick for `id` at `at`, then call ticked(id)).
  // `blocked_on_terminal`: the job's foreground reads its terminal now (asked only when
  // wants_terminal_state(): it is read from /proc).
  template <class OnAnswer, class OnWake>
  void evaluate(bool job_done, std::uint64_t size, clock::time_point now, OnAnswer&& answer,
                OnWake&& wake, bool blocked_on_terminal = false) {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      auto& w = *it;
      auto verdict = decide(w, job_done, size, now, blocked_on_terminal);
      if (verdict != poll_verdict::keep_waiting) {
        waiter decided = std::move(w);
        it = waiters_.erase(it);
        answer(decided, verdict);
        continue;
      }
      auto next = w.deadline;
      if (size > w.p.offset && w.saw_output) next = std::min(next, w.last_growth + idle(w));
      // A terminal's state changes without an event: look again every idle flush (each look
      // reads /proc: not more often than every 50 ms, whatever the idle flush).
      if (w.p.return_on_input_wait)
        next = std::min(next, std::max(now, w.last_growth) +
                                  std::max<clock::duration>(idle(w), std::chrono::milliseconds(50)));
      if (!w.tick_at || next < *w.tick_at) {
        w.tick_at = next;
        wake(w.id, next);
      }
      ++it;
    }
  }

  // A scheduled wake-up for `id` happened: a later one may be needed.
  void ticked(std::uint64_t id) {
    for (auto& w : waiters_)
      if (w.id == id) w.tick_at.reset();
  }

  // Takes every waiter out (the job is removed or the server stops).
  std::vector<waiter> take_all() {
    std::vector<waiter> all = std::move(waiters_);
    waiters_.clear();
    return all;
  }

  bool empty() const { return waiters_.empty(); }
  // Whether a waiter asked to return on an input wait (then evaluate needs the terminal).
  bool wants_terminal_state() const {
    return std::any_of(waiters_.begin(), waiters_.end(),
                       [](const waiter& w) { return w.p.return_on_input_wait; });
  }
  std::size_t size() const { return waiters_.size(); }

 private:
  static clock::duration idle(const waiter& w) {
    return std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(w.p.idle_flush_s));
  }

  static poll_verdict decide(waiter& w, bool job_done, std::uint64_t size, clock::time_point now,
                             bool blocked_on_terminal) {
    if (w.p.offset > size) return poll_verdict::invalid_offset;
    if (size > w.last_size) {
      w.last_size = size;
      if (size > w.p.offset) {
        w.saw_output = true;
        w.last_growth = now;
      }
    }
    if (job_done) return poll_verdict::done;
    if (size > w.p.offset && size - w.p.offset > w.p.limit) return poll_verdict::full_window;
    if (size > w.p.offset && w.saw_output && now - w.last_growth >= idle(w))
      return poll_verdict::idle_flush;
    if (now >= w.deadline) return poll_verdict::timeout;
    if (w.p.return_on_input_wait && blocked_on_terminal && size <= w.p.offset &&
        now - w.last_growth >= idle(w))
      return poll_verdict::input_wait;
    return poll_verdict::keep_waiting;
  }

  std::vector<waiter> waiters_;
  std::uint64_t next_id_ = 1;
};

}  // namespace shellctl::actors
