// A job's start (docs/jobs.md "Starting a job", "The output pipe"): its files, its row, the
// watch on its directory, its cgroup and tmux session, the PTY pipe's handshake, then the
// gate that lets the runner go. Every step, when its answer arrives, asks start_cut_short
// whether the start goes on.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "actors/jobs/job_actor/sections.hpp"
#include "actors/jobs/job_actor/stdin_feeder.hpp"
#include "io/fs/files.hpp"
#include "io/fs/home_views.hpp"
#include "io/json/json.hpp"
#include "io/proc/stdin_pipe.hpp"
#include "io/sandbox/cgroups.hpp"
#include "io/text/clock.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors::job {

namespace files = io::fs::job_files;

namespace {

// How long past its timeout a run whose start is still under way waits for it, before it
// answers without it: a start that completes in this time answers as a run always did
// (running, or done), and the answer still comes well within the client's read timeout
// (the run's timeout plus 10 s, docs/compatibility.md "The client contract").
constexpr std::chrono::seconds run_answer_grace{3};

// A start's step within the starting phase (job_phase.hpp's moves).
void step_to(self_ptr self, job_phase step) {
  auto* start = start_of(self);
  if (!start) return;
  if (!can_move(start->step, step))
    warn(self, "unexpected phase change " + std::string(phase_name(start->step)) + " -> " +
                   std::string(phase_name(step)));
  start->step = step;
}

// The failed row is written; meanwhile the phase is failing_start, so that settle() does
// not decide. Then what the start began is undone and its run (if any) answered.
void record_start_failure(self_ptr self, const std::string& message, std::optional<pending_run> run) {
  enter(self, phases::failing_start{std::move(run)});
  apply(self,
        transition{job_status::failed, live_statuses(), std::string("start_failed"), message, {}, false},
        [self](const store_result&) {
          std::optional<pending_run> run;
          if (auto* failing = std::get_if<phases::failing_start>(&self->state.phase)) {
            run = std::move(failing->run);
            enter(self, phases::live{});
          }
          undo_start(self);
          answer_run(self, run);
          recovery_settled(self);  // an interrupted start, found by recovery
        });
}

// The start is complete (its row says running): the run's answer comes as a wait's would.
void start_complete(self_ptr self) {
  auto& st = self->state;
  st.timeline.mark(job_mark::running_stored);
  dir(self).forget(files::pipe_ready);
  std::optional<pending_run> run;
  if (auto* start = start_of(self)) {
    const std::chrono::duration<double> took = job_state::clock::now() - start->run.admitted_at;
    self->send(st.peers.metrics, job_started_event{st.row.mode, took.count()});
    run = std::move(start->run);
    enter(self, phases::live{});
  }
  arm_wall_deadline(self);
  answer_run(self, run);
  settle(self);
}

// The run's timeout passed while its start is under way (a busy machine: a hundred starts
// queued at one tmux server). Its answer is the job as it stands: its id, "created" or
// "starting", not done, no output yet; the client waits on it by id, as after any run
// that timed out. Only once the row is stored: before, the id names nothing.
void answer_run_in_progress(self_ptr self, pending_run& run) {
  if (!run.reply.pending()) return;
  unguard(self, run.guard);
  run.reply.ok(result_window(self, io::text::output_window{"", 0, false}));
}

// The start is stuck: tmux said nothing for a while although commands are owed, the store
// keeps failing, or its row is not even stored when its run must answer. It is failed as
// soon as no store write is under way (that write's completion meets start_cut_short); its
// run, if still unanswered, hears within 5 s either way (the failed job, or a 503 saying
// it will be failed).
void abandon_start(self_ptr self) {
  auto* start = start_of(self);
  if (!start || start->stuck) return;
  start->stuck = true;
  if (start->run.reply.pending())
    start->run.guard = guard_answer(self, start->run.reply, std::chrono::seconds(5),
                                    "the job is not started: it will be recorded as failed "
                                    "(start_failed)");
  if (!store_busy(self)) {
    // No write in flight to meet start_cut_short at its completion: fail it now.
    fail_start(self, store_failing(self) ? "the job did not start: the state database kept failing"
                                         : "the job did not start: tmux stopped answering");
  }
}

// Asked by every step of a start when its answer arrives: the start goes on, or it ends
// here. The job is being removed (a forced delete), or its start is over (it failed
// meanwhile): what the step began is undone. The start was found stuck: it fails.
bool start_cut_short(self_ptr self) {
  auto* start = start_of(self);
  if (!start) {
    undo_start(self);
    return true;
  }
  if (!start->stuck) return false;
  fail_start(self, store_failing(self) ? "the job did not start: the state database kept failing"
                                       : "the job did not start: tmux stopped answering");
  return true;
}

void await_pipe_ready(self_ptr self) {
  auto& st = self->state;
  if (has(self, files::pipe_ready)) {
    open_gate(self);
    return;
  }
  step_to(self, job_phase::awaiting_pipe);
  self->delayed_send(self, st.cfg.pipe_ready_timeout, pipe_ready_timeout{});
}

// After pipe-pane + display-message: the pipe must be active, then the sanitizer's ready
// file completes the handshake (docs/jobs.md "The output pipe").
void check_pipe(self_ptr self, const tmux_output& p, size_t first) {
  if (p.output.size() < first + 2 || !io::tmux::pipe_active(p.output[first + 1])) {
    fail_start(self, "tmux output pipe is not active after pipe-pane");
    return;
  }
  await_pipe_ready(self);
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
  auto* start = start_of(self);
  if (!start) return;
  step_to(self, job_phase::creating_session);
  ++start->attempts;
  // The cgroup exists before the runner does (it opens it at once); a retried start finds
  // it there.
  if (!st.cgroup_path.empty()) {
    std::string err;
    if (!io::sandbox::cgroups::create(st.cgroup_path, st.limits, err)) {
      fail_start(self, "cgroup: " + err);
      return;
    }
    if (!cgroup_exists(self)) st.cgroup.at = cgroup_life::present{};
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
    io::tmux::pipe_settings pipe{st.cfg.sanitizer, nonce, std::nullopt};
    if (st.cfg.scope) pipe.budget = st.cfg.scope->budget;
    auto program = io::tmux::pipe_program(dir(self), st.output_abs, pipe);
    for (auto& l : io::tmux::attach_pipe_lines(pane(self), program)) lines.push_back(l);
    st.pipe_attached = true;  // from here on a sanitizer may be writing the log
  }
  tmux(
      self, lines,
      [self](tmux_result& rep) {
        auto& st = self->state;
        st.timeline.mark(job_mark::session_created);
        // The new-session's pane, also when a later line (the pipe) failed: what the start
        // began must be undone.
        const auto ran = rep ? *rep : output_before(rep.error());
        auto pid = ran.output.empty() ? std::nullopt : io::tmux::pane_pid_of(ran.output[0]);
        bool session_created = pid.has_value();
        if (session_created) {
          st.session_alive = true;
          st.pane_pid = *pid;
        }
        if (start_cut_short(self)) return;
        if (!rep && is_tmux_error(rep.error(), tmux_errc::server_exited) && retry_start(self)) return;
        if (!rep || !session_created) {
          fail_start(self, rep ? "tmux new-session printed no pane" : error_text(rep.error()));
          return;
        }
        if (!is_pty(self))
          open_gate(self);  // stdio: no pipe, no handshake
        else
          check_pipe(self, *rep, 1);
      },
      r.session_name);
}

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
  auto feeder = self->spawn<caf::detached>(stdin_feeder, pipe_fd, feeder_cancel, st.peers.metrics);
  st.stdin.at = stdin_pipe::open{feeder, cancel};
}

