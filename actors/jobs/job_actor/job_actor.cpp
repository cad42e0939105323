#include "actors/jobs/job_actor/job_actor.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/random.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <charconv>
#include <cstring>
#include <random>

#include "actors/jobs/job_stream.hpp"
#include "actors/jobs/job_actor/stdin_feeder.hpp"
#include "actors/jobs/job_actor/settle_rules.hpp"
#include "io/fs/files.hpp"
#include "io/fs/job_dir.hpp"
#include "io/fs/home_views.hpp"
#include "io/json/json.hpp"
#include "io/proc/job_processes.hpp"
#include "io/proc/stdin_pipe.hpp"
#include "io/proc/terminal_wait.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/text/clock.hpp"
#include "io/text/output_window.hpp"
#include "io/text/shell_quote.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors {
namespace {

using self_ptr = job_actor_type::stateful_pointer<job_state>;
using clock_type = job_state::clock;
using io::store::is_before_running;
using io::store::is_terminal;
using io::store::job_status;
using io::store::transition;
namespace files = io::fs::job_files;

const std::vector<job_status> live_statuses = {job_status::created, job_status::starting,
                                               job_status::running};

const io::fs::job_dir& dir(self_ptr self) { return self->state.files; }
bool has(self_ptr self, const char* name) { return self->state.files.has(name); }
bool done(self_ptr self) { return is_terminal(self->state.row.status); }
// The row as far as the job knows it: the stored one, or what a write being retried will
// make of it ("reads reflect what is known").
const job_row& known_row(self_ptr self) {
  return self->state.pending_row ? *self->state.pending_row : self->state.row;
}
bool known_done(self_ptr self) { return is_terminal(known_row(self).status); }
bool is_pty(self_ptr self) { return self->state.row.mode == io::store::job_mode::pty; }
std::string pane(self_ptr self) { return self->state.row.pane_target; }

void settle(self_ptr self);
// Recovery's first decision is carried out: the registry learns it (a no-op otherwise).
void recovery_settled(self_ptr self) { self->state.recovery.ok(job_recovered{}); }
void evaluate_waiters(self_ptr self);

bool in_removal(self_ptr self) {
  return self->state.phase == job_phase::removing || self->state.phase == job_phase::removed;
}

// ---------------------------------------------------------------- the operational log

// A warning about this job, one line (actors/services/event_log.hpp writes it).
void warn(self_ptr self, std::string text) {
  const auto& id = self->state.row.job_id;
  self->send(self->state.peers.log,
             log_event{io::log::level::warn, "job " + id + ": " + std::move(text), {{"job_id", id}}});
}

// A lifecycle event: created, then each status the row takes, then deleted.
void log_lifecycle(self_ptr self, std::string_view event) {
  const auto& r = self->state.row;
  std::vector<io::log::field> f{{"event", std::string(event)},
                                {"job_id", r.job_id},
                                {"mode", std::string(io::store::mode_text(r.mode))}};
  if (r.exit_code) f.push_back({"exit_code", std::to_string(*r.exit_code), true});
  if (r.reason) f.push_back({"reason", *r.reason});
  self->send(self->state.peers.log, log_event{io::log::level::info, "job", std::move(f)});
}

// Every phase change goes through here (the moves of job_phase.hpp). A removal under way
// is not left by a start's late steps: those moves are refused (false), and the step only
// cleans up. Any other move outside the table is a bug: logged, and made anyway, so that
// the clients waiting are still answered.
bool move_to(self_ptr self, job_phase to) {
  auto& st = self->state;
  if (in_removal(self) && to != job_phase::removed) return false;
  if (!can_move(st.phase, to))
    warn(self, "unexpected phase change " + std::string(phase_name(st.phase)) + " -> " +
                   std::string(phase_name(to)));
  if (to == job_phase::removing) st.phase_before_removal = st.phase;
  st.phase = to;
  return true;
}

bool starting(self_ptr self) { return is_starting(self->state.phase); }
void start_session(self_ptr self);
bool retry_start(self_ptr self);
bool start_cut_short(self_ptr self);
void remove_job(self_ptr self, std::optional<answer<job_deleted>> reply, std::uint64_t guard = 0);
void close_stdin_pipe(self_ptr self);
void note_limit_events(self_ptr self);

// The job's directory and its same-HOME view entry (io/fs/home_views.hpp).
void remove_job_files(self_ptr self) {
  self->send(self->state.peers.cleanup,
             remove_tree{io::fs::move_aside(self->state.dir, self->state.cfg.trash_dir())});
  io::fs::unlink_from_home_views(self->state.cfg.state_dir, self->state.row.job_id);
}
void finish_terminate(self_ptr self);

// ---------------------------------------------------------------- the job's cgroup (§E5)

// Ends the job's whole tree (cgroup.kill, populated 0, rmdir: actors/services/cgroup_reaper.hpp),
// then runs `then`. At once when there is no cgroup; a second caller shares the end under
// way. A cgroup that did not empty in time is logged and stays known: the next end (or
// the next startup's orphan sweep) tries again; `then` runs either way, so that no client
// waits forever on a process stuck in the kernel.
void end_job_cgroup(self_ptr self, std::function<void()> then = {}) {
  auto& st = self->state;
  if (!st.cgroup_exists) {
    if (then) then();
    return;
  }
  if (then) st.after_cgroup_end.push_back(std::move(then));
  if (st.cgroup_ending) return;
  st.cgroup_ending = true;
  auto done = [self](bool ok, const std::string& error) {
    auto& st = self->state;
    st.cgroup_ending = false;
    if (ok)
      st.cgroup_exists = false;
    else
      warn(self, "cgroup " + st.cgroup + " not ended: " + error);
    auto conts = std::move(st.after_cgroup_end);
    st.after_cgroup_end.clear();
    for (auto& c : conts) c();
  };
  self->request(st.peers.reaper, caf::infinite, end_cgroup{st.cgroup})
      .then([done](cgroup_ended& r) { done(r.ok, r.error); },
            [done](caf::error&) { done(false, "the cgroup reaper is gone"); });
}

// What an exited job left running that outlives its script (io/proc/job_init.hpp), from its
// cgroup's subtree; none without a cgroup.
std::vector<pid_t> leftover_pids(self_ptr self) {
  auto& st = self->state;
  if (!st.cgroup_exists) return {};
  return io::proc::leftover_processes(io::sandbox::cgroups::subtree_procs(st.cgroup));
}

// Whether an ended job keeps its cgroup: its script exited and left processes running.
bool keeps_leftovers(self_ptr self) {
  return self->state.row.status == job_status::exited && !leftover_pids(self).empty();
}

// The processes of the running job: its cgroup's and those of every cgroup the job made
// below it (minus the namespaced init, which forwards signals itself), else those found
// from its runner (io/proc/job_processes.hpp).
std::vector<pid_t> job_pids(self_ptr self) {
  auto& st = self->state;
  const auto runner = static_cast<pid_t>(st.pane_pid);
  if (st.cgroup_exists)
    return io::proc::cgroup_job_processes(runner, io::sandbox::cgroups::subtree_procs(st.cgroup));
  return io::proc::job_processes(runner, st.dir);
}

// ---------------------------------------------------------------- answering

// An answer waiting on tmux or the store: answered 503 at `after` unless unguard() ran
// first (the work itself goes on; the client learns why it waits).
std::uint64_t guard_answer(self_ptr self, const held_answer& reply, std::chrono::milliseconds after,
                           std::string outcome = "the request is carried out as soon as it can be") {
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
  if (st.store_failing)
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

// ---------------------------------------------------------------- what answers show

// The output can no longer grow: stdio, once the runner (which writes output.log itself)
// is gone; PTY, once the pipe's finalizer marked the sanitizer's end, or no pipe was ever
// attached. Bounded: after the finalizer grace the log is taken as it is.
bool output_final(self_ptr self) {
  auto& st = self->state;
  if (st.output_settled) return true;
  if (!known_done(self)) return false;  // a job still running writes on; nothing to latch
  // A job whose gate never opened never ran: nothing was or will be printed.
  bool final = st.output_deadline || !st.gate_opened;
  if (!final && is_pty(self))
    final = !st.pipe_attached || has(self, files::pipe_drained) || has(self, files::pipe_failed);
  else if (!final)
    final = !st.session_alive;
  st.output_settled = final;
  if (final && st.gate_opened) st.timeline.mark(job_mark::output_final);
  // Once per job and process: the size of what it printed, for /metrics.
  if (final && st.gate_opened)
    self->send(st.peers.metrics, job_output_final{io::text::file_size_or_zero(st.output_abs)});
  return final;
}

// done() as answers may state it.
bool shown_done(self_ptr self) { return known_done(self) && output_final(self); }

// The row as answers may state it: a terminal row whose output is still growing is shown
// with the status it had before, and nothing of its end yet.
void arm_output_deadline(self_ptr self);

job_row shown_row(self_ptr self) {
  auto& st = self->state;
  if (!known_done(self) || output_final(self)) return known_row(self);
  arm_output_deadline(self);
  job_row r = known_row(self);
  r.status = st.shown_live_status;
  r.exit_code.reset();
  r.ended_at.reset();
  r.reason.reset();
  r.message.reset();
  return r;
}

// Runs `then` once answers may say done (now, or when the output becomes final).
void when_output_final(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (output_final(self)) {
    then();
    return;
  }
  st.when_output_final.push_back(std::move(then));
  arm_output_deadline(self);
}

void arm_output_deadline(self_ptr self) {
  auto& st = self->state;
  if (st.output_timer_armed) return;
  st.output_timer_armed = true;
  self->delayed_send(self, st.cfg.finalizer_grace, output_final_deadline{});
}

// A terminal job whose output is final changes no more: its inotify watch goes. Until
// then the watch stays: the pipe finalizer's marker is the event that makes it final.
void release_watch_if_settled(self_ptr self) {
  auto& st = self->state;
  if (!st.watching || !done(self) || !output_final(self)) return;
  self->send(st.peers.watcher, unwatch_dir{st.dir});
  st.watching = false;
}

// Called on every event that can make the output final.
void output_may_be_final(self_ptr self) {
  auto& st = self->state;
  if (!output_final(self)) return;
  release_watch_if_settled(self);
  auto conts = std::move(st.when_output_final);
  st.when_output_final.clear();
  for (auto& c : conts) c();
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

// ---------------------------------------------------------------- store and tmux

// Every status change goes through here: one transition in flight at a time, and events
// that arrive meanwhile re-run settle() afterwards, so nothing is decided on stale state.
// A write that fails for a passing reason (disk full, I/O error, busy) is retried until it
// succeeds, 100 ms doubling to 2 s apart; meanwhile `expected` is what the job shows.
// Store requests are unbounded: the detached store answers every one, after at most its
// busy timeout; what a client waits for is bounded by its answer's guard instead.
template <class Message>
void store_request(self_ptr self, Message msg, std::function<void(store_reply&)> then,
                   std::optional<job_row> expected = std::nullopt,
                   std::chrono::milliseconds backoff = std::chrono::milliseconds(0)) {
  auto& st = self->state;
  st.busy = true;
  self->request(st.peers.store, caf::infinite, msg)
      .then(
          [self, msg, then, expected, backoff](store_reply& r) {
            auto& st = self->state;
            if (!r.ok && r.transient) {
              if (!st.store_failing) warn(self, "store: " + r.error + "; retrying until it succeeds");
              st.store_failing = true;
              if (expected) st.pending_row = expected;
              auto next = std::min(std::max(backoff * 2, std::chrono::milliseconds(100)),
                                   std::chrono::milliseconds(2000));
              st.store_retry = [self, msg, then, expected, next] {
                store_request(self, msg, then, expected, next);
              };
              self->delayed_send(self, next, store_retry_tick{});
              evaluate_waiters(self);  // what is known may have changed
              return;
            }
            st.busy = false;
            st.pending_row.reset();
            if (st.store_failing) warn(self, "store: writing again");
            st.store_failing = false;
            if (r.ok && r.row) {
              if (!done(self)) st.shown_live_status = st.row.status;
              const auto before = st.row.status;
              st.row = *r.row;
              if (st.row.status != before) log_lifecycle(self, io::store::status_text(st.row.status));
              // The job is over (failed, lost): nothing it started outlives it (§E5). One
              // whose script exited keeps what it left running (a nohup'd or setsid
              // daemon, io/proc/job_init.hpp) until it is terminated, removed or found
              // lost. A terminate ends the tree itself, after its grace.
              if (done(self) && before != st.row.status) note_limit_events(self);
              if (done(self) && !st.terminating && !keeps_leftovers(self)) end_job_cgroup(self);
              if (done(self)) close_stdin_pipe(self);
            }
            if (!r.ok) warn(self, "store: " + r.error);
            then(r);
            release_watch_if_settled(self);
            if (st.dirty && !in_removal(self)) {
              st.dirty = false;
              settle(self);
            }
            evaluate_waiters(self);
          },
          [self](caf::error&) {
            self->state.busy = false;
          });
}

void retry_store_request(self_ptr self) {
  auto retry = std::move(self->state.store_retry);
  self->state.store_retry = nullptr;
  if (retry) retry();
}

void apply(self_ptr self, transition t, std::function<void(store_reply&)> then = {}) {
  auto expected = io::store::preview_apply(known_row(self), t, io::text::utc_now());
  store_request(self, store_apply{self->state.row.job_id, std::move(t)},
                [then](store_reply& r) {
                  if (then) then(r);
                },
                expected);
}

void record_exit(self_ptr self, std::int64_t code, const std::string& ended_at,
                 std::function<void(store_reply&)> then = {}) {
  auto& r = self->state.row;
  self->state.timeline.mark(job_mark::exit_seen);
  store_request(self, store_record_exit{r.job_id, code, ended_at},
                [self, then](store_reply& rep) {
                  self->state.timeline.mark(job_mark::exit_recorded);
                  if (then) then(rep);
                },
                io::store::preview_record_exit(known_row(self), code, ended_at));
}

void tmux(self_ptr self, std::vector<std::string> lines, std::function<void(tmux_reply&)> then,
          std::string creates_session = {}) {
  // Unbounded like the store's: tmux_server answers every command (with an error when
  // tmux cannot be restarted); client answers are bounded by their guards.
  self->request(self->state.peers.tmux, caf::infinite,
                tmux_command{std::move(lines), creates_session,
                             creates_session.empty() ? session_owner{}
                                                     : caf::actor_cast<session_owner>(self)})
      .then([then](tmux_reply& r) { if (then) then(r); },
            [then](caf::error&) {
              tmux_reply r;
              r.ok = false;
              r.error = "no server running (tmux_server unavailable)";
              if (then) then(r);
            });
}

void kill_session(self_ptr self) {
  tmux(self, {io::tmux::kill_session_line(self->state.row.session_name)}, {});
}

// ---------------------------------------------------------------- materialization

// runtime.md §7: the rules are actors/jobs/job_actor/settle_rules.hpp; here the facts are gathered and the
// decision carried out.
void settle(self_ptr self) {
  auto& st = self->state;
  if (in_removal(self)) return;  // finish_removal answers a recovery
  if (st.busy) {
    st.dirty = true;
    return;
  }
  auto& r = st.row;
  job_facts facts{r.status,      r.exit_code.has_value(), r.ended_at.has_value(),
                  is_pty(self),  starting(self),          st.session_alive,
                  st.finalizer_expired};
  std::optional<disk_facts> disk;
  if (needs_disk(facts)) {
    disk.emplace();
    disk->drained_marker = has(self, files::pipe_drained);
    disk->failed_marker = has(self, files::pipe_failed);
    disk->overflow_marker = has(self, files::output_overflow);
    disk->record = dir(self).read_exit_record();
  }
  // A recovery waits for the decision's write (the startup retention GC reads the rows).
  auto stored = [self](store_reply&) { recovery_settled(self); };
  switch (decide_settle(facts, disk)) {
    case settle_action::nothing:
      recovery_settled(self);
      return;
    case settle_action::fill_ended_at:
      apply(self, transition{r.status, {r.status}, {}, {}, {}, false}, stored);
      return;
    case settle_action::exited_from_code:
      apply(self, transition{job_status::exited, live_statuses, {}, {}, {}, false}, stored);
      return;
    case settle_action::record_exit:
      record_exit(self, *disk->record.code, disk->record.ended_at, stored);
      return;
    case settle_action::read_again:
      // Decide again shortly, from the artifacts, once they can be read.
      if (!st.settle_retry_armed) {
        st.settle_retry_armed = true;
        self->delayed_send(self, std::chrono::milliseconds(200), settle_retry{});
      }
      recovery_settled(self);  // no evidence yet: the row stays as it is for now
      return;
    case settle_action::output_overflow:
      // The whole tree goes: with the row terminal, its cgroup is ended (§E5); without one,
      // the pane's process group (the runner, whose init takes the namespace with it).
      if (st.cgroup.empty() && st.pane_pid > 0)
        io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
      apply(self, transition{job_status::failed, live_statuses, std::string("output_budget_exhausted"),
                             std::string("The job's output exceeded the scope's output budget; "
                                         "it was stopped."),
                             {}, false},
            stored);
      return;
    case settle_action::pipe_failed:
      apply(self, transition{job_status::failed, live_statuses, std::string("pipe_failed"),
                             std::string("The tmux output pipe stopped while the job was "
                                         "still running."),
                             {}, false},
            stored);
      return;
    case settle_action::running:
      apply(self, transition{job_status::running, {job_status::created, job_status::starting}, {},
                             {}, {}, true},
            stored);
      return;
    case settle_action::await_finalizer:
      if (!st.finalizer_timer_armed) {
        st.finalizer_timer_armed = true;
        self->delayed_send(self, st.cfg.finalizer_grace, finalizer_timeout{});
      }
      recovery_settled(self);  // the row is decided when the pipe's grace is over
      return;
    case settle_action::lost: {
      // The evidence, for the operator: a lost job is a claim that nothing recorded its end.
      const auto& a = disk->record;
      warn(self, std::string("lost: session gone; runner-exit-code ") +
                     (a.code_file ? "present" : "missing") + ", runner-ended-at " +
                     (a.ended_file ? "present" : "missing") + ", " +
                     (disk->drained_marker || disk->failed_marker ? "pipe finalized"
                                                                  : "pipe not finalized"));
      // Whatever of the job still runs (a stdio job's runner outlives its pane while a
      // child holds its pipes) is stopped: a lost job must not keep running where no API
      // call can reach it.
      if (st.pane_pid > 0)
        io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
      else
        self->send(st.peers.cleanup, kill_groups_naming{st.dir});
      apply(self, transition{job_status::lost, live_statuses, std::string("tmux_session_missing"),
                             std::string("The dedicated tmux session is no longer present."),
                             {}, false},
            stored);
      return;
    }
  }
}

// ---------------------------------------------------------------- long-poll

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

// The window at the waiter's offset; past the log's end, the pending prompt (its bytes are
// counted by the offset as the log will hold them, and never split a UTF-8 character).
void answer_window(self_ptr self, const job_state::waiter& w, bool job_done,
                   const std::string& pending = {}) {
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
void notify_streams(self_ptr self, bool final_word = false) {
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

// http-api.md §5.2 (actors/jobs/job_actor/long_poll.hpp), driven by events and timers, not a sleep loop;
// the streams hear of the same events here.
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
  // return_on_input_wait (§E6): the terminal's state, read only when a waiter asked.
  bool blocked_on_terminal = !pending.empty();
  if (!blocked_on_terminal && !job_done && is_pty(self) && st.pane_pid > 0 &&
      st.row.status == job_status::running && st.waiters.wants_terminal_state()) {
    const auto runner = static_cast<pid_t>(st.pane_pid);
    blocked_on_terminal =
        io::proc::read_terminal_facts(runner, job_pids(self)).blocked_on_terminal;
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
                std::optional<clock_type::time_point> since = std::nullopt) {
  auto& st = self->state;
  st.waiters.add(p, std::move(reply), io::text::file_size_or_zero(st.output_abs),
                 self->clock().now(), since);
  evaluate_waiters(self);
}

// The start is complete (or failed): the run waits for the job like a wait would, within
// the timeout it asked for, counted from its arrival (clients.md §6.3: a run answers
// within its timeout plus a little, however long its start took). Unless it was answered
// already: its timeout passed during the start.
void answer_run(self_ptr self) {
  auto& st = self->state;
  if (!st.run) return;
  auto run = std::move(*st.run);
  st.run.reset();
  unguard(self, st.start_guard);
  if (run.reply.pending()) add_waiter(self, run.spec.wait, run.reply, st.run_arrived);
}

// How long past its timeout a run whose start is still under way waits for it, before it
// answers without it: a start that completes in this time answers as a run always did
// (running, or done), and the answer still comes well within the client's read timeout
// (the run's timeout plus 10 s, clients.md §2).
constexpr std::chrono::seconds run_answer_grace{3};

// The run's timeout passed while its start is under way (a busy machine: a hundred starts
// queued at one tmux server). Its answer is the job as it stands: its id, "created" or
// "starting", not done, no output yet; the client waits on it by id, as after any run
// that timed out. Only once the row is stored: before, the id names nothing.
void answer_run_in_progress(self_ptr self) {
  auto& st = self->state;
  if (!st.run || !st.run->reply.pending()) return;
  unguard(self, st.start_guard);
  st.run->reply.ok(result_window(self, io::text::output_window{"", 0, false}));
}

// The start is stuck: tmux said nothing for a while although commands are owed, the
// store keeps failing, or its row is not even stored when its run must answer. It is failed as soon as no store write is under way (that write's
// completion meets start_cut_short); its run, if still unanswered, hears within 5 s either
// way (the failed job, or a 503 saying it will be failed).
void abandon_start(self_ptr self) {
  auto& st = self->state;
  if (st.start_abandoned) return;
  st.start_abandoned = true;
  if (st.run && st.run->reply.pending())
    st.start_guard = guard_answer(self, st.run->reply, std::chrono::seconds(5),
                                  "the job is not started: it will be recorded as failed "
                                  "(start_failed)");
  if (!st.busy) start_cut_short(self);
}

// ---------------------------------------------------------------- start (runtime.md §3)

// What a start began is undone: its pane's process group and its session.
void undo_start(self_ptr self) {
  auto& st = self->state;
  // The runner may be waiting at its gate, where no signal from a closing pane reaches a
  // child: end its process group explicitly.
  if (st.session_alive) io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
  kill_session(self);
  end_job_cgroup(self);
}

void fail_start(self_ptr self, const std::string& message) {
  auto& st = self->state;
  // Already failed (a late answer of tmux, say), or the job is being removed: only what
  // the start began is undone.
  if (st.start_failed || !move_to(self, job_phase::failing_start)) {
    undo_start(self);
    return;
  }
  st.start_failed = true;
  // Until the failed row is stored the phase stays failing_start: settle() must not decide.
  apply(self,
        transition{job_status::failed, live_statuses, std::string("start_failed"), message, {}, false},
        [self](store_reply&) {
          move_to(self, job_phase::live);
          undo_start(self);
          answer_run(self);
          recovery_settled(self);  // an interrupted start, found by recovery
        });
}

// Asked by every step of a start when its answer arrives: the start goes on, or it ends
// here. The job is being removed (a forced delete): what the start began is undone. The
// start's deadline passed: the start fails.
bool start_cut_short(self_ptr self) {
  auto& st = self->state;
  if (in_removal(self)) {
    undo_start(self);
    return true;
  }
  if (!st.start_abandoned) return false;
  fail_start(self, st.store_failing
                       ? "the job did not start: the state database kept failing"
                       : "the job did not start: tmux stopped answering");
  return true;
}

// A scoped job's wall deadline (native-scopes.md §4.5): min(job_wall_seconds after its
// start, the scope's deadline); armed when it starts running and again after a restart.
void arm_wall_deadline(self_ptr self) {
  auto& st = self->state;
  if (st.cfg.wall_limit.count() <= 0 && st.cfg.wall_until_epoch <= 0) return;
  const auto now = std::chrono::system_clock::now();
  auto until = std::chrono::system_clock::time_point::max();
  if (st.cfg.wall_limit.count() > 0) {
    const auto started = st.row.started_at ? io::text::parse_utc(*st.row.started_at) : std::nullopt;
    until = (started ? *started : now) + st.cfg.wall_limit;
  }
  if (st.cfg.wall_until_epoch > 0)
    until = std::min(until, std::chrono::system_clock::time_point(std::chrono::seconds(st.cfg.wall_until_epoch)));
  const auto left = std::max(std::chrono::system_clock::duration::zero(), until - now);
  self->delayed_send(self, std::chrono::duration_cast<std::chrono::milliseconds>(left), wall_deadline{});
}

void open_gate(self_ptr self) {
  auto& st = self->state;
  if (is_pty(self)) st.timeline.mark(job_mark::pipe_ready);
  if (start_cut_short(self)) return;
  try {
    dir(self).open_gate();
  } catch (const std::exception& e) {
    fail_start(self, e.what());
    return;
  }
  st.timeline.mark(job_mark::gate_opened);
  st.gate_opened = true;
  move_to(self, job_phase::opening_gate);
  apply(self, transition{job_status::running, {job_status::starting}, {}, {}, {}, true},
        [self](store_reply&) {
    self->state.timeline.mark(job_mark::running_stored);
    dir(self).forget(files::pipe_ready);
    const std::chrono::duration<double> took = job_state::clock::now() - self->state.admitted_at;
    self->send(self->state.peers.metrics, job_started_event{self->state.row.mode, took.count()});
    move_to(self, job_phase::live);
    arm_wall_deadline(self);
    answer_run(self);
    settle(self);
  });
}

// PTY: output.log is written by the sanitizer alone, which holds it open until it exits
// (the pipe program execs it), so the log's close means the pipe has ended. Without a
// marker the sanitizer died (killed, say): .pipe-failed is written for it, as the Go pipe
// shell would have (runtime.md §3.3), and settle() fails the job (rule 4a) instead of
// leaving it running with nobody capturing its output. Before the gate a close can only
// come from a pipe that a retried start killed.
void output_closed(self_ptr self) {
  auto& st = self->state;
  if (!is_pty(self) || !st.pipe_attached || !st.gate_opened || done(self)) return;
  if (st.output_abs != dir(self).file(files::output)) return;  // a log written elsewhere
  if (has(self, files::pipe_drained) || has(self, files::pipe_failed)) return;
  try {
    dir(self).mark_pipe_failed();
  } catch (const std::exception& e) {
    warn(self, std::string("pipe ended without a marker; writing .pipe-failed: ") + e.what());
  }
  settle(self);
}

void await_pipe_ready(self_ptr self) {
  auto& st = self->state;
  if (has(self, files::pipe_ready)) {
    open_gate(self);
    return;
  }
  move_to(self, job_phase::awaiting_pipe);
  self->delayed_send(self, st.cfg.pipe_ready_timeout, pipe_ready_timeout{});
}

// After pipe-pane + display-message: the pipe must be active, then the sanitizer's ready
// file completes the handshake (runtime.md §3.3).
void check_pipe(self_ptr self, tmux_reply& p, size_t first) {
  if (start_cut_short(self)) return;
  if (!p.ok) {
    if (p.error == "server exited unexpectedly" && retry_start(self)) return;
    fail_start(self, p.error);
    return;
  }
  if (p.output.size() < first + 2 || !io::tmux::pipe_active(p.output[first + 1])) {
    fail_start(self, "tmux output pipe is not active after pipe-pane");
    return;
  }
  await_pipe_ready(self);
}

// The tmux server died while this start was under way (its gate never opened, so the
// script never ran): start again on the fresh server, once the dead pane's pipe
// finalizer can no longer write stale markers into the job dir.
bool retry_start(self_ptr self) {
  auto& st = self->state;
  if (st.start_attempts >= 3) return false;
  st.session_alive = false;
  st.pane_pid = 0;
  // On this thread, rare as it is (only after tmux died): it must be over before the stale
  // markers go and the new start begins.
  io::tmux::kill_processes_naming(dir(self).file(files::pipe_ready));
  for (const char* stale : {files::pipe_ready, files::pipe_drained, files::pipe_failed})
    dir(self).forget(stale);
  start_session(self);
  return true;
}

// 16 hex digits from the kernel's generator (empty if it gives none: no handshake then).
std::string random_nonce() {
  unsigned char b[8];
  if (::getrandom(b, sizeof b, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof b)) return "";
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

void start_session(self_ptr self) {
  auto& st = self->state;
  auto& r = st.row;
  move_to(self, job_phase::creating_session);
  ++st.start_attempts;
  // E5: the cgroup exists before the runner does (it opens it at once); a retried start
  // finds it there.
  if (!st.cgroup.empty()) {
    std::string err;
    if (!io::sandbox::cgroups::create(st.cgroup, st.limits, err)) {
      fail_start(self, "cgroup: " + err);
      return;
    }
    st.cgroup_exists = true;
  }
  // The runner's argv, exec'd by tmux itself (no `sh -c` in between).
  io::tmux::job_session session{r.session_name, r.terminal_cols, r.terminal_rows,
                                st.cfg.runner_policy_env,
                                {st.cfg.runner_link, st.dir, r.job_id, r.cwd,
                                 std::string(io::store::mode_text(r.mode))}};
  // PTY: the runner ends with a marker the sanitizer acknowledges (.pipe-end) before it
  // exits, because tmux drops a dead pane's unwritten pipe buffer. A fresh nonce per start
  // keeps a script from faking it; the runner removes SHELLCTL_* before the job runs.
  const std::string nonce = is_pty(self) ? random_nonce() : std::string();
  if (!nonce.empty()) session.env.emplace_back("SHELLCTL_PIPE_END", nonce);
  // PTY: session and pipe in one round trip. The runner cannot print before the gate,
  // so nothing is lost between the two commands.
  std::vector<std::string> lines = {io::tmux::new_session_line(session)};
  if (is_pty(self)) {
    dir(self).forget(files::pipe_end);
    io::tmux::pipe_settings pipe{st.cfg.sanitizer, nonce, st.cfg.budget_helper, st.cfg.budget_db};
    auto program = io::tmux::pipe_program(dir(self), st.output_abs, pipe);
    for (auto& l : io::tmux::attach_pipe_lines(pane(self), program)) lines.push_back(l);
    st.pipe_attached = true;  // from here on a sanitizer may be writing the log
  }
  tmux(
      self, lines,
      [self](tmux_reply& rep) {
        auto& st = self->state;
        st.timeline.mark(job_mark::session_created);
        auto pid = rep.output.empty() ? std::nullopt : io::tmux::pane_pid_of(rep.output[0]);
        bool session_created = pid.has_value();
        if (session_created) {
          st.session_alive = true;
          st.pane_pid = *pid;
        }
        if (start_cut_short(self)) return;
        if (!rep.ok && rep.error == "server exited unexpectedly" && retry_start(self)) return;
        if (!rep.ok || !session_created) {
          fail_start(self, rep.ok ? "tmux new-session printed no pane" : rep.error);
          return;
        }
        if (!is_pty(self))
          open_gate(self);  // stdio: no pipe, no handshake (runtime.md §3.4)
        else
          check_pipe(self, rep, 1);
      },
      r.session_name);
}

// The registry has forgotten the job: everything still waiting learns it is gone. Requests
// the registry forwarded before that are ahead of `retire` in the mailbox and get 404 too.
// Before the actor quits, every answer it still holds is given: an answer it took along
// would leave its client waiting for the edge's request timeout.
void answer_everything_held(self_ptr self, std::string_view why) {
  auto& st = self->state;
  // Continuations first: they answer (terminate, forced delete) with the last row.
  auto after_final = std::move(st.when_output_final);
  st.when_output_final.clear();
  st.output_deadline = true;
  for (auto& c : after_final) c();
  auto after_term = std::move(st.after_terminate);
  st.after_terminate.clear();
  for (auto& c : after_term) c();
  if (st.run) {
    // A start cut short (a forced delete, a shutdown): the job's result as it stands.
    st.run->reply.ok(result_window(self, io::text::output_window{"", 0, false}));
    st.run.reset();
  }
  for (auto& [id, g] : st.guarded_answers)
    g.reply.fail(job_errc::unavailable, std::string(why));  // a no-op when answered
  st.guarded_answers.clear();
}

void finish_removal(self_ptr self) {
  auto& st = self->state;
  move_to(self, job_phase::removed);
  for (auto& w : st.waiters.take_all()) w.answer.fail(job_errc::job_not_found, "Unknown job id");
  for (auto& held : st.during_removal) held.reply.fail(job_errc::job_not_found, "Unknown job id");
  st.during_removal.clear();
  answer_everything_held(self, "the job was removed");
  recovery_settled(self);
  close_stdin_pipe(self);
  self->send(self, retire{});
}

// ---------------------------------------------------------------- piped stdin

// Before the start (the runner opens the FIFO as the job's stdin): the pipe, held by a
// stdin_feeder of its own. Throws std::system_error, as the other job files do.
void open_stdin_pipe(self_ptr self) {
  auto& st = self->state;
  const int pipe_fd = io::proc::stdin_pipe::create(dir(self).file(io::proc::stdin_pipe::file_name));
  if (pipe_fd < 0) throw std::system_error(errno, std::generic_category(), "stdin pipe");
  const int cancel = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int feeder_cancel = cancel < 0 ? -1 : ::fcntl(cancel, F_DUPFD_CLOEXEC, 0);
  if (feeder_cancel < 0) {
    const int e = errno;
    ::close(pipe_fd);
    if (cancel >= 0) ::close(cancel);
    throw std::system_error(e, std::generic_category(), "stdin pipe: eventfd");
  }
  st.stdin_cancel = cancel;
  st.stdin_feeder = self->spawn<caf::detached>(stdin_feeder, pipe_fd, feeder_cancel);
  st.stdin_state = job_state::stdin_pipe_state::open;
}

// The job ended (or goes): a write it will never read is cancelled and the pipe closed.
void close_stdin_pipe(self_ptr self) {
  auto& st = self->state;
  if (st.stdin_cancel >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(st.stdin_cancel, &one, sizeof one);
    ::close(st.stdin_cancel);
    st.stdin_cancel = -1;
  }
  if (st.stdin_feeder) self->send(*st.stdin_feeder, shutdown_jobs{});
  st.stdin_feeder.reset();
  if (st.stdin_state == job_state::stdin_pipe_state::open)
    st.stdin_state = job_state::stdin_pipe_state::closed;
}

// The job never got a row: leave the registry and stop.
void abandon(self_ptr self) {
  move_to(self, job_phase::removing);
  self->request(self->state.peers.registry, caf::infinite, job_removed{self->state.row.job_id})
      .then([self](removal_ack&) { finish_removal(self); });
}

void begin_run(self_ptr self) {
  auto& st = self->state;
  auto& spec = st.run->spec;
  st.limits = io::sandbox::cgroups::narrowed(st.cfg.job_limits, spec.limits);
  // In a native scope's worker the insert is the admission: the script and the env JSON
  // are the input it charges (§4.5).
  std::uint64_t input_charge = 0;
  // The files first: the runner may start reading them as soon as the session exists.
  try {
    io::json::writer env;
    env.begin_object();
    for (auto& [k, v] : spec.env) env.key(k).value(v);
    env.end_object();
    std::string env_json = env.finish();
    env_json.pop_back();  // the writer's trailing newline is for HTTP bodies
    input_charge = spec.script.size() + env_json.size();
    dir(self).write_inputs(spec.script, env_json, st.output_abs);
    if (spec.stdin_pipe) open_stdin_pipe(self);
    st.timeline.mark(job_mark::files_written);
    std::string why;
    if (!spec.home_view.empty() &&
        !io::fs::link_into_home_view(spec.home_view, st.row.job_id, st.output_abs, why))
      warn(self, "home view: " + why);
  } catch (const std::system_error& e) {
    // The state dir's disk is full or failing: a passing condition of the machine (503,
    // as when the database cannot be written), not a fault of this server.
    const int code = e.code().value();
    const bool disk = code == ENOSPC || code == EDQUOT || code == EIO || code == EROFS;
    remove_job_files(self);
    st.run->reply.fail(disk ? job_errc::storage_unavailable : job_errc::internal_error, e.what());
    st.run.reset();
    abandon(self);
    return;
  } catch (const std::exception& e) {
    remove_job_files(self);
    st.run->reply.fail(job_errc::internal_error, e.what());
    st.run.reset();
    abandon(self);
    return;
  }
  // The start is bounded: from its 10th second on it is looked at until it completes, and
  // failed once stuck (start_deadline). Its run answers by its own timeout plus a little.
  self->delayed_send(self, st.cfg.pipe_ready_timeout, start_deadline{});
  self->delayed_send(self,
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::duration<double>(spec.wait.timeout_s)) +
                         run_answer_grace,
                     run_deadline{});
  store_request(self, store_insert{st.row, st.run->key, input_charge}, [self](store_reply& r) {
    auto& st = self->state;
    st.timeline.mark(job_mark::row_inserted);
    if (r.ok && r.changed) {
      log_lifecycle(self, "created");
      st.row_stored = true;
    }
    if (r.ok && r.changed && start_cut_short(self)) return;
    if (!r.ok || !r.changed) {
      remove_job_files(self);
      if (r.ok && !r.refused.empty())
        st.run->reply.fail(r.refused == "job_capacity_exhausted" ? job_errc::job_capacity_exhausted
                                                                 : job_errc::input_budget_exhausted,
                           r.refused == "job_capacity_exhausted"
                               ? "The scope admitted all the jobs its limits allow"
                               : "The job's script and environment exceed the scope's input budget");
      else if (!r.ok)
        st.run->reply.fail(job_errc::internal_error, r.error);
      else
        st.run->reply.fail(job_errc::job_id_collision, "Failed to allocate a unique job id");
      st.run.reset();
      abandon(self);
      return;
    }
    apply(self, transition{job_status::starting, {job_status::created}, {}, {}, {}, false},
          [self](store_reply& r2) {
      self->state.timeline.mark(job_mark::starting_stored);
      if (start_cut_short(self)) return;
      if (!r2.ok) {
        fail_start(self, r2.error);
        return;
      }
      auto& st = self->state;
      self->request(st.peers.watcher, caf::infinite, watch_dir{st.dir, caf::actor_cast<dir_listener>(self)})
          .then([self](watch_ack& ack) {
            self->state.watching = ack.ok;
            self->state.timeline.mark(job_mark::watch_set);
            if (start_cut_short(self)) return;
            if (!ack.ok) {
              fail_start(self, ack.error);
              return;
            }
            start_session(self);
          });
    });
  });
}

// ---------------------------------------------------------------- recovery (D8)

void recover(self_ptr self, bool alive) {
  auto& st = self->state;
  st.session_alive = alive;
  // E5: the job's cgroup, if it has one, is adopted again (its path is the job's id).
  st.cgroup_exists = !st.cgroup.empty() && io::sandbox::cgroups::exists(st.cgroup);
  move_to(self, job_phase::live);
  // The session's end comes from tmux_server (at once, if it ended since the listing).
  if (alive)
    self->send(st.peers.tmux,
               track_session{st.row.session_name, caf::actor_cast<session_owner>(self)});
  if (!io::fs::exists(st.dir)) {
    // Only a delete removes a job dir before its row (when the disk was full): finish it.
    remove_job(self, std::nullopt);
    return;
  }
  st.pipe_attached = is_pty(self);  // a PTY job that got this far had (or has) its pipe
  // A piped stdin ended with the server that held it: the job read EOF (README, "stdin for stdio tools").
  if (!is_pty(self) && has(self, io::proc::stdin_pipe::file_name))
    st.stdin_state = job_state::stdin_pipe_state::closed;
  st.gate_opened = has(self, files::start_gate);
  if (done(self)) {
    if (alive) kill_session(self);  // runtime.md §9.1 step 6
    if (!keeps_leftovers(self)) end_job_cgroup(self);  // an end the crash cut short
    settle(self);
    return;
  }
  arm_wall_deadline(self);
  self->request(st.peers.watcher, caf::infinite, watch_dir{st.dir, caf::actor_cast<dir_listener>(self)})
      .then([self](watch_ack& ack) {
        auto& st = self->state;
        st.watching = ack.ok;
        if (!st.session_alive) {
          if (is_before_running(st.row.status) && !has(self, files::start_gate)) {
            // A crash before the gate opened: the script never ran and the client never
            // learned the id (the run answer waits for the gate). Whatever of the start
            // survives (a runner at its gate) is stopped. Not lost: nothing was running.
            self->send(st.peers.cleanup, kill_groups_naming{st.dir});
            fail_start(self, "start interrupted by a server restart; the script never ran");
            return;
          }
          settle(self);
          return;
        }
        tmux(self, {io::tmux::pane_query_line(pane(self))},
             [self](tmux_reply& r) {
               auto& st = self->state;
               if (!r.ok) {
                 if (io::tmux::is_target_missing(r.error)) st.session_alive = false;
                 settle(self);
                 return;
               }
               auto pane_facts =
                   io::tmux::read_pane_query(r.output.empty() ? std::vector<std::string>{} : r.output[0]);
               st.pane_pid = pane_facts.pid;
               bool pipe_active = pane_facts.pipe_active;
               bool interrupted_start = is_before_running(st.row.status) && !has(self, files::start_gate);
               if (interrupted_start) {
                 // A crash in the middle of a start, before the gate opened: the script
                 // never ran and the client never learned the job id (the run answer
                 // comes after the gate). Finishing the start now would run a script
                 // its client already saw fail, perhaps twice after a retry; so the
                 // runner is stopped and the job recorded as failed (D8: never a runner
                 // waiting forever, always a truthful status).
                 fail_start(self, "start interrupted by a server restart; the script never ran");
                 return;
               }
               if (is_pty(self) && !pipe_active &&
                   !has(self, files::pipe_drained)) {
                 apply(self, transition{job_status::failed, live_statuses, std::string("pipe_failed"),
                                        std::string("The tmux output pipe stopped while the job "
                                                    "was still running."),
                                        {}, false},
                       [self](store_reply&) { recovery_settled(self); });
                 return;
               }
               settle(self);
             });
      });
}

// ---------------------------------------------------------------- terminate and delete

void begin_terminate(self_ptr self, double grace_s, std::function<void()> then) {
  auto& st = self->state;
  st.after_terminate.push_back(std::move(then));
  if (st.terminating) return;  // a terminate is already under way: share its end
  st.terminating = true;
  auto gen = ++st.terminate_generation;
  apply(self,
        transition{job_status::terminated,
                   {job_status::created, job_status::starting, job_status::running,
                    job_status::exited},
                   {}, {}, {}, false},
        [self, grace_s, gen](store_reply&) {
          auto& st = self->state;
          if (!st.session_alive) {
            finish_terminate(self);
            return;
          }
          tmux(self, {io::tmux::interrupt_line(pane(self))}, {});
          if (grace_s <= 0) {
            finish_terminate(self);
            return;
          }
          self->delayed_send(self,
                             std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::duration<double>(std::min(grace_s, 3600.0))),
                             terminate_deadline{gen});
        });
}

// The process group is gone (session ended) or the grace ran out: make sure nothing of
// the job survives, then answer.
void finish_terminate(self_ptr self) {
  auto& st = self->state;
  if (!st.terminating) return;
  st.terminating = false;
  // The whole tree first (§E5): a setsid or double-forked daemon is in the cgroup too.
  end_job_cgroup(self, [self] {
    auto& st = self->state;
    // Also when the session is gone: members of the pane's process group that ignore
    // SIGHUP outlive the pane (D9 promises nothing of the job survives). The group's id
    // is not reused while any member lives.
    if (st.pane_pid > 0) io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
    kill_session(self);
    auto conts = std::move(st.after_terminate);
    st.after_terminate.clear();
    // Answered once the output is final: the ^C echo and whatever the job printed while
    // it ended are in the log before any answer says done.
    when_output_final(self, [conts] {
      for (auto& c : conts) c();
    });
  });
}

using delete_answer = std::optional<answer<job_deleted>>;
void remove_row(self_ptr self, delete_answer reply, std::uint64_t guard,
                std::chrono::milliseconds backoff);

void remove_job(self_ptr self, delete_answer reply, std::uint64_t guard) {
  auto& st = self->state;
  if (in_removal(self)) {
    // A delete racing another removal: answered when that one is complete (404 then).
    if (reply)
      st.during_removal.push_back(
          job_state::held_request{[self, r = *reply] { remove_job(self, r); }, *reply});
    return;
  }
  move_to(self, job_phase::removing);
  // Nothing of a job survives its deletion (§E5): its tree ends before its row goes.
  end_job_cgroup(self, [self, reply = std::move(reply), guard] {
    kill_session(self);
    remove_row(self, reply, guard, std::chrono::milliseconds(0));
  });
}

// The row goes first (a crash then leaves only a directory, removed at startup). A write
// that fails for a passing reason is retried until it succeeds; on a full disk the job's
// files go right away to make room (a row left without its directory is a delete that a
// restart completes).
void remove_row(self_ptr self, delete_answer reply, std::uint64_t guard,
                std::chrono::milliseconds backoff) {
  auto& st = self->state;
  self->request(st.peers.store, caf::infinite, store_remove{st.row.job_id})
      .then([self, reply, guard, backoff](store_reply& r) {
        auto& st = self->state;
        if (!r.ok && r.transient) {
          if (!st.store_failing)
            warn(self, "store: " + r.error + "; retrying the delete");
          st.store_failing = true;
          remove_job_files(self);
          auto next = std::min(std::max(backoff * 2, std::chrono::milliseconds(100)),
                               std::chrono::milliseconds(2000));
          self->delayed_send(self, next, remove_retry_tick{});
          st.remove_retry = [self, reply, guard, next] { remove_row(self, reply, guard, next); };
          return;
        }
        st.store_failing = false;
        unguard(self, guard);
        if (!r.ok) {
          // The one move back: the job is where it was before the removal began.
          st.phase = st.phase_before_removal;
          if (reply) reply->fail(job_errc::internal_error, r.error);
          // The job still exists: the requests that waited are served normally.
          auto held = std::move(st.during_removal);
          st.during_removal.clear();
          for (auto& h : held) h.serve();
          return;
        }
        notify_streams(self, true);  // their exit event, before the log goes
        remove_job_files(self);
        if (r.changed) log_lifecycle(self, "deleted");
        if (st.watching) self->send(st.peers.watcher, unwatch_dir{st.dir});
        st.watching = false;
        self->request(st.peers.registry, caf::infinite, job_removed{st.row.job_id})
            .then([self, reply, changed = r.changed](removal_ack&) {
              finish_removal(self);
              if (!reply) return;
              if (changed)
                reply->ok(job_deleted{self->state.row.job_id});
              else
                reply->fail(job_errc::job_not_found, "Unknown job id");
            });
      });
}

// ---------------------------------------------------------------- input (runtime.md §3.5)

// A piped stdin's text (and end): written by the job's stdin_feeder as the job reads, then
// answered as a wait. A write the job does not read within the guard is answered 503 and
// goes on; the job's end cancels it.
void feed_stdin(self_ptr self, const input_request& in, const answer<job_result>& reply) {
  auto& st = self->state;
  const auto guard = guard_answer(self, reply, std::chrono::seconds(30) + seconds_ms(in.p.timeout_s),
                                  "the text is written as the job reads its stdin");
  auto feeder = *st.stdin_feeder;
  if (in.eof) {
    // From now on the pipe counts as closed: a later /input is refused, whatever this
    // write's fate.
    st.stdin_state = job_state::stdin_pipe_state::closed;
    st.stdin_feeder.reset();
  }
  self->request(feeder, caf::infinite, stdin_write{in.text, in.eof})
      .then(
          [self, p = in.p, reply, guard](stdin_written& w) {
            unguard(self, guard);
            if (w.bytes > 0) self->send(self->state.peers.metrics, job_input_event{w.bytes});
            if (!w.ok && !done(self)) {
              // The job closed its stdin, or it is ending: the pipe is of no more use.
              close_stdin_pipe(self);
              reply.fail(job_errc::input_unsupported, "the job's stdin is closed: " + w.error);
              return;
            }
            add_waiter(self, p, reply);  // done meanwhile: the waiter answers at once
          },
          [self, reply, guard](caf::error& e) {
            unguard(self, guard);
            reply.fail(job_errc::internal_error, "stdin: " + caf::to_string(e));
          });
}

void deliver_input(self_ptr self, const input_request& in, const answer<job_result>& reply) {
  auto& st = self->state;
  if (done(self)) {
    reply.fail(job_errc::job_not_running, "Job " + st.row.job_id + " is already terminal");
    return;
  }
  if (!is_pty(self) && !st.stdin_feeder) {
    reply.fail(job_errc::input_unsupported,
               st.stdin_state == job_state::stdin_pipe_state::none
                   ? "stdio jobs do not support input"  // the original's words, exactly
                   : "the job's stdin is closed (an input with \"eof\": true ended it)");
    return;
  }
  if (in.text.empty() && !in.eof) {  // writes nothing; tmux would refuse an empty buffer
    add_waiter(self, in.p, reply);
    return;
  }
  // A native scope's worker charges the text to the scope's input budget first (§4.5).
  if (!st.cfg.budget_db.empty() && !in.charged) {
    self->request(st.peers.store, caf::infinite, store_charge_input{in.text.size()})
        .then(
            [self, in, reply](store_reply& r) {
              if (!r.ok)
                reply.fail(job_errc::internal_error, r.error);
              else if (!r.changed)
                reply.fail(job_errc::input_budget_exhausted,
                           "The input exceeds the scope's input budget");
              else {
                auto charged = in;
                charged.charged = true;
                deliver_input(self, charged, reply);
              }
            },
            [reply](caf::error& e) { reply.fail(job_errc::internal_error, caf::to_string(e)); });
    return;
  }
  if (!is_pty(self)) {
    feed_stdin(self, in, reply);
    return;
  }
  // The terminal: the text pasted, then its EOF character when asked (Ctrl-D, which a
  // program reading the terminal in canonical mode takes as the end of its input).
  std::vector<std::string> lines;
  std::string path;
  if (!in.text.empty()) {
    std::random_device rd;
    char rnd[17];
    std::snprintf(rnd, sizeof rnd, "%08x%08x", rd(), rd());
    path = io::fs::join(st.cfg.runtime_dir, "shellctl-input-" + st.row.job_id + "-" + rnd);
    io::fs::write_file(path, in.text, 0600);  // a failure is answered by the caller's catch
    lines = io::tmux::paste_lines("shellctl-in-" + st.row.job_id, path, pane(self));
  }
  if (in.eof) lines.push_back(io::tmux::eof_line(pane(self)));
  const auto guard = guard_answer(self, reply, std::chrono::seconds(10));
  tmux(self, std::move(lines),
       [self, path, p = in.p, reply, guard, text_bytes = in.text.size()](tmux_reply& r) {
         unguard(self, guard);
         if (!path.empty()) ::unlink(path.c_str());
         auto& st = self->state;
         // delete-buffer after a failed paste fails too; only the first error counts.
         if (!r.ok) {
           if (io::tmux::is_target_missing(r.error)) {
             if (done(self))
               reply.fail(job_errc::job_not_running,
                          "Job " + st.row.job_id + " is already terminal");
             else
               reply.fail(job_errc::tmux_target_missing, r.error);
           } else {
             reply.fail(job_errc::tmux_input_failed, r.error);
           }
           return;
         }
         if (text_bytes > 0) self->send(st.peers.metrics, job_input_event{text_bytes});
         add_waiter(self, p, reply);
       });
}

// ---------------------------------------------------------------- signals and resize (extensions.md §E3, §E4)

// Only a running job has processes of its script to reach: before the gate opens the
// script has not started; a terminal job (or one being terminated) has none left.
bool refused_unless_running(self_ptr self, const answer<job_status_view>& reply) {
  auto& st = self->state;
  if (st.row.status == job_status::running && !st.terminating && st.pane_pid > 0) return false;
  reply.fail(job_errc::job_not_running,
             "Job " + st.row.job_id + " is not running (" + std::string(io::store::status_text(st.row.status)) + ")");
  return true;
}

void serve_request(self_ptr self, const signal_request& req, const answer<job_status_view>& reply) {
  if (refused_unless_running(self, reply)) return;
  // Every process of the job at once (its cgroup, or io/proc/job_processes.hpp); a job
  // that ends meanwhile is answered as it is: its exit is recorded as for any other end.
  io::proc::signal_processes(job_pids(self), req.signo);
  reply_status(self, reply);
}

void serve_request(self_ptr self, const resize_request& req, const answer<job_status_view>& reply) {
  if (done(self)) {
    refused_unless_running(self, reply);
    return;
  }
  if (!is_pty(self)) {
    reply.fail(job_errc::resize_unsupported, "stdio jobs have no terminal to resize");
    return;
  }
  if (refused_unless_running(self, reply)) return;
  const auto guard = guard_answer(self, reply, std::chrono::seconds(10));
  tmux(self, {io::tmux::resize_line(pane(self), req.cols, req.rows)}, [self, reply, guard](tmux_reply& r) {
    unguard(self, guard);
    if (!r.ok) {
      if (done(self) || io::tmux::is_target_missing(r.error))
        refused_unless_running(self, reply);
      else
        reply.fail(job_errc::internal_error, "tmux resize-window: " + r.error);
      return;
    }
    reply_status(self, reply);
  });
}

// ---------------------------------------------------------------- why a job ended

// What the job's cgroup counted against its limits (memory.events, pids.events, cpu.stat,
// where the controllers are); read when the job ends, before its cgroup goes.
void note_limit_events(self_ptr self) {
  auto& st = self->state;
  if (st.cgroup.empty()) return;
  const auto e = io::sandbox::cgroups::read_limit_events(st.cgroup);
  auto& kept = st.limit_events;
  kept.oom_kill = std::max(kept.oom_kill, e.oom_kill);
  kept.memory_oom = std::max(kept.memory_oom, e.memory_oom);
  kept.pids_max = std::max(kept.pids_max, e.pids_max);
  kept.cpu_throttled = std::max(kept.cpu_throttled, e.cpu_throttled);
}

job_activity::end_reason end_reason_of(self_ptr self) {
  auto& st = self->state;
  job_activity::end_reason r;
  if (const auto sig = io::fs::read_small_file(dir(self).file(files::exit_signal)); !sig.empty())
    r.signal = std::atoi(sig.c_str());
  switch (st.row.status) {
    case job_status::failed: r.by = "failed"; break;
    case job_status::lost: r.by = "lost"; break;
    case job_status::terminated:
      r.by = st.ended_by == job_state::end_cause::deadline ? "deadline" : "terminate";
      break;
    default:
      r.by = st.ended_by == job_state::end_cause::deadline  ? "deadline"
             : st.ended_by == job_state::end_cause::terminate ? "terminate"
             // The OOM killer at the job's own memory.max, or the machine's.
             : st.limit_events.oom_kill > 0 && st.limit_events.memory_oom > 0 ? "limit"
             : st.limit_events.oom_kill > 0                                   ? "oom"
             : r.signal > 0                                                   ? "signal"
                                                                              : "exit";
  }
  if (st.limit_events.memory_oom > 0) r.limits_hit.emplace_back("memory_bytes");
  if (st.limit_events.pids_max > 0) r.limits_hit.emplace_back("pids");
  if (st.limit_events.cpu_throttled > 0) r.limits_hit.emplace_back("cpu");
  return r;
}

// GET .../activity (extensions.md §E6): the job's processes and its terminal, read from
// /proc when asked (a kernel state: no event tells it), the pane's size from tmux.
void serve_request(self_ptr self, const activity_request& req, const answer<job_activity>& reply) {
  auto& st = self->state;
  job_activity a;
  a.row = shown_row(self);
  a.offset = io::text::file_size_or_zero(st.output_abs);
  a.idle_seconds = io::text::seconds_since_modified(st.output_abs);
  const bool running = st.row.status == job_status::running && !st.terminating && st.pane_pid > 0;
  if (!running) {
    // A finished job: what its script left running, if anything (io/proc/job_init.hpp),
    // and why it ended.
    if (done(self)) {
      a.processes = leftover_pids(self).size();
      a.ended = end_reason_of(self);
    }
    reply.ok(std::move(a));
    return;
  }
  const auto runner = static_cast<pid_t>(st.pane_pid);
  const auto pids = job_pids(self);
  a.processes = pids.size();
  if (!is_pty(self)) {
    reply.ok(std::move(a));
    return;
  }
  const auto term = io::proc::read_terminal_facts(runner, pids);
  if (term.foreground) a.foreground = job_activity::foreground_process{term.foreground->pid, term.foreground->command};
  // Blocked on the terminal and quiet for an idle flush: a prompt, not a job still printing.
  a.waiting_for_input = term.blocked_on_terminal && a.idle_seconds >= req.idle_flush_s;
  const auto guard = guard_answer(self, reply, std::chrono::seconds(10));
  tmux(self, {io::tmux::pane_size_line(pane(self))}, [self, reply, guard, a = std::move(a)](tmux_reply& r) mutable {
    unguard(self, guard);
    if (auto size = r.ok && !r.output.empty() ? io::tmux::read_pane_size(r.output[0]) : std::nullopt)
      a.terminal = job_activity::terminal_size{size->first, size->second};
    reply.ok(std::move(a));
  });
}

// ---------------------------------------------------------------- requests

void serve_request(self_ptr self, const wait_request& req, const answer<job_result>& reply) {
  add_waiter(self, req.p, reply);
}

void serve_request(self_ptr self, const tail_request& req, const answer<job_result>& reply) {
  auto row = shown_row(self);
  auto win = io::text::read_output_tail(self->state.output_abs, req.limit);
  reply.ok(job_result{std::move(row), self->state.output_abs, std::move(win)});
}

// GET .../stream: a job_stream of its own takes the connection from here on.
void serve_request(self_ptr self, const stream_request& req, const answer<stream_opened>& reply) {
  auto& st = self->state;
  const auto size = io::text::file_size_or_zero(st.output_abs);
  if (req.offset > size) {
    reply.fail(job_errc::invalid_offset, offset_text(req.offset, size));
    return;
  }
  job_stream_settings cfg;
  cfg.job_id = st.row.job_id;
  cfg.output_path = st.output_abs;
  cfg.offset = req.offset;
  cfg.out = req.out;
  auto stream = self->spawn<caf::monitored>(job_stream, std::move(cfg));
  st.streams.push_back(stream);
  self->send(stream, progress_now(self));
  reply.ok(stream_opened{});
}

void serve_request(self_ptr self, const status_request&, const answer<job_status_view>& reply) {
  reply_status(self, reply);
}

void serve_request(self_ptr self, const input_request& req, const answer<job_result>& reply) {
  deliver_input(self, req, reply);
}

void serve_request(self_ptr self, const terminate_request& req,
                   const answer<job_status_view>& reply) {
  auto& st = self->state;
  if (done(self) && !st.terminating) {
    // Answered once the tree is gone too (an end under way, or one that failed before).
    end_job_cgroup(self, [self, reply] {
      kill_session(self);
      when_output_final(self, [self, reply] { reply_status(self, reply); });
    });
    return;
  }
  auto g = guard_answer(self, reply, seconds_ms(req.grace_s) + std::chrono::seconds(10));
  if (st.ended_by == job_state::end_cause::none) st.ended_by = job_state::end_cause::terminate;
  begin_terminate(self, req.grace_s, [self, g, reply] {
    unguard(self, g);
    reply_status(self, reply);
  });
}

void serve_request(self_ptr self, const delete_request& req, const answer<job_deleted>& reply) {
  auto& st = self->state;
  if (!done(self) && !req.force) {
    reply.fail(job_errc::job_running, "Job " + st.row.job_id + " is still running");
    return;
  }
  // A terminate under way (even one whose row is already terminal) ends first: its caller
  // is answered before the job disappears. The removal may wait on the store: bounded like
  // every such answer.
  auto g = guard_answer(self, reply, seconds_ms(req.grace_s) + std::chrono::seconds(10));
  if (!done(self) || st.terminating) {
    begin_terminate(self, req.grace_s, [self, g, reply] { remove_job(self, reply, g); });
    return;
  }
  remove_job(self, reply, g);
}

// Every client request enters here: answered 404 once the job is removed, held while it
// is being removed (never answered while its files still exist), served otherwise.
// An exception must not end the actor (every request queued to it would go unanswered):
// this one request gets internal_error instead.
template <class Request, class Reply>
void serve_or_hold(self_ptr self, const Request& req, const answer<Reply>& reply) {
  auto& st = self->state;
  if (st.phase == job_phase::removed) {
    reply.fail(job_errc::job_not_found, "Unknown job id");
    return;
  }
  if (st.phase == job_phase::removing) {
    st.during_removal.push_back(
        job_state::held_request{[self, req, reply] { serve_or_hold(self, req, reply); }, reply});
    return;
  }
  try {
    serve_request(self, req, reply);
  } catch (const std::exception& e) {
    reply.fail(job_errc::internal_error, e.what());
  }
}

template <class Request, class Reply>
auto request_handler(self_ptr self) {
  return [self](Request& req) -> caf::result<Reply> {
    auto reply = answer_later<Reply>(self);
    serve_or_hold(self, req, reply);
    return reply.promise();
  };
}

}  // namespace

job_actor_type::behavior_type job_actor(job_actor_type::stateful_pointer<job_state> self,
                                        job_settings cfg, job_peers peers, job_row row) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.limits = st.cfg.job_limits;
  st.peers = std::move(peers);
  st.row = std::move(row);
  st.dir = io::fs::join(st.cfg.state_dir, "jobs/" + st.row.job_id);
  st.files = io::fs::job_dir(st.dir);
  st.output_abs = io::fs::join(st.cfg.state_dir, st.row.output_path);
  if (!st.cfg.cgroup_root.empty())
    st.cgroup = io::sandbox::cgroups::job_path(st.cfg.cgroup_root, st.row.job_id);
  st.shown_live_status = done(self) ? job_status::running : st.row.status;
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& streams = self->state.streams;
    streams.erase(std::remove_if(streams.begin(), streams.end(),
                                 [&](const job_stream_actor& s) { return s.address() == dm.source; }),
                  streams.end());
  });
  return {
      // The first message of a new job (the registry delegates its run): start it.
      [self](run_request& req) -> caf::result<job_result> {
        auto& st = self->state;
        auto reply = answer_later<job_result>(self);
        st.run = job_state::pending_run{std::move(req.spec), reply, std::nullopt};
        if (!req.idempotency_key.empty())
          st.run->key = io::store::run_key{req.idempotency_key, st.row.job_id, req.fields_sha256};
        st.admitted_at = job_state::clock::now();
        st.run_arrived = self->clock().now();
        st.timeline.admitted(st.admitted_at);
        move_to(self, job_phase::admitting);
        begin_run(self);
        return reply.promise();
      },
      request_handler<wait_request, job_result>(self),
      request_handler<tail_request, job_result>(self),
      request_handler<status_request, job_status_view>(self),
      request_handler<input_request, job_result>(self),
      request_handler<signal_request, job_status_view>(self),
      request_handler<resize_request, job_status_view>(self),
      request_handler<activity_request, job_activity>(self),
      request_handler<terminate_request, job_status_view>(self),
      request_handler<delete_request, job_deleted>(self),
      request_handler<stream_request, stream_opened>(self),
      [self](info_request&) -> job_info {
        auto r = shown_row(self);
        return {r.job_id, r.status, r.created_at, r.started_at, r.ended_at};
      },
      [self](dir_changed& m) {
        auto& st = self->state;
        // Before the gate can open in this batch: a close from a pipe that a retried start
        // killed must not count against the new one.
        if (m.closed.count(files::output)) output_closed(self);
        if (st.phase == job_phase::awaiting_pipe && m.names.count(files::pipe_ready))
          open_gate(self);
        static const char* const state_files[] = {files::exit_code, files::ended_at,
                                                  files::pipe_drained, files::pipe_failed,
                                                  files::output_overflow};
        for (auto f : state_files)
          if (m.names.count(f)) {
            settle(self);
            break;
          }
        output_may_be_final(self);
        evaluate_waiters(self);
      },
      [self](session_gone& m) {
        auto& st = self->state;
        st.session_alive = false;
        if (st.phase == job_phase::awaiting_pipe) {
          // A start the tmux server's death cut short begins again, unless it is being
          // terminated (a forced delete): then its end is what was asked for.
          if (m.server_died && !st.terminating && retry_start(self)) return;
          fail_start(self, "tmux pane disappeared before the output pipe was ready");
        }
        if (st.terminating) finish_terminate(self);
        settle(self);
        output_may_be_final(self);
        evaluate_waiters(self);
      },
      [self](recover_job& m) -> caf::result<job_recovered> {
        self->state.recovery = answer_later<job_recovered>(self);
        recover(self, m.session_alive);
        return self->state.recovery.promise();
      },
      [self](waiter_tick& m) {
        self->state.waiters.ticked(m.waiter_id);
        evaluate_waiters(self);
      },
      [self](pipe_ready_timeout&) {
        if (self->state.phase == job_phase::awaiting_pipe)
          fail_start(self, "timed out waiting for pipe ready (10s)");
      },
      [self](wall_deadline&) {
        // Terminated at once (no grace): its cgroup is killed, its output kept.
        if (done(self) || self->state.terminating) return;
        warn(self, "the scope's job wall deadline passed: terminated");
        self->state.ended_by = job_state::end_cause::deadline;
        begin_terminate(self, 0, [] {});
      },
      [self](terminate_deadline& m) {
        if (m.generation == self->state.terminate_generation) finish_terminate(self);
      },
      [self](retire&) { self->quit(); },
      [self](finalizer_timeout&) {
        self->state.finalizer_expired = true;
        settle(self);
      },
      [self](store_retry_tick&) { retry_store_request(self); },
      [self](settle_retry&) {
        self->state.settle_retry_armed = false;
        settle(self);
        output_may_be_final(self);
        evaluate_waiters(self);
      },
      [self](remove_retry_tick&) {
        auto retry = std::move(self->state.remove_retry);
        self->state.remove_retry = nullptr;
        if (retry) retry();
      },
      [self](answer_deadline& m) { answer_guard_expired(self, m.guard_id); },
      [self](start_deadline&) {
        auto& st = self->state;
        if (!starting(self) || st.start_failed || st.start_abandoned) return;  // started, or failed
        if (st.store_failing) {
          abandon_start(self);
          return;
        }
        // Slow is not stuck: tmux answering other starts one after another is busy, and
        // this start goes on (looked at again each second); tmux silent for 5 s while owed
        // answers is stopped or hung, and the start fails.
        self->request(st.peers.tmux, caf::infinite, tmux_silence_query{})
            .then([self](tmux_silence& quiet) {
              auto& st = self->state;
              if (!starting(self) || st.start_failed || st.start_abandoned) return;
              if (quiet.ms >= st.cfg.pipe_ready_timeout.count() / 2) {
                abandon_start(self);
                return;
              }
              self->delayed_send(self, std::chrono::seconds(1), start_deadline{});
            });
      },
      [self](run_deadline&) {
        auto& st = self->state;
        if (!st.run || !st.run->reply.pending() || !starting(self)) return;
        if (st.row_stored) {
          answer_run_in_progress(self);
          return;
        }
        // Not even its row is stored by now: the store is stuck, and the start is given up
        // (its run hears within 5 s: the failed job, or a 503 saying it will be failed).
        abandon_start(self);
      },
      [self](output_final_deadline&) {
        // The finalizer never marked the pipe's end (killed with a tmux server, say): the
        // log is final as it is.
        self->state.output_deadline = true;
        output_may_be_final(self);
        evaluate_waiters(self);
      },
      [self](collect_if_expired& m) {
        auto& st = self->state;
        if (done(self) && st.row.ended_at && *st.row.ended_at <= m.cutoff && !st.busy &&
            !st.terminating)
          remove_job(self, std::nullopt);
      },
      [self](shutdown_jobs&) {
        // Server shutdown: the job keeps running in tmux; open long-polls get what exists.
        for (auto& w : self->state.waiters.take_all()) answer_window(self, w, shown_done(self));
        answer_everything_held(self, "the server is shutting down");
        for (auto& held : self->state.during_removal)
          held.reply.fail(job_errc::unavailable, "the server is shutting down");
        self->state.during_removal.clear();
        for (auto& s : self->state.streams) self->send(s, shutdown_jobs{});
        // A piped stdin goes with the server that holds it (the job reads EOF).
        close_stdin_pipe(self);
        self->quit();
      },
  };
}

}  // namespace shellctl::actors
