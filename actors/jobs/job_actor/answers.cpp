// What the job actor's answers show: the output's finality ("once an answer says done, its
// offset is final"), long-poll windows, the live streams, and the guards that answer 503
// when tmux or the store keeps a client waiting (docs/api.md "Long-polls", "Statuses").
#include <algorithm>

#include "actors/jobs/job_actor/sections.hpp"
#include "io/fs/files.hpp"
#include "io/proc/terminal_wait.hpp"
#include "io/text/output_window.hpp"

namespace shellctl::actors::job {

namespace files = io::fs::job_files;

// ---------------------------------------------------------------- guards

// An answer waiting on tmux or the store: answered 503 at `after` unless unguard() ran
// first (the work itself goes on; the client learns why it waits).
std::uint64_t guard_answer(self_ptr self, const held_answer& reply, std::chrono::milliseconds after,
                           std::string outcome) {
  auto& st = self->state;
  auto id = st.next_guard_id++;
  st.guarded_answers.emplace(id, job_state::guarded_answer{reply, std::move(outcome)});
  self->delayed_send(self, after, answer_deadline{id});
  return id;
}

void unguard(self_ptr self, std::uint64_t id) { self->state.guarded_answers.erase(id); }

void answer_guard_expired(self_ptr self, std::uint64_t id) {
  auto& st = self->state;
  auto it = st.guarded_answers.find(id);
  if (it == st.guarded_answers.end()) return;
  const auto& g = it->second;
  if (store_failing(self))
    g.reply.fail(job_errc::storage_unavailable,
                 "the state database cannot be written at the moment (is its disk full?); " +
                     g.outcome);
  else
    g.reply.fail(job_errc::tmux_unavailable, "tmux did not answer in time; " + g.outcome);
  st.guarded_answers.erase(it);
}

std::chrono::milliseconds seconds_ms(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, s) * 1000));
}

// ---------------------------------------------------------------- the output's finality

namespace {

// The facts: the output can grow no more. stdio, once the runner (which writes output.log
// itself) is gone; PTY, once the pipe's finalizer marked the sanitizer's end, or no pipe
// was ever attached; a job whose gate never opened never printed. Bounded: after the
// finalizer grace the log is taken as it is.
bool output_complete(self_ptr self, const output_finality::open& open) {
  auto& st = self->state;
  if (!known_done(self)) return false;  // a job still running writes on
  if (open.deadline_passed || !st.gate_opened) return true;
  if (is_pty(self)) return !st.pipe_attached || has(self, files::pipe_drained) || has(self, files::pipe_failed);
  return !st.session_alive;
}

}  // namespace

bool output_final(self_ptr self) {
  return std::holds_alternative<output_finality::final>(self->state.output.at);
}

void refresh_output(self_ptr self) {
  auto& st = self->state;
  auto* open = std::get_if<output_finality::open>(&st.output.at);
  if (!open || !known_done(self)) return;
  if (!output_complete(self, *open)) {
    if (!open->deadline_armed) {
      open->deadline_armed = true;
      self->delayed_send(self, st.cfg.finalizer_grace, output_final_deadline{});
    }
    return;
  }
  auto waiting = std::move(open->then);
  st.output.at = output_finality::final{};
  if (st.gate_opened) {
    st.timeline.mark(job_mark::output_final);
    // Once per job and process: the size of what it printed, for /metrics.
    self->send(st.peers.metrics, job_output_final{io::text::file_size_or_zero(st.output_abs)});
  }
  release_watch_if_settled(self);
  for (auto& c : waiting) c();
}

// Runs `then` once answers may say done (now, or when the output becomes final).
void when_output_final(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  refresh_output(self);
  if (auto* open = std::get_if<output_finality::open>(&st.output.at)) {
    open->then.push_back(std::move(then));
    return;
  }
  then();
}