// The run is refused after its files were made: they go, its answer says why, and the
// actor leaves (the job never got a row).
void refuse_run(self_ptr self, job_errc code, const std::string& message) {
  auto& st = self->state;
  remove_job_files(self);
  if (auto* start = start_of(self)) {
    start->run.reply.fail(code, message);
    abandon(self);
    return;
  }
  // A forced delete took the job meanwhile: that removal ends the actor; the run is told.
  if (auto* removal = std::get_if<phases::removing>(&st.phase); removal && removal->run) {
    removal->run->reply.fail(code, message);
    removal->run.reset();
  }
}

}  // namespace

void begin_run(self_ptr self, pending_run run) {
  auto& st = self->state;
  st.limits = io::sandbox::cgroups::narrowed(st.cfg.job_limits, run.spec.limits);
  st.timeline.admitted(run.admitted_at);
  enter(self, phases::starting{job_phase::admitting, std::move(run)});
  auto& start = *start_of(self);
  const auto& spec = start.run.spec;
  // In a native scope's worker the insert is the admission: the script and the env JSON
  // are the input it charges (docs/native-scopes.md "The scope worker").
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
    refuse_run(self, disk ? job_errc::storage_unavailable : job_errc::internal_error, e.what());
    return;
  } catch (const std::exception& e) {
    refuse_run(self, job_errc::internal_error, e.what());
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
  store_insert_row(self, store_insert{st.row, start.run.key, input_charge}, [self](const store_result& r) {
    auto& st = self->state;
    st.timeline.mark(job_mark::row_inserted);
    if (r && r->changed) {
      log_lifecycle(self, "created");
      if (auto* start = start_of(self)) start->row_stored = true;
      if (start_cut_short(self)) return;
    } else {
      // A native scope's budget refusing it, the store failing, or an id taken meanwhile.
      if (!r) {
        const auto e = read_job_error(r.error());
        refuse_run(self, e.code, e.text);
      } else {
        refuse_run(self, job_errc::job_id_collision, "Failed to allocate a unique job id");
      }
      return;
    }
    apply(self, transition{job_status::starting, {job_status::created}, {}, {}, {}, false},
          [self](const store_result& r2) {
            self->state.timeline.mark(job_mark::starting_stored);
            if (start_cut_short(self)) return;
            if (!r2) {
              fail_start(self, error_text(r2.error()));
              return;
            }
            auto& st = self->state;
            auto watched = [self](const caf::error& failure) {
              self->state.watching = !failure;
              self->state.timeline.mark(job_mark::watch_set);
              if (start_cut_short(self)) return;
              if (failure) {
                fail_start(self, error_text(failure));
                return;
              }
              start_session(self);
            };
            self->request(st.peers.watcher, caf::infinite, watch_dir{st.dir, caf::actor_cast<dir_listener>(self)})
                .then([watched](watch_set&) { watched(caf::error{}); },
                      [watched](caf::error& e) { watched(e); });
          });
  });
}

