// A job's end as a client or retention asks for it (docs/jobs.md "Terminate and delete",
// "Retention"): a terminate (^C, then the whole tree after the grace) runs beside the
// phase; a removal is a phase (the tree ends, the row goes, then the files); the actor's
// own end answers everything it still holds.
#include <chrono>

#include "actors/jobs/job_actor/sections.hpp"
#include "io/fs/files.hpp"
#include "io/fs/home_views.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors::job {

namespace {

// The run a start still owes, taken out of the phase that holds it (a start, a failing
// one, or a removal that cut a start short).
std::optional<pending_run> take_run(self_ptr self) {
  auto& st = self->state;
  std::optional<pending_run> run;
  if (auto* s = std::get_if<phases::starting>(&st.phase)) run = std::move(s->run);
  if (auto* f = std::get_if<phases::failing_start>(&st.phase)) run = std::move(f->run);
  if (auto* r = std::get_if<phases::removing>(&st.phase)) run = std::move(r->run);
  return run;
}

// Before the actor quits, every answer it still holds is given: an answer it took along
// would leave its client waiting for the edge's request timeout.
void answer_everything_held(self_ptr self, std::string_view why, std::optional<pending_run> run) {
  auto& st = self->state;
  // Continuations first: they answer (terminate, forced delete) with the last row. The log
  // is taken as it is.
  if (auto* open = std::get_if<output_finality::open>(&st.output.at)) {
    open->deadline_passed = true;
    refresh_output(self);
  }
  if (auto* open = std::get_if<output_finality::open>(&st.output.at)) {
    auto waiting = std::move(open->then);
    open->then.clear();
    for (auto& c : waiting) c();
  }
  if (st.terminating) {
    auto waiting = std::move(st.terminating->then);
    st.terminating.reset();
    for (auto& c : waiting) c();
  }
  // A start cut short (a forced delete, a shutdown): the job's result as it stands.
  if (run) run->reply.ok(result_window(self, io::text::output_window{"", 0, false}));
  for (auto& [id, g] : st.guarded_answers)
    g.reply.fail(job_errc::unavailable, std::string(why));  // a no-op when answered
  st.guarded_answers.clear();
}

// The registry has forgotten the job: everything still waiting learns it is gone. Requests
// the registry forwarded before that are ahead of `retire` in the mailbox and get 404 too.
void finish_removal(self_ptr self) {
  auto& st = self->state;
  std::vector<held_request> held;
  std::optional<pending_run> run;
  if (auto* removal = std::get_if<phases::removing>(&st.phase)) {
    held = std::move(removal->held);
    run = std::move(removal->run);
  }
  enter(self, phases::removed{});
  for (auto& w : st.waiters.take_all()) w.answer.fail(job_errc::job_not_found, "Unknown job id");
  for (auto& h : held) h.reply.fail(job_errc::job_not_found, "Unknown job id");
  answer_everything_held(self, "the job was removed", std::move(run));
  recovery_settled(self);
  close_stdin_pipe(self);
  self->send(self, retire{});
}

using delete_answer = std::optional<answer<job_deleted>>;

// The row goes first (a crash then leaves only a directory, removed at startup). A write
// that fails for a passing reason is retried until it succeeds; on a full disk the job's
// files go right away to make room (a row left without its directory is a delete that a
// restart completes).
void remove_row(self_ptr self, delete_answer reply, std::uint64_t guard, std::chrono::milliseconds backoff) {
  auto& st = self->state;
  auto answered = [self, reply, guard, backoff](const store_result& r) {
        auto& st = self->state;
        auto* removal = std::get_if<phases::removing>(&st.phase);
        if (!r && is_job_error(r.error(), job_errc::storage_unavailable)) {
          if (!store_failing(self)) warn(self, "store: " + error_text(r.error()) + "; retrying the delete");
          remove_job_files(self);
          auto next = std::min(std::max(backoff * 2, std::chrono::milliseconds(100)),
                               std::chrono::milliseconds(2000));
          if (removal) removal->retry = [self, reply, guard, next] { remove_row(self, reply, guard, next); };
          self->delayed_send(self, next, remove_retry_tick{});
          return;
        }
        unguard(self, guard);
        if (!r) {
          // The one move back: the job still exists, as it was (its row is terminal), and
          // the requests that waited are served normally.
          std::vector<held_request> held;
          std::optional<pending_run> run;
          if (removal) {
            held = std::move(removal->held);
            run = std::move(removal->run);
          }
          enter(self, phases::live{});
          if (reply) reply->fail(job_errc::internal_error, error_text(r.error()));
          if (run) run->reply.ok(result_window(self, io::text::output_window{"", 0, false}));
          for (auto& h : held) h.serve();
          return;
        }
        if (removal) removal->retry = nullptr;
        notify_streams(self, true);  // their exit event, before the log goes
        remove_job_files(self);
        const bool changed = r->changed;
        if (changed) log_lifecycle(self, "deleted");
        if (st.watching) self->send(st.peers.watcher, unwatch_dir{st.dir});
        st.watching = false;
        self->request(st.peers.registry, caf::infinite, job_removed{st.row.job_id})
            .then([self, reply, changed](removal_ack&) {
              finish_removal(self);
              if (!reply) return;
              if (changed)
                reply->ok(job_deleted{self->state.row.job_id});
              else
                reply->fail(job_errc::job_not_found, "Unknown job id");
            });
  };
  self->request(st.peers.store, caf::infinite, store_remove{st.row.job_id})
      .then([answered](store_outcome& out) { answered(store_result{std::move(out)}); },
            [answered](caf::error& e) { answered(store_result{std::move(e)}); });
}

}  // namespace

