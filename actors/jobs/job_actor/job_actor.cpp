// The job actor's message table: which section each request and event reaches
// (actors/jobs/job_actor/job_actor.hpp), the phase's one way of changing, and the log.
#include "actors/jobs/job_actor/job_actor.hpp"

#include <algorithm>
#include <tuple>

#include "actors/jobs/job_actor/sections.hpp"
#include "actors/protocol/job_requests.hpp"
#include "io/fs/files.hpp"
#include "io/sandbox/cgroups.hpp"

namespace shellctl::actors {
namespace job {

namespace files = io::fs::job_files;

// ---------------------------------------------------------------- the phase

job_phase phase_of(const phase_state& phase) {
  struct namer {
    job_phase operator()(const phases::spawned&) const { return job_phase::spawned; }
    job_phase operator()(const phases::starting& s) const { return s.step; }
    job_phase operator()(const phases::failing_start&) const { return job_phase::failing_start; }
    job_phase operator()(const phases::live&) const { return job_phase::live; }
    job_phase operator()(const phases::removing&) const { return job_phase::removing; }
    job_phase operator()(const phases::removed&) const { return job_phase::removed; }
  };
  return std::visit(namer{}, phase);
}

job_phase phase_of(const job_state& st) { return phase_of(st.phase); }

phases::starting* start_of(self_ptr self) { return std::get_if<phases::starting>(&self->state.phase); }

bool in_removal(self_ptr self) {
  const auto p = phase_of(self->state);
  return p == job_phase::removing || p == job_phase::removed;
}

bool enter(self_ptr self, phase_state next) {
  auto& st = self->state;
  const auto from = phase_of(st);
  const auto to = phase_of(next);
  if (in_removal(self) && to != job_phase::removed && !(from == job_phase::removing && to == job_phase::live))
    return false;
  if (!can_move(from, to))
    warn(self, "unexpected phase change " + std::string(phase_name(from)) + " -> " + std::string(phase_name(to)));
  st.phase = std::move(next);
  return true;
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

namespace {

// Every client request enters here: answered 404 once the job is removed, held while it
// is being removed (never answered while its files still exist), served otherwise, from
// the output's state as the facts stand now. An exception must not end the actor (every
// request queued to it would go unanswered): this one request gets internal_error instead.
template <class Request, class Reply>
void serve_or_hold(self_ptr self, const Request& req, const answer<Reply>& reply) {
  auto& st = self->state;
  if (std::holds_alternative<phases::removed>(st.phase)) {
    reply.fail(job_errc::job_not_found, "Unknown job id");
    return;
  }
  if (auto* removal = std::get_if<phases::removing>(&st.phase)) {
    removal->held.push_back(held_request{[self, req, reply] { serve_or_hold(self, req, reply); }, reply});
    return;
  }
  try {
    refresh_output(self);
    serve_request(self, req, reply);
  } catch (const std::exception& e) {
    reply.fail(job_errc::internal_error, e.what());
  }
}

// One handler for each of job_request_interface's requests: serve_or_hold, then the
// section's serve_request overload for it.
struct request_handler {
  self_ptr self;
  template <class Request, class Reply>
  auto operator()() const {
    return [self = self](Request& req) -> caf::result<Reply> {
      auto reply = answer_later<Reply>(self);
      serve_or_hold(self, req, reply);
      return reply.promise();
    };
  }
};

}  // namespace
}  // namespace job

job_actor_type::behavior_type job_actor(job_actor_type::stateful_pointer<job_state> self,
                                        job_settings cfg, job_peers peers, job_row row) {
  using namespace job;
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.limits = st.cfg.job_limits;
  st.peers = std::move(peers);
  st.row = std::move(row);
  st.dir = io::fs::join(st.cfg.state_dir, "jobs/" + st.row.job_id);
  st.files = io::fs::job_dir(st.dir);
  st.output_abs = io::fs::join(st.cfg.state_dir, st.row.output_path);
  if (!st.cfg.cgroup_root.empty())
    st.cgroup_path = io::sandbox::cgroups::job_path(st.cfg.cgroup_root, st.row.job_id);
  st.shown_live_status = done(self) ? job_status::running : st.row.status;
  // An exception outside a request's own handler (serve_or_hold catches those) ends the
  // actor; the log says why, and every answer it held answers internal_error as it goes
  // (held_answer).
  self->set_exception_handler([self](std::exception_ptr& ep) -> caf::error {
    std::string what = "an exception of an unknown type";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    warn(self, "the job's actor ended by an exception: " + what);
    return make_job_error(job_errc::internal_error, what);
  });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& streams = self->state.streams;
    streams.erase(std::remove_if(streams.begin(), streams.end(),
                                 [&](const job_stream_actor& s) { return s.address() == dm.source; }),
                  streams.end());
  });
  return std::apply([self](auto... job_requests) -> job_actor_type::behavior_type {
    return {
      // ---- a new job: the registry delegates its run; the answer comes from the start.
      [self](run_request& req) -> caf::result<job_result> {
        auto reply = answer_later<job_result>(self);
        pending_run run{std::move(req.spec), reply, std::nullopt, job_state::clock::now(), self->clock().now(), 0};
        if (!req.idempotency_key.empty())
          run.key = io::store::run_key{req.idempotency_key, self->state.row.job_id, req.fields_sha256};
        begin_run(self, std::move(run));
        return reply.promise();
      },
      // ---- a job found at startup: answered once its first settle is done.
      [self](recover_job& m) -> caf::result<job_recovered> {
        self->state.recovery = answer_later<job_recovered>(self);
        recover(self, m.session_alive);
        return self->state.recovery.promise();
      },
      // ---- client requests (control.cpp, removal.cpp): every one of job_request_interface
      job_requests...,
      [self](info_request&) -> job_info {
        refresh_output(self);
        auto r = shown_row(self);
        return {r.job_id, r.status, r.created_at, r.started_at, r.ended_at};
      },
      // ---- what the job's files and its session tell
      [self](dir_changed& m) {
        // Before the gate can open in this batch: a close from a pipe that a retried start
        // killed must not count against the new one.
        if (m.closed.count(files::output)) output_closed(self);
        if (phase_of(self->state) == job_phase::awaiting_pipe && m.names.count(files::pipe_ready)) open_gate(self);
        static const char* const state_files[] = {files::exit_code, files::ended_at, files::pipe_drained,
                                                  files::pipe_failed, files::output_overflow};
        for (auto f : state_files)
          if (m.names.count(f)) {
            settle(self);
            break;
          }
        after_news(self);
      },
      [self](session_gone& m) {
        auto& st = self->state;
        st.session_alive = false;
        if (phase_of(st) == job_phase::awaiting_pipe) {
          // A start the tmux server's death cut short begins again, unless it is being
          // terminated (a forced delete): then its end is what was asked for.
          if (m.server_died && !st.terminating && retry_start(self)) return;
          fail_start(self, "tmux pane disappeared before the output pipe was ready");
        }
        if (st.terminating) finish_terminate(self);
        settle(self);
        after_news(self);
      },
      // ---- timers (sent by the actor to itself)
      [self](waiter_tick& m) {
        self->state.waiters.ticked(m.waiter_id);
        evaluate_waiters(self);
      },
      [self](pipe_ready_timeout&) { on_pipe_ready_timeout(self); },
      [self](start_deadline&) { on_start_deadline(self); },
      [self](run_deadline&) { on_run_deadline(self); },
      [self](wall_deadline&) {
        // Terminated at once (no grace): its cgroup is killed, its output kept.
        if (done(self) || self->state.terminating) return;
        warn(self, "the scope's job wall deadline passed: terminated");
        self->state.ended_by = job_state::end_cause::deadline;
        begin_terminate(self, 0, [] {});
      },
      [self](terminate_deadline& m) {
        if (self->state.terminating && m.generation == self->state.terminating->generation) finish_terminate(self);
      },
      [self](finalizer_timeout&) {
        self->state.finalizer = finalizer_wait::expired;
        settle(self);
      },
      [self](output_final_deadline&) {
        // The finalizer never marked the pipe's end (killed with a tmux server, say): the
        // log is final as it is.
        if (auto* open = std::get_if<output_finality::open>(&self->state.output.at)) open->deadline_passed = true;
        after_news(self);
      },
      [self](store_retry_tick&) { retry_store_write(self); },
      [self](remove_retry_tick&) { retry_row_removal(self); },
      [self](settle_retry&) {
        self->state.settle_retry_armed = false;
        settle(self);
        after_news(self);
      },
      [self](answer_deadline& m) { answer_guard_expired(self, m.guard_id); },
      // ---- from the registry
      [self](collect_if_expired& m) { collect_if_done_before(self, m.cutoff); },
      [self](retire&) { self->quit(); },
      [self](shutdown_jobs&) { shut_down(self); },
    };
  }, job_request_handlers(request_handler{self}));
}

}  // namespace shellctl::actors
