#pragma once
// What the job actor's sections share (actors/jobs/job_actor/job_actor.hpp lists them).
// Internal to job_actor/: nothing outside this folder includes it. Every function takes the
// actor's pointer and runs on its thread, in its mailbox order.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "actors/jobs/job_actor/job_actor.hpp"
#include "io/store/job_status.hpp"
#include "io/text/output_window.hpp"

namespace shellctl::actors::job {

using self_ptr = job_actor_type::stateful_pointer<job_state>;
using clock_type = job_state::clock;
using io::store::job_status;
using io::store::transition;
// A store write's answer as its continuation gets it: the outcome, or the error (domain
// codes: actors/protocol/messages.hpp, store_outcome).
using store_result = caf::expected<store_outcome>;

inline const std::vector<job_status>& live_statuses() {
  static const std::vector<job_status> s = {job_status::created, job_status::starting, job_status::running};
  return s;
}

// ---- what the job is (inline: read everywhere)
inline const io::fs::job_dir& dir(self_ptr self) { return self->state.files; }
inline bool has(self_ptr self, const char* name) { return self->state.files.has(name); }
inline bool done(self_ptr self) { return io::store::is_terminal(self->state.row.status); }
inline bool is_pty(self_ptr self) { return self->state.row.mode == io::store::job_mode::pty; }
inline std::string pane(self_ptr self) { return self->state.row.pane_target; }

// ---- the phase (job_actor.cpp)
job_phase phase_of(const phase_state& phase);
job_phase phase_of(const job_state& st);
// The start under way, or nullptr when the job is not in its start.
phases::starting* start_of(self_ptr self);
bool in_removal(self_ptr self);  // removing or removed
// The one way the phase changes. A removal under way is not left by a start's late steps:
// those moves are refused (false), and the step only cleans up. Any other move outside the
// table (job_phase.hpp) is a bug: logged, and made anyway, so that the clients waiting are
// still answered.
bool enter(self_ptr self, phase_state next);

// ---- the operational log (job_actor.cpp)
void warn(self_ptr self, std::string text);
void log_lifecycle(self_ptr self, std::string_view event);

// ---- settle.cpp: the store, tmux, the settle rules, the cgroup
const job_row& known_row(self_ptr self);  // the stored row, or what a retried write will make of it
bool known_done(self_ptr self);
bool store_busy(self_ptr self);     // a write is in flight or being retried
bool store_failing(self_ptr self);  // the store refuses writes for a passing reason right now
void apply(self_ptr self, transition t, std::function<void(const store_result&)> then = {});
void record_exit(self_ptr self, std::int64_t code, const std::string& ended_at,
                 std::function<void(const store_result&)> then = {});
void store_insert_row(self_ptr self, store_insert msg, std::function<void(const store_result&)> then);
void retry_store_write(self_ptr self);
void tmux(self_ptr self, std::vector<std::string> lines, std::function<void(tmux_result&)> then,
          std::string creates_session = {});
void kill_session(self_ptr self);
void settle(self_ptr self);
void recovery_settled(self_ptr self);
// Ends the job's whole tree, then runs `then` (at once without a cgroup).
void end_job_cgroup(self_ptr self, std::function<void()> then = {});
bool cgroup_exists(self_ptr self);
std::vector<pid_t> leftover_pids(self_ptr self);
bool keeps_leftovers(self_ptr self);
std::vector<pid_t> job_pids(self_ptr self);
void note_limit_events(self_ptr self);

// ---- answers.cpp: what answers show, long-polls, streams, guards
std::uint64_t guard_answer(self_ptr self, const held_answer& reply, std::chrono::milliseconds after,
                           std::string outcome = "the request is carried out as soon as it can be");
void unguard(self_ptr self, std::uint64_t id);
void answer_guard_expired(self_ptr self, std::uint64_t id);
std::chrono::milliseconds seconds_ms(double s);
bool output_final(self_ptr self);  // the latched state: answers may say done
// The output's one transition: final once the facts say it can grow no more (the waiting
// continuations run, the watch goes); until then the bound on the wait is armed.
void refresh_output(self_ptr self);
void when_output_final(self_ptr self, std::function<void()> then);
void release_watch_if_settled(self_ptr self);
bool shown_done(self_ptr self);
job_row shown_row(self_ptr self);
void reply_status(self_ptr self, const answer<job_status_view>& reply);
job_result result_window(self_ptr self, io::text::output_window win);
std::string offset_text(std::uint64_t offset, std::uint64_t size);
void answer_window(self_ptr self, const job_state::waiter& w, bool job_done,
                   const std::string& pending = {});
output_progress progress_now(self_ptr self);
void notify_streams(self_ptr self, bool final_word = false);
void evaluate_waiters(self_ptr self);
void add_waiter(self_ptr self, const wait_params& p, answer<job_result> reply,
                std::optional<clock_type::time_point> since = std::nullopt);
// After any event: the output's state first, then every waiter and stream.
void after_news(self_ptr self);

// ---- start.cpp
void begin_run(self_ptr self, pending_run run);
void answer_run(self_ptr self, std::optional<pending_run>& run);
void fail_start(self_ptr self, const std::string& message);
void fail_interrupted_start(self_ptr self, const std::string& message);
void undo_start(self_ptr self);
bool retry_start(self_ptr self);
void arm_wall_deadline(self_ptr self);
void open_gate(self_ptr self);
void output_closed(self_ptr self);
void on_pipe_ready_timeout(self_ptr self);
void on_start_deadline(self_ptr self);
void on_run_deadline(self_ptr self);

// ---- control.cpp
void close_stdin_pipe(self_ptr self);
void serve_request(self_ptr self, const wait_request& req, const answer<job_result>& reply);
void serve_request(self_ptr self, const tail_request& req, const answer<job_result>& reply);
void serve_request(self_ptr self, const stream_request& req, const answer<stream_opened>& reply);
void serve_request(self_ptr self, const status_request& req, const answer<job_status_view>& reply);
void serve_request(self_ptr self, const input_request& req, const answer<job_result>& reply);
void serve_request(self_ptr self, const signal_request& req, const answer<job_status_view>& reply);
void serve_request(self_ptr self, const resize_request& req, const answer<job_status_view>& reply);
void serve_request(self_ptr self, const activity_request& req, const answer<job_activity>& reply);

// ---- removal.cpp
void serve_request(self_ptr self, const terminate_request& req, const answer<job_status_view>& reply);
void serve_request(self_ptr self, const delete_request& req, const answer<job_deleted>& reply);
void begin_terminate(self_ptr self, double grace_s, std::function<void()> then);
void finish_terminate(self_ptr self);
void remove_job(self_ptr self, std::optional<answer<job_deleted>> reply, std::uint64_t guard = 0);
void remove_job_files(self_ptr self);
void retry_row_removal(self_ptr self);
void abandon(self_ptr self);
void collect_if_done_before(self_ptr self, const std::string& cutoff);
void shut_down(self_ptr self);

// ---- recovery.cpp
void recover(self_ptr self, bool session_alive);

}  // namespace shellctl::actors::job