// The job's directory and its same-HOME view entry (io/fs/home_views.hpp).
void remove_job_files(self_ptr self) {
  self->send(self->state.peers.cleanup,
             remove_tree{io::fs::move_aside(self->state.dir, self->state.cfg.trash_dir())});
  io::fs::unlink_from_home_views(self->state.cfg.state_dir, self->state.row.job_id);
}

// A removal's retry timer: the row removal again (the closure stays until an answer
// replaces it, so that the store counts as failing meanwhile).
void retry_row_removal(self_ptr self) {
  if (auto* removal = std::get_if<phases::removing>(&self->state.phase); removal && removal->retry) {
    auto again = removal->retry;
    again();
  }
}

// The job never got a row: leave the registry and stop.
void abandon(self_ptr self) {
  enter(self, phases::removing{take_run(self), {}, {}});
  self->request(self->state.peers.registry, caf::infinite, job_removed{self->state.row.job_id})
      .then([self](removal_ack&) { finish_removal(self); });
}

void remove_job(self_ptr self, delete_answer reply, std::uint64_t guard) {
  auto& st = self->state;
  if (auto* removal = std::get_if<phases::removing>(&st.phase)) {
    // A delete racing another removal: answered when that one is complete (404 then).
    if (reply) removal->held.push_back(held_request{[self, r = *reply] { remove_job(self, r); }, *reply});
    return;
  }
  if (std::holds_alternative<phases::removed>(st.phase)) {
    if (reply) reply->fail(job_errc::job_not_found, "Unknown job id");
    return;
  }
  enter(self, phases::removing{take_run(self), {}, {}});
  // Nothing of a job survives its deletion: its tree ends before its row goes.
  end_job_cgroup(self, [self, reply = std::move(reply), guard] {
    kill_session(self);
    remove_row(self, reply, guard, std::chrono::milliseconds(0));
  });
}

void begin_terminate(self_ptr self, double grace_s, std::function<void()> then) {
  auto& st = self->state;
  if (st.terminating) {  // a terminate is already under way: share its end
    st.terminating->then.push_back(std::move(then));
    return;
  }
  st.terminating = terminate_run{++st.terminates_begun, {}};
  st.terminating->then.push_back(std::move(then));
  const auto generation = st.terminating->generation;
  apply(self,
        transition{job_status::terminated,
                   {job_status::created, job_status::starting, job_status::running, job_status::exited},
                   {}, {}, {}, false},
        [self, grace_s, generation](const store_result&) {
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
                             terminate_deadline{generation});
        });
}

// The process group is gone (session ended) or the grace ran out: make sure nothing of
// the job survives, then answer.
void finish_terminate(self_ptr self) {
  auto& st = self->state;
  if (!st.terminating) return;
  auto waiting = std::move(st.terminating->then);
  st.terminating.reset();
  // The whole tree first: a setsid or double-forked daemon is in the cgroup too.
  end_job_cgroup(self, [self, waiting = std::move(waiting)]() mutable {
    auto& st = self->state;
    // Also when the session is gone: members of the pane's process group that ignore
    // SIGHUP outlive the pane (D9 promises nothing of the job survives). The group's id
    // is not reused while any member lives.
    if (st.pane_pid > 0) io::tmux::kill_pane_process_group(st.pane_pid, st.dir);
    kill_session(self);
    // Answered once the output is final: the ^C echo and whatever the job printed while
    // it ended are in the log before any answer says done.
    when_output_final(self, [waiting = std::move(waiting)] {
      for (auto& c : waiting) c();
    });
  });
}

void serve_request(self_ptr self, const terminate_request& req, const answer<job_status_view>& reply) {
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

void collect_if_done_before(self_ptr self, const std::string& cutoff) {
  auto& st = self->state;
  if (done(self) && st.row.ended_at && *st.row.ended_at <= cutoff && !store_busy(self) && !st.terminating)
    remove_job(self, std::nullopt);
}

// Server shutdown: the job keeps running in tmux; open long-polls get what exists.
void shut_down(self_ptr self) {
  auto& st = self->state;
  for (auto& w : st.waiters.take_all()) answer_window(self, w, shown_done(self));
  std::vector<held_request> held;
  if (auto* removal = std::get_if<phases::removing>(&st.phase)) held = std::move(removal->held);
  answer_everything_held(self, "the server is shutting down", take_run(self));
  for (auto& h : held) h.reply.fail(job_errc::unavailable, "the server is shutting down");
  for (auto& s : st.streams) self->send(s, shutdown_jobs{});
  // A piped stdin goes with the server that holds it (the job reads EOF).
  close_stdin_pipe(self);
  self->quit();
}

}  // namespace shellctl::actors::job
