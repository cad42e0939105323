// The job actor's link to the store and tmux, the settle rules carried out, and the end
// of the job's cgroup (docs/jobs.md "Settling the status", "Containment").
#include <algorithm>

#include "actors/jobs/job_actor/sections.hpp"
#include "actors/jobs/job_actor/settle_rules.hpp"
#include "io/proc/job_processes.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/text/clock.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors::job {

namespace files = io::fs::job_files;

// ---------------------------------------------------------------- the store link

const job_row& known_row(self_ptr self) {
  auto& st = self->state;
  if (auto* r = std::get_if<store_link::retrying>(&st.store.at); r && r->expected) return *r->expected;
  return st.row;
}

bool known_done(self_ptr self) { return io::store::is_terminal(known_row(self).status); }

bool store_busy(self_ptr self) { return !std::holds_alternative<store_link::idle>(self->state.store.at); }

bool store_failing(self_ptr self) {
  auto& st = self->state;
  if (std::holds_alternative<store_link::retrying>(st.store.at)) return true;
  auto* removal = std::get_if<phases::removing>(&st.phase);
  return removal && removal->retry;
}

namespace {

bool settle_after_of(const store_link& s) {
  if (auto* w = std::get_if<store_link::writing>(&s.at)) return w->settle_after;
  if (auto* r = std::get_if<store_link::retrying>(&s.at)) return r->settle_after;
  return false;
}

// Every status change goes through here. A write that fails for a passing reason (disk
// full, I/O error, busy) is retried until it succeeds, 100 ms doubling to 2 s apart; the
// link stays `retrying` through the retries, and answers show `expected` meanwhile. Store
// requests are unbounded: the detached store answers every one, after at most its busy
// timeout; what a client waits for is bounded by its answer's guard instead.
template <class Message>
void store_write(self_ptr self, Message msg, std::function<void(const store_result&)> then,
                 std::optional<job_row> expected, std::chrono::milliseconds backoff) {
  auto& st = self->state;
  if (auto* r = std::get_if<store_link::retrying>(&st.store.at))
    r->again = nullptr;  // this is the retry: still failing until an answer says otherwise
  else
    st.store.at = store_link::writing{settle_after_of(st.store)};
  auto answered = [self, msg, then, expected, backoff](const store_result& r) {
    auto& st = self->state;
    if (!r && is_job_error(r.error(), job_errc::storage_unavailable)) {
      auto* failing = std::get_if<store_link::retrying>(&st.store.at);
      if (!failing) warn(self, "store: " + error_text(r.error()) + "; retrying until it succeeds");
      const auto next = std::min(std::max(backoff * 2, std::chrono::milliseconds(100)),
                                 std::chrono::milliseconds(2000));
      std::optional<job_row> shown = expected;
      if (!shown && failing) shown = failing->expected;
      st.store.at = store_link::retrying{
          settle_after_of(st.store),
          [self, msg, then, expected, next] { store_write(self, msg, then, expected, next); },
          std::move(shown)};
      self->delayed_send(self, next, store_retry_tick{});
      after_news(self);  // what is known may have changed
      return;
    }
    const bool was_failing = std::holds_alternative<store_link::retrying>(st.store.at);
    const bool settle_after = settle_after_of(st.store);
    st.store.at = store_link::idle{};
    if (was_failing) warn(self, "store: writing again");
    if (r && r->row) {
      if (!done(self)) st.shown_live_status = st.row.status;
      const auto before = st.row.status;
      st.row = *r->row;
      if (st.row.status != before) log_lifecycle(self, io::store::status_text(st.row.status));
      // The job is over (failed, lost): nothing it started outlives it. One whose script
      // exited keeps what it left running (a nohup'd or setsid daemon, io/proc/job_init.hpp)
      // until it is terminated, removed or found lost. A terminate ends the tree itself,
      // after its grace.
      if (done(self) && before != st.row.status) note_limit_events(self);
      if (done(self) && !st.terminating && !keeps_leftovers(self)) end_job_cgroup(self);
      if (done(self)) close_stdin_pipe(self);
    }
    if (!r) warn(self, "store: " + error_text(r.error()));
    refresh_output(self);  // what follows answers from the row as it is now
    then(r);
    release_watch_if_settled(self);
    if (settle_after && !in_removal(self)) settle(self);
    after_news(self);
  };
  self->request(st.peers.store, caf::infinite, msg)
      .then([answered](store_outcome& out) { answered(store_result{std::move(out)}); },
            [answered](caf::error& e) { answered(store_result{std::move(e)}); });
}

}  // namespace

