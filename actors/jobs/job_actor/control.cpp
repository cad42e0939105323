// The job's requests that read or steer a job without ending it: long-polls, the tail,
// streams, status, input (a terminal's paste or a piped stdin), signals, resize and the
// activity view with why a finished job ended (docs/api.md "Jobs", "Job control",
// "stdin for stdio tools", docs/jobs.md "Input").
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "actors/jobs/job_actor/sections.hpp"
#include "actors/jobs/job_stream.hpp"
#include "io/fs/files.hpp"
#include "io/proc/job_processes.hpp"
#include "io/proc/terminal_wait.hpp"
#include "io/tmux/control_client.hpp"
#include "io/tmux/job_commands.hpp"

namespace shellctl::actors::job {

namespace files = io::fs::job_files;

// ---------------------------------------------------------------- piped stdin

// The job ended (or goes): a write it will never read is cancelled and the pipe closed.
void close_stdin_pipe(self_ptr self) {
  auto& st = self->state;
  auto cancel_write = [](int& fd) {
    if (fd < 0) return;
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
    ::close(fd);
    fd = -1;
  };
  if (auto* open = std::get_if<stdin_pipe::open>(&st.stdin.at)) {
    cancel_write(open->cancel);
    self->send(open->feeder, shutdown_jobs{});
    st.stdin.at = stdin_pipe::closed{};
  } else if (auto* draining = std::get_if<stdin_pipe::draining>(&st.stdin.at)) {
    cancel_write(draining->cancel);
    st.stdin.at = stdin_pipe::closed{};
  }
}

namespace {

// A piped stdin's text (and end): written by the job's stdin_feeder as the job reads, then
// answered as a wait. A write the job does not read within the guard is answered 503 and
// goes on; the job's end cancels it.
void feed_stdin(self_ptr self, const input_request& in, const answer<job_result>& reply) {
  auto& st = self->state;
  auto& open = std::get<stdin_pipe::open>(st.stdin.at);
  const auto guard = guard_answer(self, reply, std::chrono::seconds(30) + seconds_ms(in.p.timeout_s),
                                  "the text is written as the job reads its stdin");
  auto feeder = open.feeder;
  // From an "eof" on the pipe takes no more input, whatever this write's fate; the write
  // itself can still be cancelled by the job's end.
  if (in.eof) st.stdin.at = stdin_pipe::draining{open.cancel};
  self->request(feeder, caf::infinite, stdin_write{in.text, in.eof})
      .then(
          [self, p = in.p, reply, guard](stdin_written&) {
            unguard(self, guard);
            add_waiter(self, p, reply);
          },
          [self, p = in.p, reply, guard](caf::error& e) {
            unguard(self, guard);
            // Done meanwhile: the waiter answers at once, with the job's end.
            if (done(self)) {
              add_waiter(self, p, reply);
              return;
            }
            if (is_job_error(e, job_errc::input_unsupported)) {
              // The job closed its stdin, or it is ending: the pipe is of no more use.
              close_stdin_pipe(self);
              reply.fail(job_errc::input_unsupported, "the job's stdin is closed: " + error_text(e));
              return;
            }
            reply.fail(job_errc::internal_error, "stdin: " + error_text(e));
          });
}

// The terminal: the text pasted, then its EOF character when asked (Ctrl-D, which a
// program reading the terminal in canonical mode takes as the end of its input).
void paste_into_pane(self_ptr self, const input_request& in, const answer<job_result>& reply) {
  auto& st = self->state;
  std::vector<std::string> lines;
  std::string path;
  if (!in.text.empty()) {
    std::random_device rd;
    char rnd[17];
    std::snprintf(rnd, sizeof rnd, "%08x%08x", rd(), rd());
    path = io::fs::join(st.cfg.runtime_dir, "shellctl-input-" + st.row.job_id + "-" + rnd);
    io::fs::write_file(path, in.text, 0600);  // a failure is answered by serve_or_hold's catch
    lines = io::tmux::paste_lines("shellctl-in-" + st.row.job_id, path, pane(self));
  }
  if (in.eof) lines.push_back(io::tmux::eof_line(pane(self)));
  const auto guard = guard_answer(self, reply, std::chrono::seconds(10));
  tmux(self, std::move(lines),
       [self, path, p = in.p, reply, guard, text_bytes = in.text.size()](tmux_result& r) {
         unguard(self, guard);
         if (!path.empty()) ::unlink(path.c_str());
         auto& st = self->state;
         // delete-buffer after a failed paste fails too; only the first error counts.
         if (!r) {
           if (is_tmux_error(r.error(), tmux_errc::target_missing)) {
             if (done(self))
               reply.fail(job_errc::job_not_running, "Job " + st.row.job_id + " is already terminal");
             else
               reply.fail(job_errc::tmux_target_missing, error_text(r.error()));
           } else {
             reply.fail(job_errc::tmux_input_failed, error_text(r.error()));
           }
           return;
         }
         if (text_bytes > 0) self->send(st.peers.metrics, job_input_event{text_bytes});
         add_waiter(self, p, reply);
       });
}

void deliver_input(self_ptr self, const input_request& in, const answer<job_result>& reply) {
  auto& st = self->state;
  if (done(self)) {
    reply.fail(job_errc::job_not_running, "Job " + st.row.job_id + " is already terminal");
    return;
  }
  if (!is_pty(self) && !std::holds_alternative<stdin_pipe::open>(st.stdin.at)) {
    reply.fail(job_errc::input_unsupported,
               std::holds_alternative<stdin_pipe::none>(st.stdin.at)
                   ? "stdio jobs do not support input"  // the original's words, exactly
                   : "the job's stdin is closed (an input with \"eof\": true ended it)");
    return;
  }
  if (in.text.empty() && !in.eof) {  // writes nothing; tmux would refuse an empty buffer
    add_waiter(self, in.p, reply);
    return;
  }
  // A native scope's worker charges the text to the scope's input budget first
  // (docs/native-scopes.md "The scope worker").
  if (st.cfg.scope && !in.charged) {
    self->request(st.peers.store, caf::infinite, store_charge_input{in.text.size()})
        .then(
            [self, in, reply](store_outcome&) {
              auto charged = in;
              charged.charged = true;
              deliver_input(self, charged, reply);
            },
            [reply](caf::error& e) {
              const auto refused = read_job_error(e);  // input_budget_exhausted, or the store's
              reply.fail(refused.code, refused.text);
            });
    return;
  }
  if (!is_pty(self))
    feed_stdin(self, in, reply);
  else
    paste_into_pane(self, in, reply);
}

// Only a running job has processes of its script to reach: before the gate opens the
// script has not started; a terminal job (or one being terminated) has none left.
bool refused_unless_running(self_ptr self, const answer<job_status_view>& reply) {
  auto& st = self->state;
  if (st.row.status == job_status::running && !st.terminating && st.pane_pid > 0) return false;
  reply.fail(job_errc::job_not_running,
             "Job " + st.row.job_id + " is not running (" + std::string(io::store::status_text(st.row.status)) + ")");
  return true;
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

}  // namespace

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
  tmux(self, {io::tmux::resize_line(pane(self), req.cols, req.rows)}, [self, reply, guard](tmux_result& r) {
    unguard(self, guard);
    if (!r) {
      if (done(self) || is_tmux_error(r.error(), tmux_errc::target_missing))
        refused_unless_running(self, reply);
      else
        reply.fail(job_errc::internal_error, "tmux resize-window: " + error_text(r.error()));
      return;
    }
    reply_status(self, reply);
  });
}

// GET .../activity (docs/api.md "Job control"): the job's processes and its terminal, read
// from /proc when asked (a kernel state: no event tells it), the pane's size from tmux.
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
  tmux(self, {io::tmux::pane_size_line(pane(self))}, [self, reply, guard, a = std::move(a)](tmux_result& r) mutable {
    unguard(self, guard);
    if (auto size = r && !r->output.empty() ? io::tmux::read_pane_size(r->output[0]) : std::nullopt)
      a.terminal = job_activity::terminal_size{size->first, size->second};
    reply.ok(std::move(a));
  });
}

}  // namespace shellctl::actors::job