void answer_run(self_ptr self, std::optional<pending_run>& run) {
  if (!run) return;
  unguard(self, run->guard);
  // Within the timeout it asked for, counted from its arrival: a run answers within its
  // timeout plus a little, however long its start took.
  if (run->reply.pending()) add_waiter(self, run->spec.wait, run->reply, run->arrived);
  run.reset();
}

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
  auto* start = start_of(self);
  // The start is over already (it failed: a late answer of tmux, say), or the job is being
  // removed: only what the start began is undone.
  if (!start) {
    undo_start(self);
    return;
  }
  record_start_failure(self, message, std::move(start->run));
}

void fail_interrupted_start(self_ptr self, const std::string& message) {
  record_start_failure(self, message, std::nullopt);
}

// The tmux server died while this start was under way (its gate never opened, so the
// script never ran): start again on the fresh server, once the dead pane's pipe
// finalizer can no longer write stale markers into the job dir.
bool retry_start(self_ptr self) {
  auto& st = self->state;
  auto* start = start_of(self);
  if (!start || start->attempts >= 3) return false;
  st.session_alive = false;
  st.pane_pid = 0;
  // On this thread, rare as it is (only after tmux died): it must be over before the stale
  // markers go and the new start begins (docs/architecture.md "Blocking").
  io::tmux::kill_processes_naming(dir(self).file(files::pipe_ready));
  for (const char* stale : {files::pipe_ready, files::pipe_drained, files::pipe_failed})
    dir(self).forget(stale);
  start_session(self);
  return true;
}