// A terminal job whose output is final changes no more: its inotify watch goes. Until
// then the watch stays: the pipe finalizer's marker is the event that makes it final.
void release_watch_if_settled(self_ptr self) {
  auto& st = self->state;
  if (!st.watching || !done(self) || !output_final(self)) return;
  self->send(st.peers.watcher, unwatch_dir{st.dir});
  st.watching = false;
}

// done() as answers may state it.
bool shown_done(self_ptr self) { return known_done(self) && output_final(self); }

// The row as answers may state it: a terminal row whose output is still growing is shown
// with the status it had before, and nothing of its end yet.
job_row shown_row(self_ptr self) {
  auto& st = self->state;
  if (!known_done(self) || output_final(self)) return known_row(self);
  job_row r = known_row(self);
  r.status = st.shown_live_status;
  r.exit_code.reset();
  r.ended_at.reset();
  r.reason.reset();
  r.message.reset();
  return r;
}

void reply_status(self_ptr self, const answer<job_status_view>& reply) {
  reply.ok(job_status_view{shown_row(self), io::text::file_size_or_zero(self->state.output_abs)});
}

job_result result_window(self_ptr self, io::text::output_window win) {
  return job_result{shown_row(self), self->state.output_abs, std::move(win)};
}

std::string offset_text(std::uint64_t offset, std::uint64_t size) {
  return "offset " + std::to_string(offset) + " exceeds current file size " + std::to_string(size);
}

// ---------------------------------------------------------------- long-polls

namespace {

// A PTY job's unfinished last line while the job waits for its terminal (a prompt: `read
// -p`, input("Name: "), a password prompt), as the sanitizer keeps it past the log; "" at
// any other time. Read only when there is one (a small file), then the terminal's state.
std::string prompt_pending(self_ptr self, bool job_done) {
  auto& st = self->state;
  if (job_done || !is_pty(self) || st.pane_pid <= 0 || st.row.status != job_status::running) return "";
  std::string line;
  if (io::fs::read_small_file_checked(dir(self).file(files::pending_line), line, 65536) !=
          io::fs::read_result::ok ||
      line.empty() || line.size() > 65536)
    return "";
  const auto runner = static_cast<pid_t>(st.pane_pid);
  return io::proc::read_terminal_facts(runner, job_pids(self)).blocked_on_terminal ? line : "";
}

}  // namespace

// The window at the waiter's offset; past the log's end, the pending prompt (its bytes are
// counted by the offset as the log will hold them, and never split a UTF-8 character).
void answer_window(self_ptr self, const job_state::waiter& w, bool job_done, const std::string& pending) {
  auto& st = self->state;
  try {
    const auto size = io::text::file_size_or_zero(st.output_abs);
    io::text::output_window win{"", w.p.offset, false};
    // An offset an earlier answer handed out past the log: nothing more until it grows.
    if (w.p.offset <= size || w.p.offset > std::max(st.output_shown_end, size + pending.size()))
      win = io::text::read_output_window(st.output_abs, w.p.offset, w.p.limit, job_done);
    if (!pending.empty() && !win.truncated && win.offset >= size && win.offset < size + pending.size()) {
      std::string_view rest(pending);
      rest.remove_prefix(win.offset - size);
      const std::uint64_t used = win.offset - w.p.offset;
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(rest.size(), w.p.limit - std::min(used, w.p.limit)));
      while (take > 0 && take < rest.size() && (static_cast<unsigned char>(rest[take]) & 0xC0) == 0x80) --take;
      win.text.append(rest.substr(0, take));
      win.offset += take;
      win.truncated = take < rest.size();
      st.output_shown_end = std::max(st.output_shown_end, win.offset);
    }
    auto result = result_window(self, std::move(win));
    const bool says_done = io::store::is_terminal(result.row.status);
    w.answer.ok(std::move(result));
    if (says_done) {
      st.timeline.mark(job_mark::done_answered);
      if (auto marks = st.timeline.take()) self->send(st.peers.metrics, job_timeline_event{st.row.mode, *marks});
    }
  } catch (const io::text::offset_beyond_end& e) {
    w.answer.fail(job_errc::invalid_offset, offset_text(e.offset, e.size));
  } catch (const std::exception& e) {
    w.answer.fail(job_errc::internal_error, e.what());
  }
}