void retry_store_write(self_ptr self) {
  auto* r = std::get_if<store_link::retrying>(&self->state.store.at);
  if (!r || !r->again) return;
  auto again = std::move(r->again);
  r->again = nullptr;
  again();
}

void apply(self_ptr self, transition t, std::function<void(const store_result&)> then) {
  auto expected = io::store::preview_apply(known_row(self), t, io::text::utc_now());
  store_write(self, store_apply{self->state.row.job_id, std::move(t)},
              [then](const store_result& r) {
                if (then) then(r);
              },
              expected, std::chrono::milliseconds(0));
}

void record_exit(self_ptr self, std::int64_t code, const std::string& ended_at,
                 std::function<void(const store_result&)> then) {
  auto& r = self->state.row;
  self->state.timeline.mark(job_mark::exit_seen);
  store_write(self, store_record_exit{r.job_id, code, ended_at},
              [self, then](const store_result& rep) {
                self->state.timeline.mark(job_mark::exit_recorded);
                if (then) then(rep);
              },
              io::store::preview_record_exit(known_row(self), code, ended_at), std::chrono::milliseconds(0));
}

void store_insert_row(self_ptr self, store_insert msg, std::function<void(const store_result&)> then) {
  store_write(self, std::move(msg), std::move(then), std::nullopt, std::chrono::milliseconds(0));
}

// ---------------------------------------------------------------- tmux

void tmux(self_ptr self, std::vector<std::string> lines, std::function<void(tmux_result&)> then,
          std::string creates_session) {
  // Unbounded like the store's: tmux_server answers every command (with an error when
  // tmux cannot be restarted); client answers are bounded by their guards.
  self->request(self->state.peers.tmux, caf::infinite,
                tmux_command{std::move(lines), creates_session,
                             creates_session.empty() ? session_owner{}
                                                     : caf::actor_cast<session_owner>(self)})
      .then(
          [then](tmux_output& out) {
            tmux_result r{std::move(out)};
            if (then) then(r);
          },
          [then](caf::error& e) {
            // tmux_server's own errors, or CAF's when tmux_server itself is gone.
            tmux_result r{e.category() == tmux_error_category
                              ? std::move(e)
                              : make_tmux_error(tmux_errc::unavailable, "no server running (tmux_server unavailable)")};
            if (then) then(r);
          });
}

void kill_session(self_ptr self) {
  tmux(self, {io::tmux::kill_session_line(self->state.row.session_name)}, {});
}

// ---------------------------------------------------------------- settling the status

void recovery_settled(self_ptr self) { self->state.recovery.ok(job_recovered{}); }