// A scoped job's wall deadline (docs/native-scopes.md "The scope worker"): min(job_wall_
// seconds after its start, the scope's deadline); armed when it starts running and again
// after a restart.
void arm_wall_deadline(self_ptr self) {
  auto& st = self->state;
  if (!st.cfg.scope) return;
  const auto& scope = *st.cfg.scope;
  if (scope.wall_limit.count() <= 0 && scope.wall_until_epoch <= 0) return;
  const auto now = std::chrono::system_clock::now();
  auto until = std::chrono::system_clock::time_point::max();
  if (scope.wall_limit.count() > 0) {
    const auto started = st.row.started_at ? io::text::parse_utc(*st.row.started_at) : std::nullopt;
    until = (started ? *started : now) + scope.wall_limit;
  }
  if (scope.wall_until_epoch > 0)
    until = std::min(until, std::chrono::system_clock::time_point(std::chrono::seconds(scope.wall_until_epoch)));
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
  step_to(self, job_phase::opening_gate);
  apply(self, transition{job_status::running, {job_status::starting}, {}, {}, {}, true},
        [self](const store_result&) { start_complete(self); });
}

// PTY: output.log is written by the sanitizer alone, which holds it open until it exits
// (the pipe program execs it), so the log's close means the pipe has ended. Without a
// marker the sanitizer died (killed, say): .pipe-failed is written for it, as the Go pipe
// shell would have, and settle() fails the job instead of leaving it running with nobody
// capturing its output. Before the gate a close can only come from a pipe that a retried
// start killed.
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

void on_pipe_ready_timeout(self_ptr self) {
  if (phase_of(self->state) == job_phase::awaiting_pipe) fail_start(self, "timed out waiting for pipe ready (10s)");
}

void on_start_deadline(self_ptr self) {
  auto* start = start_of(self);
  if (!start || start->stuck) return;  // started, or failed
  if (store_failing(self)) {
    abandon_start(self);
    return;
  }
  // Slow is not stuck: tmux answering other starts one after another is busy, and this
  // start goes on (looked at again each second); tmux silent for 5 s while owed answers is
  // stopped or hung, and the start fails.
  self->request(self->state.peers.tmux, caf::infinite, tmux_silence_query{})
      .then([self](tmux_silence& quiet) {
        auto* start = start_of(self);
        if (!start || start->stuck) return;
        if (quiet.ms >= self->state.cfg.pipe_ready_timeout.count() / 2) {
          abandon_start(self);
          return;
        }
        self->delayed_send(self, std::chrono::seconds(1), start_deadline{});
      });
}

void on_run_deadline(self_ptr self) {
  auto& st = self->state;
  if (auto* start = start_of(self)) {
    if (!start->run.reply.pending()) return;
    if (start->row_stored) {
      answer_run_in_progress(self, start->run);
      return;
    }
    // Not even its row is stored by now: the store is stuck, and the start is given up (its
    // run hears within 5 s: the failed job, or a 503 saying it will be failed).
    abandon_start(self);
    return;
  }
  // A start that failed and whose failed row is still being written: the job as it stands.
  if (auto* failing = std::get_if<phases::failing_start>(&st.phase); failing && failing->run)
    answer_run_in_progress(self, *failing->run);
}

}  // namespace shellctl::actors::job