// What the output is now, for the streams: done first, then the size (a done job's log
// does not grow, so that size is final).
output_progress progress_now(self_ptr self) {
  auto& st = self->state;
  output_progress p;
  p.done = shown_done(self);
  p.size = io::text::file_size_or_zero(st.output_abs);
  if (p.done) {
    const auto row = shown_row(self);
    p.status = std::string(io::store::status_text(row.status));
    if (row.status == job_status::exited) p.exit_code = row.exit_code;  // D3
  }
  return p;
}

// Tells every stream of news (the log grew, or the output became final); `final_word`
// ends them whatever the status shows (the job is being deleted).
void notify_streams(self_ptr self, bool final_word) {
  auto& st = self->state;
  if (st.streams.empty()) return;
  auto p = progress_now(self);
  if (final_word && !p.done) {
    p.done = true;
    p.status = std::string(io::store::status_text(known_row(self).status));
  }
  if (p.size == st.streams_told_size && p.done == st.streams_told_done) return;
  st.streams_told_size = p.size;
  st.streams_told_done = p.done;
  for (auto& s : st.streams) self->send(s, p);
}

// The long-poll rules (actors/jobs/job_actor/long_poll.hpp), driven by events and timers,
// not a sleep loop; the streams hear of the same events here.
void evaluate_waiters(self_ptr self) {
  auto& st = self->state;
  notify_streams(self);
  // Also while a store write is in flight or retried: a waiter is owed its answer at its
  // deadline, and what it shows is what is known (known_row).
  if (st.waiters.empty()) return;
  // Done first, then the size: a done job's log does not grow, so that size is final.
  const bool job_done = shown_done(self);
  const auto size = io::text::file_size_or_zero(st.output_abs);
  const auto now = self->clock().now();  // the actor clock: tests drive it deterministically
  // A prompt waiting for its answer shows past the log (its bytes count as output), and
  // offsets handed out into it stay valid until the log catches up.
  const std::string pending = prompt_pending(self, job_done);
  const std::uint64_t shown = std::max(size + pending.size(), job_done ? 0 : st.output_shown_end);
  // return_on_input_wait (docs/api.md "Prompts"): the terminal's state, read only when a
  // waiter asked.
  bool blocked_on_terminal = !pending.empty();
  if (!blocked_on_terminal && !job_done && is_pty(self) && st.pane_pid > 0 &&
      st.row.status == job_status::running && st.waiters.wants_terminal_state()) {
    const auto runner = static_cast<pid_t>(st.pane_pid);
    blocked_on_terminal = io::proc::read_terminal_facts(runner, job_pids(self)).blocked_on_terminal;
  }
  st.waiters.evaluate(
      job_done, std::max(shown, size), now,
      [&](const job_state::waiter& w, poll_verdict v) {
        if (v == poll_verdict::invalid_offset && w.p.offset > st.output_shown_end)
          w.answer.fail(job_errc::invalid_offset, offset_text(w.p.offset, size));
        else
          answer_window(self, w, job_done, pending);
      },
      [&](std::uint64_t id, clock_type::time_point at) {
        auto delay = std::chrono::duration_cast<std::chrono::microseconds>(at - now) +
                     std::chrono::microseconds(200);
        self->delayed_send(self, delay, waiter_tick{id});
      },
      blocked_on_terminal);
}

void add_waiter(self_ptr self, const wait_params& p, answer<job_result> reply,
                std::optional<clock_type::time_point> since) {
  auto& st = self->state;
  st.waiters.add(p, std::move(reply), io::text::file_size_or_zero(st.output_abs), self->clock().now(), since);
  evaluate_waiters(self);
}

void after_news(self_ptr self) {
  refresh_output(self);
  evaluate_waiters(self);
}

}  // namespace shellctl::actors::job