// The rules are actors/jobs/job_actor/settle_rules.hpp; here the facts are gathered and the
// decision carried out.
void settle(self_ptr self) {
  auto& st = self->state;
  if (in_removal(self)) return;  // the removal answers a recovery
  if (store_busy(self)) {
    std::visit([](auto& s) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, store_link::idle>) s.settle_after = true;
    }, st.store.at);
    return;
  }
  auto& r = st.row;
  job_facts facts{r.status,      r.exit_code.has_value(),         r.ended_at.has_value(),
                  is_pty(self),  is_starting(phase_of(st)),        st.session_alive,
                  st.finalizer == finalizer_wait::expired};
  std::optional<disk_facts> disk;
  if (needs_disk(facts)) {
    disk.emplace();
    disk->drained_marker = has(self, files::pipe_drained);
    disk->failed_marker = has(self, files::pipe_failed);
    disk->overflow_marker = has(self, files::output_overflow);
    disk->record = dir(self).read_exit_record();
  }
  // A recovery waits for the decision's write (the startup retention GC reads the rows).
  auto stored = [self](const store_result&) { recovery_settled(self); };
  switch (decide_settle(facts, disk)) {
    case settle_action::nothing:
      recovery_settled(self);
      return;
    case settle_action::fill_ended_at:
      apply(self, transition{r.status, {r.status}, {}, {}, {}, false}, stored);
      return;
    case settle_action::exited_from_code:
      apply(self, transition{job_status::exited, live_statuses(), {}, {}, {}, false}, stored);
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
      // The whole tree goes: with the row terminal, its cgroup is ended; without one, the
      // pane's process group (the runner, whose init takes the namespace with it).
      if (st.cgroup_path.empty() && st.pane_pid > 0)
        io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
      apply(self, transition{job_status::failed, live_statuses(), std::string("output_budget_exhausted"),
                             std::string("The job's output exceeded the scope's output budget; "
                                         "it was stopped."),
                             {}, false},
            stored);
      return;
    case settle_action::pipe_failed:
      apply(self, transition{job_status::failed, live_statuses(), std::string("pipe_failed"),
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
      if (st.finalizer == finalizer_wait::none) {
        st.finalizer = finalizer_wait::armed;
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
      apply(self, transition{job_status::lost, live_statuses(), std::string("tmux_session_missing"),
                             std::string("The dedicated tmux session is no longer present."),
                             {}, false},
            stored);
      return;
    }
  }
}

// ---------------------------------------------------------------- the job's cgroup

bool cgroup_exists(self_ptr self) {
  return !std::holds_alternative<cgroup_life::absent>(self->state.cgroup.at);
}

// Ends the job's whole tree (cgroup.kill, populated 0, rmdir: actors/services/cgroup_reaper.hpp),
// then runs `then`. At once when there is no cgroup; a second caller shares the end under
// way. A cgroup that did not empty in time is logged and stays present: the next end (or
// the next startup's orphan sweep) tries again; `then` runs either way, so that no client
// waits forever on a process stuck in the kernel.
void end_job_cgroup(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (std::holds_alternative<cgroup_life::absent>(st.cgroup.at)) {
    if (then) then();
    return;
  }
  if (auto* ending = std::get_if<cgroup_life::ending>(&st.cgroup.at)) {
    if (then) ending->then.push_back(std::move(then));
    return;
  }
  cgroup_life::ending ending;
  if (then) ending.then.push_back(std::move(then));
  st.cgroup.at = std::move(ending);
  auto finished = [self](bool ok, const std::string& error) {
    auto& st = self->state;
    auto conts = std::move(std::get<cgroup_life::ending>(st.cgroup.at).then);
    if (ok) {
      st.cgroup.at = cgroup_life::absent{};
    } else {
      st.cgroup.at = cgroup_life::present{};
      warn(self, "cgroup " + st.cgroup_path + " not ended: " + error);
    }
    for (auto& c : conts) c();
  };
  self->request(st.peers.reaper, caf::infinite, end_cgroup{st.cgroup_path})
      .then([finished](cgroup_ended&) { finished(true, ""); },
            [finished](caf::error& e) { finished(false, error_text(e)); });
}

// What an exited job left running that outlives its script (io/proc/job_init.hpp), from its
// cgroup's subtree; none without a cgroup.
std::vector<pid_t> leftover_pids(self_ptr self) {
  if (!cgroup_exists(self)) return {};
  return io::proc::leftover_processes(io::sandbox::cgroups::subtree_procs(self->state.cgroup_path));
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
  if (cgroup_exists(self))
    return io::proc::cgroup_job_processes(runner, io::sandbox::cgroups::subtree_procs(st.cgroup_path));
  return io::proc::job_processes(runner, st.dir);
}

// What the job's cgroup counted against its limits (memory.events, pids.events, cpu.stat,
// where the controllers are); read when the job ends, before its cgroup goes.
void note_limit_events(self_ptr self) {
  auto& st = self->state;
  if (st.cgroup_path.empty()) return;
  const auto e = io::sandbox::cgroups::read_limit_events(st.cgroup_path);
  auto& kept = st.limit_events;
  kept.oom_kill = std::max(kept.oom_kill, e.oom_kill);
  kept.memory_oom = std::max(kept.memory_oom, e.memory_oom);
  kept.pids_max = std::max(kept.pids_max, e.pids_max);
  kept.cpu_throttled = std::max(kept.cpu_throttled, e.cpu_throttled);
}

}  // namespace shellctl::actors::job
